//! The broker inside the proxy, end to end on loopback: a real HTTPS
//! upstream with its own test CA (HTTP/2 or HTTP/1.1 only), a real client
//! that trusts only the broker's CA.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::{Body, Frame, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use uuid::Uuid;

use super::broker::{Attachment, BoxFuture, Broker, BrokerRef, Credentials, ca, upstream_tls};
use super::tests::{TIMEOUT, client_builder, limited, start};
use super::*;

const BOUND: &str = "api.upstream.test";
const EMPTY: &str = "empty.upstream.test";
const OPEN: &str = "open.upstream.test";

/// Binds `BOUND` (value `s3cret`) and `EMPTY` (no value); nothing else.
struct Static;

impl Credentials for Static {
    fn binds<'a>(&'a self, _: Uuid, host: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move { host == BOUND || host == EMPTY })
    }

    fn attach<'a>(&'a self, _: Uuid, host: &'a str) -> BoxFuture<'a, Option<Attachment>> {
        Box::pin(async move {
            let value = match host {
                BOUND => Some(hyper::header::HeaderValue::from_static("Bearer s3cret")),
                EMPTY => None,
                _ => return None,
            };
            Some(Attachment {
                service: "upstream".into(),
                credential_keys: vec!["UPSTREAM_TOKEN".into()],
                header: hyper::header::AUTHORIZATION,
                value,
            })
        })
    }
}

/// A test CA and an upstream certificate for the three test names.
struct TestPki {
    ca_pem: String,
    chain: Vec<CertificateDer<'static>>,
    key_der: Vec<u8>,
}

fn test_pki() -> TestPki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec![BOUND.into(), EMPTY.into(), OPEN.into()])
        .unwrap()
        .signed_by(&key, &ca_cert, &ca_key)
        .unwrap();
    TestPki { ca_pem: ca_cert.pem(), chain: vec![leaf.der().clone()], key_der: key.serialize_der() }
}

/// A body fed from a channel: each message is one frame, sent as it comes.
struct Channel(mpsc::Receiver<Bytes>);

impl Body for Channel {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.0.poll_recv(cx).map(|m| m.map(|b| Ok(Frame::data(b))))
    }
}

type Either = http_body_util::Either<Full<Bytes>, Channel>;

/// `/echo` answers what it saw (version, host, authorization); `/sse` sends
/// three events 300 ms apart.
async fn upstream_answer(req: Request<Incoming>) -> Result<Response<Either>, std::convert::Infallible> {
    if req.uri().path() == "/sse" {
        let (tx, rx) = mpsc::channel(4);
        tokio::spawn(async move {
            for i in 0..3 {
                if tx.send(Bytes::from(format!("data: event {i}\n\n"))).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        });
        let response = Response::builder().header("content-type", "text/event-stream").body(Either::Right(Channel(rx)));
        return Ok(response.unwrap());
    }
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("-").to_owned();
    let host = req.uri().authority().map(|a| a.to_string()).unwrap_or_else(|| header("host"));
    let seen = format!("{:?} host={host} authorization={}", req.version(), header("authorization"));
    Ok(Response::new(Either::Left(Full::new(Bytes::from(seen)))))
}

/// Serves TLS with `alpn` (HTTP/2 and 1.1, or 1.1 only); returns the port.
async fn https_upstream(pki: &TestPki, alpn: &[&[u8]]) -> u16 {
    let key = PrivateKeyDer::try_from(pki.key_der.clone()).unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(pki.chain.clone(), key)
        .unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                let served = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), service_fn(upstream_answer))
                    .await;
                drop(served);
            });
        }
    });
    port
}

struct Brokered {
    proxy: super::tests::Proxy,
    broker_ca: String,
}

/// A proxy brokering with a fresh CA; `trust_upstream` puts the test CA in
/// the broker's upstream roots.
async fn brokered(pki: &TestPki, trust_upstream: bool) -> Brokered {
    let new = ca::generate("acs test broker").unwrap();
    let ca = ca::Ca::load("acs test broker", &new.cert_pem, &new.key_pem).unwrap();
    let upstream = upstream_tls(trust_upstream.then_some(pki.ca_pem.as_str())).unwrap();
    let broker = Broker::local(Arc::new(ca), Arc::new(upstream), Arc::new(Static));
    let loopback = "127.0.0.1".parse().unwrap();
    let policy = Policy {
        overrides: vec![(BOUND.into(), loopback), (EMPTY.into(), loopback), (OPEN.into(), loopback)],
        broker: Some(BrokerRef(Arc::new(broker))),
        ..limited(&[OPEN])
    };
    Brokered { proxy: start(policy, TIMEOUT).await, broker_ca: new.cert_pem }
}

/// A client through `proxy` that trusts only `ca_pem`.
fn client_trusting(proxy: std::net::SocketAddr, ca_pem: &str) -> reqwest::Client {
    let cert = reqwest::Certificate::from_pem(ca_pem.as_bytes()).unwrap();
    client_builder()
        .proxy(reqwest::Proxy::all(format!("http://{proxy}")).unwrap())
        .tls_certs_only([cert])
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_bound_host_gets_its_credential_over_http2_and_http1() {
    let pki = test_pki();
    for (alpn, version) in
        [(&[b"h2".as_slice(), b"http/1.1"][..], "HTTP/2.0"), (&[b"http/1.1".as_slice()][..], "HTTP/1.1")]
    {
        let port = https_upstream(&pki, alpn).await;
        let b = brokered(&pki, true).await;
        let client = client_trusting(b.proxy.addr, &b.broker_ca);
        let url = format!("https://{BOUND}:{port}/echo?q=secret-path");
        for _ in 0..2 {
            // What the machine writes in the header is replaced, never passed on.
            let seen = client.get(&url).bearer_auth("machine-made").send().await.unwrap().text().await.unwrap();
            assert_eq!(seen, format!("{version} host={BOUND}:{port} authorization=Bearer s3cret"));
        }
        let records = b.proxy.sink.wait(2).await;
        assert_eq!(records.len(), 2, "one record per request, none for the CONNECT: {records:?}");
        for r in &records {
            assert_eq!((r.method.as_str(), r.status, r.error.as_deref()), ("GET", Some(200), None));
            assert_eq!(r.host, format!("{BOUND}:{port}"));
            assert_eq!(r.service.as_deref(), Some("upstream"));
            assert_eq!(r.credential_keys, ["UPSTREAM_TOKEN"]);
        }
    }
}

#[tokio::test]
async fn server_sent_events_stream_through_unbuffered() {
    let pki = test_pki();
    let port = https_upstream(&pki, &[b"h2", b"http/1.1"]).await;
    let b = brokered(&pki, true).await;
    let started = Instant::now();
    let mut response =
        client_trusting(b.proxy.addr, &b.broker_ca).get(format!("https://{BOUND}:{port}/sse")).send().await.unwrap();
    let first = response.chunk().await.unwrap().unwrap();
    let first_at = started.elapsed();
    assert_eq!(first, "data: event 0\n\n");
    let mut rest = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        rest.extend_from_slice(&chunk);
    }
    assert_eq!(String::from_utf8(rest).unwrap(), "data: event 1\n\ndata: event 2\n\n");
    assert!(
        started.elapsed() >= first_at + Duration::from_millis(500),
        "the first event came {first_at:?} after the start, the last {:?}: buffered",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_missing_value_is_refused_with_credential_missing() {
    let pki = test_pki();
    let port = https_upstream(&pki, &[b"h2", b"http/1.1"]).await;
    let b = brokered(&pki, true).await;
    let response =
        client_trusting(b.proxy.addr, &b.broker_ca).get(format!("https://{EMPTY}:{port}/echo")).send().await.unwrap();
    assert_eq!(response.status(), 502);
    assert!(response.text().await.unwrap().contains("has no value"));
    let records = b.proxy.sink.wait(1).await;
    assert_eq!(records.len(), 1);
    assert_eq!((records[0].status, records[0].error.as_deref()), (Some(502), Some("credential_missing")));
    assert_eq!(records[0].service.as_deref(), Some("upstream"));
}

#[tokio::test]
async fn an_unbound_host_is_an_opaque_tunnel() {
    let pki = test_pki();
    let port = https_upstream(&pki, &[b"h2", b"http/1.1"]).await;
    let b = brokered(&pki, true).await;
    // The machine sees the upstream's own certificate: trusting only the test CA works.
    let seen = client_trusting(b.proxy.addr, &pki.ca_pem)
        .get(format!("https://{OPEN}:{port}/echo"))
        .bearer_auth("the machine's own")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(seen.ends_with("authorization=Bearer the machine's own"), "{seen}");
    let broker_only =
        client_trusting(b.proxy.addr, &b.broker_ca).get(format!("https://{OPEN}:{port}/echo")).send().await;
    assert!(broker_only.is_err(), "not intercepted: the broker's CA does not vouch for it");
    b.proxy.handle.stop();
    let records = b.proxy.sink.wait(2).await;
    assert!(records.iter().all(|r| r.method == "CONNECT" && r.service.is_none() && r.credential_keys.is_empty()));
}

#[tokio::test]
async fn an_upstream_the_broker_cannot_verify_is_refused() {
    let pki = test_pki();
    let port = https_upstream(&pki, &[b"h2", b"http/1.1"]).await;
    let b = brokered(&pki, false).await;
    let response =
        client_trusting(b.proxy.addr, &b.broker_ca).get(format!("https://{BOUND}:{port}/echo")).send().await.unwrap();
    assert_eq!(response.status(), 502);
    let records = b.proxy.sink.wait(1).await;
    assert_eq!(records[0].error.as_deref(), Some("upstream_tls"));
}
