//! One HTTP attempt of a delivery: address checks, signature headers, the
//! 10 s timeout, no redirects, and the first 4 KB of the answer.

use std::error::Error as _;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::CONTENT_TYPE;

use super::signature::sign;
use crate::config::WebhooksConfig;
use acs_platform::blocklist::AddressRules;

/// What one attempt sends.
pub struct Outgoing<'a> {
    pub url: &'a str,
    pub secret: &'a str,
    pub event_id: &'a str,
    pub event_type: &'a str,
    /// 1-based attempt number (`Service-Delivery-Attempt`).
    pub attempt: i64,
    pub body: &'a [u8],
}

/// What came of one attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The HTTP status, when an answer came back.
    pub status: Option<u16>,
    /// The first 4096 bytes of the answer's body (lossy UTF-8, cut at a character boundary).
    pub body: Option<String>,
    /// `address_refused`, `dns_failed`, `connect_failed`, `timeout` or `request_failed`, with a sentence.
    pub error: Option<(&'static str, String)>,
    pub latency_ms: i64,
}

impl Outcome {
    pub fn accepted(&self) -> bool {
        matches!(self.status, Some(200..=299))
    }
}

/// Why an address is refused (`blocklist`).
const BLOCKED: &str = "a blocked address (not publicly routable, or this host's own)";

/// How much of an answer's body is kept.
const MAX_BODY: usize = 4096;

/// Looks a host name up; a function so tests can play DNS.
type Lookup = Arc<dyn Fn(String) -> Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send>> + Send + Sync>;

/// The shared client of every attempt of this server.
pub struct Sender {
    client: reqwest::Client,
    rules: Arc<AddressRules>,
    timeout: Duration,
}

impl Sender {
    pub fn new(cfg: &WebhooksConfig) -> Result<Sender, reqwest::Error> {
        let lookup: Lookup = Arc::new(|host| {
            Box::pin(async move { Ok(tokio::net::lookup_host((host, 0)).await?.map(|addr| addr.ip()).collect()) })
        });
        Sender::with_lookup(cfg, lookup)
    }

    fn with_lookup(cfg: &WebhooksConfig, lookup: Lookup) -> Result<Sender, reqwest::Error> {
        let rules = Arc::new(AddressRules::exempting(cfg.allowed_private_cidrs.clone()));
        let timeout = Duration::from_secs_f64(cfg.timeout_seconds);
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .user_agent(concat!("acs-webhooks/", env!("CARGO_PKG_VERSION")))
            // A proxy would look the host up itself, out of reach of the address check.
            .no_proxy()
            .dns_resolver(CheckedResolver { rules: rules.clone(), lookup })
            .build()?;
        Ok(Sender { client, rules, timeout })
    }

    pub async fn send(&self, out: &Outgoing<'_>) -> Outcome {
        let started = Instant::now();
        let (status, body, error) = match self.attempt(out).await {
            Ok((status, body)) => (Some(status), Some(body), None),
            Err(error) => (None, None, Some(error)),
        };
        let latency_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        Outcome { status, body, error, latency_ms }
    }

    async fn attempt(&self, out: &Outgoing<'_>) -> Result<(u16, String), (&'static str, String)> {
        let url = reqwest::Url::parse(out.url)
            .map_err(|e| ("request_failed", format!("the URL {:?} does not parse: {e}", out.url)))?;
        // reqwest connects to an IP literal without asking the resolver, so it is checked here.
        let literal = url.host_str().and_then(|host| host.trim_start_matches('[').trim_end_matches(']').parse().ok());
        if let Some(ip) = literal
            && !self.rules.allows(ip)
        {
            return Err(("address_refused", format!("{ip} is {BLOCKED}")));
        }
        let t = time::OffsetDateTime::now_utc().unix_timestamp();
        let mut resp = self
            .client
            .post(url)
            .header(CONTENT_TYPE, "application/json")
            .header("Service-Signature", sign(out.secret, t, out.body))
            .header("Service-Event-Id", out.event_id)
            .header("Service-Event-Type", out.event_type)
            .header("Service-Delivery-Attempt", out.attempt)
            .body(out.body.to_vec())
            .send()
            .await
            .map_err(|e| self.failure(&e))?;
        let status = resp.status().as_u16();
        let mut bytes = Vec::new();
        // A body that breaks off (or runs out of time) still leaves an answer: keep what arrived.
        while bytes.len() < MAX_BODY
            && let Ok(Some(chunk)) = resp.chunk().await
        {
            bytes.extend_from_slice(&chunk);
        }
        Ok((status, body_prefix(bytes)))
    }

    fn failure(&self, e: &reqwest::Error) -> (&'static str, String) {
        let sources = || std::iter::successors(e.source(), |&err| err.source());
        if let Some(refusal) = sources().find_map(|err| err.downcast_ref::<ResolveError>()) {
            let code = if matches!(refusal, ResolveError::Refused { .. }) { "address_refused" } else { "dns_failed" };
            return (code, refusal.to_string());
        }
        let cause = sources().last().map_or_else(|| e.to_string(), ToString::to_string);
        if e.is_timeout() {
            ("timeout", format!("no answer within {} s", self.timeout.as_secs_f64()))
        } else if e.is_connect() {
            ("connect_failed", format!("could not connect: {cause}"))
        } else {
            ("request_failed", format!("the request failed: {cause}"))
        }
    }
}

/// The first `MAX_BODY` bytes as text; a character split by the cut is dropped, not replaced.
fn body_prefix(mut bytes: Vec<u8>) -> String {
    if bytes.len() > MAX_BODY {
        bytes.truncate(MAX_BODY);
        // The last character starts within the last 4 bytes; drop it if the cut left it incomplete.
        let last_start = (MAX_BODY - 4..MAX_BODY).rev().find(|&i| bytes[i] & 0xC0 != 0x80);
        if let Some(start) = last_start
            && std::str::from_utf8(&bytes[start..]).is_err_and(|e| e.error_len().is_none())
        {
            bytes.truncate(start);
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[derive(Debug, thiserror::Error)]
enum ResolveError {
    #[error("{host} resolves to {ip}, which is {BLOCKED}")]
    Refused { host: String, ip: IpAddr },
    #[error("looking up {host} failed: {source}")]
    Lookup { host: String, source: io::Error },
    #[error("{host} has no addresses")]
    Empty { host: String },
}

/// Resolves once and hands reqwest exactly the addresses it checked, so the connection goes to
/// them: a name that rebinds after the check cannot switch the target. Host and SNI keep the name.
struct CheckedResolver {
    rules: Arc<AddressRules>,
    lookup: Lookup,
}

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let rules = self.rules.clone();
        let lookup = (self.lookup)(host.clone());
        Box::pin(async move {
            let ips = match lookup.await {
                Ok(ips) if ips.is_empty() => return Err(ResolveError::Empty { host }.into()),
                Ok(ips) => ips,
                Err(source) => return Err(ResolveError::Lookup { host, source }.into()),
            };
            // One blocked answer refuses the name: it may be the one a connection would pick.
            if let Some(&ip) = ips.iter().find(|&&ip| !rules.allows(ip)) {
                return Err(ResolveError::Refused { host, ip }.into());
            }
            // hyper puts the URL's port (or the scheme's default) in place of port 0.
            let addrs: Addrs = Box::new(ips.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::Router;
    use axum::body::Bytes;
    use axum::http::{HeaderMap, StatusCode, header};
    use axum::routing::post;
    use tokio::sync::mpsc;

    use super::*;
    use crate::signature::tests::verify;

    const SECRET: &str = "whsec_test";

    fn config(exempt: &[&str], timeout_seconds: f64) -> WebhooksConfig {
        WebhooksConfig {
            allowed_private_cidrs: exempt.iter().map(|net| net.parse().unwrap()).collect(),
            timeout_seconds,
            ..WebhooksConfig::default()
        }
    }

    fn sender(exempt: &[&str], timeout_seconds: f64, lookup: Option<Lookup>) -> Sender {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let cfg = config(exempt, timeout_seconds);
        match lookup {
            Some(lookup) => Sender::with_lookup(&cfg, lookup).unwrap(),
            None => Sender::new(&cfg).unwrap(),
        }
    }

    /// A fake DNS answer to the n-th lookup (0-based).
    type Answer = fn(usize) -> io::Result<Vec<IpAddr>>;

    /// A fake DNS counting its calls.
    fn fake_lookup(calls: Arc<AtomicUsize>, answer: Answer) -> Lookup {
        Arc::new(move |_host| {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move { answer(n) })
        })
    }

    async fn receiver(app: Router) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        addr
    }

    /// A receiver that records each request's headers and raw body and answers 200 `ok`.
    async fn recording_receiver() -> (SocketAddr, mpsc::UnboundedReceiver<(HeaderMap, Bytes)>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let app = Router::new().route(
            "/hook",
            post(move |headers: HeaderMap, body: Bytes| {
                let _ = tx.send((headers, body));
                async { "ok" }
            }),
        );
        (receiver(app).await, rx)
    }

    fn outgoing(url: &str) -> Outgoing<'_> {
        Outgoing {
            url,
            secret: SECRET,
            event_id: "1234",
            event_type: "conversation.turn.done",
            attempt: 3,
            body: br#"{"id":"1234","type":"conversation.turn.done","data":{"note":"caf\u00e9"}}"#,
        }
    }

    fn error_code(outcome: &Outcome) -> Option<&'static str> {
        outcome.error.as_ref().map(|(code, _)| *code)
    }

    #[tokio::test]
    async fn signed_post_with_headers() {
        let (addr, mut requests) = recording_receiver().await;
        let url = format!("http://{addr}/hook");
        let out = outgoing(&url);
        let outcome = sender(&["127.0.0.0/8"], 5.0, None).send(&out).await;
        assert_eq!((outcome.status, outcome.body.as_deref(), &outcome.error), (Some(200), Some("ok"), &None));
        assert!(outcome.accepted());

        let (headers, body) = requests.recv().await.unwrap();
        let header = |name: &str| headers.get(name).unwrap().to_str().unwrap().to_owned();
        assert_eq!(&body[..], out.body);
        assert_eq!(header("content-type"), "application/json");
        assert_eq!(header("user-agent"), format!("acs-webhooks/{}", env!("CARGO_PKG_VERSION")));
        assert_eq!(header("service-event-id"), "1234");
        assert_eq!(header("service-event-type"), "conversation.turn.done");
        assert_eq!(header("service-delivery-attempt"), "3");
        let signature = header("service-signature");
        assert!(verify(SECRET, &signature, &body), "{signature}");
        let t: i64 = signature.strip_prefix("t=").unwrap().split(',').next().unwrap().parse().unwrap();
        assert!((time::OffsetDateTime::now_utc().unix_timestamp() - t).abs() < 60);
    }

    #[tokio::test]
    async fn redirect_is_a_status_and_not_followed() {
        let followed = Arc::new(AtomicUsize::new(0));
        let counter = followed.clone();
        let app = Router::new()
            .route("/hook", post(|| async { (StatusCode::FOUND, [(header::LOCATION, "/target")], "moved") }))
            .route(
                "/target",
                axum::routing::any(move || {
                    counter.fetch_add(1, Ordering::SeqCst);
                    async { "here" }
                }),
            );
        let url = format!("http://{}/hook", receiver(app).await);
        let outcome = sender(&["127.0.0.0/8"], 5.0, None).send(&outgoing(&url)).await;
        assert_eq!((outcome.status, outcome.body.as_deref(), &outcome.error), (Some(302), Some("moved"), &None));
        assert!(!outcome.accepted());
        assert_eq!(followed.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn large_answer_is_cut_at_4_kb() {
        // "é" straddles the 4096-byte cut; a megabyte follows that must not matter.
        let answer = format!("{}é{}", "a".repeat(MAX_BODY - 1), "b".repeat(1 << 20));
        let app = Router::new().route("/hook", post(move || std::future::ready(answer.clone())));
        let url = format!("http://{}/hook", receiver(app).await);
        let outcome = sender(&["127.0.0.0/8"], 5.0, None).send(&outgoing(&url)).await;
        assert_eq!(outcome.status, Some(200));
        assert_eq!(outcome.body, Some("a".repeat(MAX_BODY - 1)));
    }

    #[test]
    fn body_prefix_cuts_at_a_character_boundary() {
        assert_eq!(body_prefix(b"short".to_vec()), "short");
        assert_eq!(body_prefix(vec![b'x'; 5000]), "x".repeat(MAX_BODY));
        let four_byte = format!("{}😀", "x".repeat(MAX_BODY - 2)).into_bytes();
        assert_eq!(body_prefix(four_byte), "x".repeat(MAX_BODY - 2));
        let fits = format!("{}😀!", "x".repeat(MAX_BODY - 4)).into_bytes();
        assert_eq!(body_prefix(fits), format!("{}😀", "x".repeat(MAX_BODY - 4)));
        let mut invalid = vec![b'x'; MAX_BODY + 10];
        invalid[10] = 0xff;
        let text = body_prefix(invalid);
        assert!(text.starts_with("xxxxxxxxxx\u{fffd}x") && text.len() == MAX_BODY + 2, "invalid bytes are replaced");
    }

    #[tokio::test]
    async fn slow_receiver_times_out() {
        let app = Router::new().route(
            "/hook",
            post(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        );
        let url = format!("http://{}/hook", receiver(app).await);
        let outcome = sender(&["127.0.0.0/8"], 0.3, None).send(&outgoing(&url)).await;
        assert_eq!((outcome.status, error_code(&outcome)), (None, Some("timeout")), "{outcome:?}");
        assert!((300..3000).contains(&outcome.latency_ms), "{}", outcome.latency_ms);
    }

    #[tokio::test]
    async fn private_literals_are_refused_without_exemption() {
        let (addr, mut requests) = recording_receiver().await;
        let port = addr.port();
        let plain = sender(&[], 5.0, None);
        for url in [
            format!("http://127.0.0.1:{port}/hook"),
            format!("http://[::ffff:127.0.0.1]:{port}/hook"),
            format!("http://[::1]:{port}/hook"),
            // The URL parser reads this as 127.0.0.1.
            format!("http://2130706433:{port}/hook"),
        ] {
            let outcome = plain.send(&outgoing(&url)).await;
            assert_eq!((outcome.status, error_code(&outcome)), (None, Some("address_refused")), "{url}");
        }
        // The mapped form of an exempt address is exempt too.
        let exempt = sender(&["127.0.0.0/8"], 5.0, None);
        let outcome = exempt.send(&outgoing(&format!("http://[::ffff:127.0.0.1]:{port}/hook"))).await;
        assert_eq!(outcome.status, Some(200), "{outcome:?}");
        assert_eq!(requests.recv().await.unwrap().1, outgoing("").body);
        assert!(requests.try_recv().is_err(), "nothing refused reached the receiver");
    }

    #[tokio::test]
    async fn names_resolving_to_blocked_addresses_are_refused() {
        let calls = Arc::new(AtomicUsize::new(0));
        let private =
            sender(&["127.0.0.0/8"], 5.0, Some(fake_lookup(calls.clone(), |_| Ok(vec![[10, 0, 0, 1].into()]))));
        let outcome = private.send(&outgoing("http://hook.example/hook")).await;
        assert_eq!(error_code(&outcome), Some("address_refused"), "{outcome:?}");
        let (_, message) = outcome.error.unwrap();
        assert!(message.contains("hook.example") && message.contains("10.0.0.1"), "{message}");

        // One blocked answer among allowed ones refuses the name.
        let mixed = |_: usize| Ok(vec![[127, 0, 0, 1].into(), [10, 0, 0, 1].into()]);
        let outcome = sender(&["127.0.0.0/8"], 5.0, Some(fake_lookup(calls.clone(), mixed)))
            .send(&outgoing("http://hook.example/hook"))
            .await;
        assert_eq!(error_code(&outcome), Some("address_refused"), "{outcome:?}");
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn lookup_failures_are_dns_failed() {
        let calls = Arc::new(AtomicUsize::new(0));
        let answers: [Answer; 2] = [|_| Ok(vec![]), |_| Err(io::Error::other("no such host"))];
        for answer in answers {
            let outcome = sender(&[], 5.0, Some(fake_lookup(calls.clone(), answer)))
                .send(&outgoing("https://missing.example/hook"))
                .await;
            assert_eq!(error_code(&outcome), Some("dns_failed"), "{outcome:?}");
        }
    }

    #[tokio::test]
    async fn closed_port_is_connect_failed_and_bad_url_request_failed() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let exempt = sender(&["127.0.0.0/8"], 5.0, None);
        let outcome = exempt.send(&outgoing(&format!("http://127.0.0.1:{port}/hook"))).await;
        assert_eq!(error_code(&outcome), Some("connect_failed"), "{outcome:?}");
        for url in ["not a url", "ftp://127.0.0.1/hook"] {
            let outcome = exempt.send(&outgoing(url)).await;
            assert_eq!(error_code(&outcome), Some("request_failed"), "{url}: {outcome:?}");
        }
    }

    #[tokio::test]
    async fn connection_uses_the_checked_address_not_a_second_lookup() {
        let (addr, mut requests) = recording_receiver().await;
        let calls = Arc::new(AtomicUsize::new(0));
        // Rebinding: allowed on the first lookup, blocked on any later one.
        let rebinding = |n: usize| Ok(vec![if n == 0 { [127, 0, 0, 1] } else { [10, 0, 0, 1] }.into()]);
        let sender = sender(&["127.0.0.0/8"], 5.0, Some(fake_lookup(calls.clone(), rebinding)));
        let url = format!("http://rebind.example:{}/hook", addr.port());
        let outcome = sender.send(&outgoing(&url)).await;
        assert_eq!((outcome.status, &outcome.error), (Some(200), &None));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        let (headers, _) = requests.recv().await.unwrap();
        assert_eq!(headers["host"], format!("rebind.example:{}", addr.port()).as_str());
    }
}
