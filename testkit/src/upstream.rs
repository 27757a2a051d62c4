//! An HTTPS upstream for broker tests: its own test CA (written to a PEM
//! file for `broker.upstream_ca_file`), a certificate for the names given,
//! HTTP/2 and HTTP/1.1, and a record of every request it receives. It never
//! echoes a request's headers back, so a credential it sees cannot reach a
//! machine through it.
//!
//! Paths: `/echo` answers `hello from upstream`; `/sse` sends three events
//! 300 ms apart; `/hang` never answers; anything else is served from the
//! static directory (`git clone` over dumb HTTP reads a bare repository
//! there after `git update-server-info`).

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::{Body, Frame, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use rustls::pki_types::PrivateKeyDer;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// One request as the upstream saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// `HTTP/1.1` or `HTTP/2.0`.
    pub version: String,
    pub authorization: Option<String>,
}

pub struct HttpsUpstream {
    pub port: u16,
    pub ca_pem: String,
    /// The CA as a PEM file.
    pub ca_file: PathBuf,
    /// Served for paths other than the fixed ones.
    pub static_dir: PathBuf,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// A test CA written to `<dir>/upstream-ca.pem` and a server configuration
/// for `names` it signed, offering `alpn`: the CA (PEM), its file and the configuration.
fn test_tls(names: &[&str], dir: &Path, alpn: &[&[u8]]) -> (String, PathBuf, rustls::ServerConfig) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "acs test upstream CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let leaf = CertificateParams::new(names).unwrap().signed_by(&key, &ca, &ca_key).unwrap();
    let private = PrivateKeyDer::try_from(key.serialize_der()).unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], private)
        .unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    std::fs::create_dir_all(dir).unwrap();
    let ca_file = dir.join("upstream-ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    (ca.pem(), ca_file, config)
}

/// HTTPS in front of a plain HTTP/1.1 server (a test's fake API): TLS with
/// its own test CA for `names`, each connection's bytes relayed to `backend`.
pub struct TlsFront {
    pub port: u16,
    /// The CA as a PEM file.
    pub ca_file: PathBuf,
}

impl TlsFront {
    pub async fn start(names: &[&str], dir: &Path, backend: std::net::SocketAddr) -> TlsFront {
        let (_, ca_file, config) = test_tls(names, dir, &[b"http/1.1"]);
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let (Ok(mut tls), Ok(mut plain)) =
                        (acceptor.accept(tcp).await, tokio::net::TcpStream::connect(backend).await)
                    else {
                        return;
                    };
                    // Ends with either side; nothing to report in a test fixture.
                    tokio::io::copy_bidirectional(&mut tls, &mut plain).await.ok();
                });
            }
        });
        TlsFront { port, ca_file }
    }
}

impl HttpsUpstream {
    /// Serves on 127.0.0.1 with a certificate for `names`; files live under `dir`.
    pub async fn start(names: &[&str], dir: &Path) -> HttpsUpstream {
        let (ca_pem, ca_file, config) = test_tls(names, dir, &[b"h2", b"http/1.1"]);
        let static_dir = dir.join("static");
        std::fs::create_dir_all(&static_dir).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let (served_seen, served_dir) = (seen.clone(), static_dir.clone());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, seen, dir) = (acceptor.clone(), served_seen.clone(), served_dir.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let service = service_fn(move |req| answer(req, seen.clone(), dir.clone()));
                    let served = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                    drop(served);
                });
            }
        });
        HttpsUpstream { port, ca_pem, ca_file, static_dir, seen }
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Waits until `pred` holds for the requests seen (at most `seconds`).
    pub async fn wait_for(&self, seconds: u64, pred: impl Fn(&[Seen]) -> bool) -> Vec<Seen> {
        for _ in 0..seconds * 20 {
            let seen = self.seen();
            if pred(&seen) {
                return seen;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the upstream never saw what was expected: {:?}", self.seen());
    }

    /// A bare repository `<name>.git` with one commit holding `README` =
    /// `readme`, servable over dumb HTTP.
    pub fn git_repository(&self, name: &str, readme: &str) {
        let work = self.static_dir.join(format!(".work-{name}"));
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(work.join("README"), readme).unwrap();
        let git = |dir: &Path, args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"])
                .args(args)
                .current_dir(dir)
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&work, &["init", "-q"]);
        git(&work, &["add", "README"]);
        git(&work, &["commit", "-qm", "first"]);
        let bare = self.static_dir.join(format!("{name}.git"));
        git(&self.static_dir, &["clone", "-q", "--bare", work.to_str().unwrap(), bare.to_str().unwrap()]);
        git(&bare, &["update-server-info"]);
    }
}

/// A body fed from a channel, one frame per message as it comes.
struct Channel(mpsc::Receiver<Bytes>);

impl Body for Channel {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|m| m.map(|b| Ok(Frame::data(b))))
    }
}

type Answer = http_body_util::Either<Full<Bytes>, Channel>;

fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<Answer> {
    let mut response = Response::new(Answer::Left(Full::new(body.into())));
    *response.status_mut() = status;
    response
}

async fn answer(
    req: Request<Incoming>,
    seen: Arc<Mutex<Vec<Seen>>>,
    dir: PathBuf,
) -> Result<Response<Answer>, Infallible> {
    let path = req.uri().path().to_owned();
    seen.lock().unwrap().push(Seen {
        method: req.method().to_string(),
        path: path.clone(),
        version: format!("{:?}", req.version()),
        authorization: req.headers().get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned),
    });
    Ok(match path.as_str() {
        "/echo" => text(StatusCode::OK, "hello from upstream"),
        "/sse" => {
            let (tx, rx) = mpsc::channel(4);
            tokio::spawn(async move {
                for i in 0..3 {
                    if tx.send(Bytes::from(format!("data: event {i}\n\n"))).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
            });
            let mut response = Response::new(Answer::Right(Channel(rx)));
            response.headers_mut().insert("content-type", "text/event-stream".parse().unwrap());
            response
        }
        "/hang" => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            text(StatusCode::OK, "late")
        }
        other => {
            let relative = other.trim_start_matches('/');
            if relative.split('/').any(|part| part == "..") {
                return Ok(text(StatusCode::BAD_REQUEST, "no"));
            }
            match tokio::fs::read(dir.join(relative)).await {
                Ok(bytes) => text(StatusCode::OK, bytes),
                Err(_) => text(StatusCode::NOT_FOUND, "not found"),
            }
        }
    })
}
