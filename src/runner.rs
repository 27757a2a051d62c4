//! `acs runner`: serves sandboxes on this computer for a server it dials.
//!
//! The runner connects to `GET /api/runners/connect` with its token, says
//! hello, and then serves the server's provider calls with the `local`
//! provider of this host (bubblewrap machines, as a server builds them),
//! under `--root`: machines keep their disks in `<root>/.acs` and show as
//! `<root>/<machine_name>` while they run. When the socket drops it dials
//! again (backing off up to 10 s); the machines keep running meanwhile,
//! and the server reattaches them. See `docs/runners.md`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acs_core::config::Loaded;
use acs_core::provider::SandboxProvider;
use acs_core::provider::local::LocalProvider;
use acs_core::provider::remote::proto::{self, Frame, FromRunner, ToRunner};
use acs_core::provider::remote::serve::{self, SocketSink};
use anyhow::{Context, bail};
use clap::Args;
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

const MAX_BACKOFF: Duration = Duration::from_secs(10);
const MAX_MESSAGE: usize = 16 << 20;

#[derive(Args, Debug)]
pub struct RunnerArgs {
    /// The server's address.
    #[arg(long, env = "ACS_URL")]
    pub url: String,
    /// The runner's token, from `POST /api/runners` (shown once).
    #[arg(long, env = "ACS_RUNNER_TOKEN", hide_env_values = true)]
    pub token: String,
    /// The directory machines live under (created if missing): `<root>/<machine_name>` while one runs.
    #[arg(long)]
    pub root: PathBuf,
    /// The name this computer reports (default: its hostname).
    #[arg(long)]
    pub name: Option<String>,
}

/// The egress sink of the machines, pointed at whichever socket is open.
#[derive(Default)]
struct Sink(Mutex<Option<SocketSink>>);

impl acs_core::egress::EgressSink for Sink {
    fn record(&self, record: acs_core::egress::EgressRecord) {
        if let Some(s) = self.0.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            s.record(record);
        }
    }
}

/// Serves until the process is stopped; fails at once when the server
/// refuses the token or this host cannot run machines.
pub async fn run(loaded: &Loaded, args: RunnerArgs) -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    std::fs::create_dir_all(&args.root).with_context(|| format!("--root {}", args.root.display()))?;
    let root = std::fs::canonicalize(&args.root)?;
    let hostname = match args.name.clone() {
        Some(n) => n,
        None => std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_owned(),
    };
    let base = args.url.trim_end_matches('/').to_owned();
    let sink = Arc::new(Sink::default());
    let mut provider: Option<Arc<dyn SandboxProvider>> = None;
    let mut backoff = Duration::from_millis(500);
    loop {
        match session(loaded, &base, &args.token, (&hostname, &root), &sink, &mut provider).await {
            Ok(()) => {
                eprintln!("acs runner: disconnected; dialling again");
                backoff = Duration::from_millis(500);
            }
            Err(Failure::Fatal(e)) => return Err(e),
            Err(Failure::Retry(e)) => eprintln!("acs runner: {e:#}; retrying in {} ms", backoff.as_millis()),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

enum Failure {
    /// The server refused us, or this host cannot run machines: no point trying again.
    Fatal(anyhow::Error),
    Retry(anyhow::Error),
}

/// One connection, from dial to close.
async fn session(
    loaded: &Loaded,
    base: &str,
    token: &str,
    (hostname, root): (&str, &Path),
    sink: &Arc<Sink>,
    provider: &mut Option<Arc<dyn SandboxProvider>>,
) -> Result<(), Failure> {
    let (ws_url, host, port, tls) = endpoint(base).map_err(Failure::Fatal)?;
    let mut req = ws_url.as_str().into_client_request().map_err(|e| Failure::Fatal(e.into()))?;
    let bearer = format!("Bearer {token}").parse().map_err(|_| Failure::Fatal(anyhow::anyhow!("bad token")))?;
    req.headers_mut().insert("authorization", bearer);
    let tcp = TcpStream::connect((host.as_str(), port))
        .await
        .with_context(|| format!("connecting to {host}:{port}"))
        .map_err(Failure::Retry)?;
    tcp.set_nodelay(true).ok();
    if tls {
        let config = <rustls::ClientConfig as rustls_platform_verifier::ConfigVerifierExt>::with_platform_verifier()
            .map_err(|e| Failure::Fatal(anyhow::anyhow!("TLS: {e}")))?;
        let name = rustls::pki_types::ServerName::try_from(host.clone())
            .map_err(|e| Failure::Fatal(anyhow::anyhow!("TLS server name {host}: {e}")))?;
        let stream = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .context("TLS handshake")
            .map_err(Failure::Retry)?;
        talk(loaded, req, stream, (base, hostname, root), sink, provider).await
    } else {
        talk(loaded, req, tcp, (base, hostname, root), sink, provider).await
    }
}

async fn talk<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    loaded: &Loaded,
    req: tokio_tungstenite::tungstenite::handshake::client::Request,
    stream: S,
    (base, hostname, root): (&str, &str, &Path),
    sink: &Arc<Sink>,
    provider: &mut Option<Arc<dyn SandboxProvider>>,
) -> Result<(), Failure> {
    let config = WebSocketConfig::default().max_message_size(Some(MAX_MESSAGE));
    let (ws, _) = match tokio_tungstenite::client_async_with_config(req, stream, Some(config)).await {
        Ok(ok) => ok,
        Err(WsError::Http(res)) if res.status() == 401 => {
            return Err(Failure::Fatal(anyhow::anyhow!("the server refused the runner token (401)")));
        }
        Err(e) => return Err(Failure::Retry(anyhow::anyhow!("WebSocket handshake: {e}"))),
    };
    let (mut tx, mut rx) = ws.split();
    let hello =
        FromRunner::Hello { version: proto::VERSION, hostname: hostname.to_owned(), root: root.display().to_string() };
    let hello = serde_json::to_string(&hello).map_err(|e| Failure::Fatal(e.into()))?;
    tx.send(Message::Text(hello.into())).await.map_err(|e| Failure::Retry(e.into()))?;
    let welcome = match rx.next().await {
        Some(Ok(Message::Text(t))) => serde_json::from_str::<ToRunner>(&t).ok(),
        Some(Ok(Message::Close(Some(frame)))) => {
            return Err(Failure::Fatal(anyhow::anyhow!("the server closed the connection: {}", frame.reason)));
        }
        _ => None,
    };
    let Some(ToRunner::Welcome { runner_id, name, api_url }) = welcome else {
        return Err(Failure::Retry(anyhow::anyhow!("the server sent no welcome")));
    };
    let serving = match provider {
        Some(p) => p.clone(),
        None => {
            let p = build_provider(loaded, base, &api_url, root, sink.clone()).await.map_err(Failure::Fatal)?;
            *provider = Some(p.clone());
            p
        }
    };
    eprintln!("acs runner: connected to {base} as runner {name} ({runner_id}); machines under {}", root.display());

    let (out, mut outgoing) = mpsc::unbounded_channel::<Frame>();
    *sink.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(SocketSink(out.clone()));
    let (incoming_tx, incoming) = mpsc::channel::<Frame>(256);
    let served = serve::serve(serving, incoming, out);
    let writer = async {
        while let Some(frame) = outgoing.recv().await {
            let msg = match frame {
                Frame::Text(t) => Message::Text(t.into()),
                Frame::Binary(b) => Message::Binary(b.into()),
            };
            if tx.send(msg).await.is_err() {
                return;
            }
        }
    };
    let reader = async {
        while let Some(Ok(msg)) = rx.next().await {
            let frame = match msg {
                Message::Text(t) => Frame::Text(t.to_string()),
                Message::Binary(b) => Frame::Binary(b.to_vec()),
                Message::Close(_) => return,
                _ => continue,
            };
            if incoming_tx.send(frame).await.is_err() {
                return;
            }
        }
    };
    tokio::select! {
        () = served => {}
        () = writer => {}
        () = reader => {}
    }
    *sink.0.lock().unwrap_or_else(|p| p.into_inner()) = None;
    Ok(())
}

/// The `local` provider of this host, its machines under `root`.
async fn build_provider(
    loaded: &Loaded,
    base: &str,
    api_url: &str,
    root: &Path,
    sink: Arc<Sink>,
) -> anyhow::Result<Arc<dyn SandboxProvider>> {
    let alias = api_alias(base, api_url).await?;
    let mut cfg = acs_core::sandboxes::local_config(&loaded.config, api_url, alias, Default::default())
        .map_err(|e| anyhow::anyhow!(e))?;
    cfg.machines_dir = root.join(".acs").join("machines");
    cfg.names_dir = Some(root.to_owned());
    let local =
        LocalProvider::new(cfg, sink).map_err(|e| anyhow::anyhow!("this computer cannot run sandboxes: {e}"))?;
    Ok(Arc::new(local))
}

/// Machines call the API by the name the server's welcome gives; a name
/// that is the server's alias (no public URL) is mapped to the address this
/// runner dialled.
async fn api_alias(base: &str, api_url: &str) -> anyhow::Result<Option<(String, SocketAddr)>> {
    let Some(authority) = api_url.strip_prefix("http://") else { return Ok(None) };
    let authority = authority.split('/').next().unwrap_or_default();
    if !authority.starts_with(&format!("{}:", acs_core::sandboxes::API_ALIAS)) {
        return Ok(None);
    }
    let (_, host, port, _) = endpoint(base)?;
    let addr = tokio::net::lookup_host((host.as_str(), port))
        .await?
        .next()
        .with_context(|| format!("{host} has no address"))?;
    Ok(Some((authority.to_owned(), addr)))
}

/// The WebSocket URL, host, port and whether it is TLS, of a server address.
fn endpoint(base: &str) -> anyhow::Result<(String, String, u16, bool)> {
    let (tls, rest) = if let Some(r) = base.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = base.strip_prefix("http://") {
        (false, r)
    } else {
        bail!("--url must start with http:// or https://: {base}");
    };
    let authority = rest.split('/').next().unwrap_or_default();
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => {
            (h.to_owned(), p.parse::<u16>().with_context(|| format!("bad port in {base}"))?)
        }
        _ => (authority.to_owned(), if tls { 443 } else { 80 }),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']').to_owned();
    let scheme = if tls { "wss" } else { "ws" };
    Ok((format!("{scheme}://{authority}/api/runners/connect"), host, port, tls))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_addresses_become_websocket_endpoints() {
        let (url, host, port, tls) = endpoint("http://127.0.0.1:8080").unwrap();
        assert_eq!(
            (url.as_str(), host.as_str(), port, tls),
            ("ws://127.0.0.1:8080/api/runners/connect", "127.0.0.1", 8080, false)
        );
        let (url, host, port, tls) = endpoint("https://acs.example.com").unwrap();
        assert_eq!(
            (url.as_str(), host.as_str(), port, tls),
            ("wss://acs.example.com/api/runners/connect", "acs.example.com", 443, true)
        );
        assert!(endpoint("ftp://x").is_err());
    }
}
