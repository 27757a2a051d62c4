//! The proxy's side of a broker on another host: a bound CONNECT is passed
//! on to it as a CONNECT of its own, naming the machine with its token, and
//! the bytes are relayed both ways. The broker there terminates TLS and
//! writes each request's record; here only a failure is recorded.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;

use super::Remote;
use crate::egress::body::{ProxyBody, empty};
use crate::egress::proxy::Shared;
use crate::egress::record::PendingRecord;
use crate::egress::refusal::Refusal;
use crate::egress::target::Target;

/// The longest answer head accepted from the broker.
const MAX_HEAD: usize = 8 * 1024;

pub(crate) async fn chain(
    shared: &Arc<Shared>,
    remote: &Remote,
    target: Target,
    req: Request<Incoming>,
    mut pending: PendingRecord,
    slot: Arc<OwnedSemaphorePermit>,
) -> Response<ProxyBody> {
    let token = (remote.token)(shared.sandbox_id);
    let opened = tokio::time::timeout(remote.timeout, open(&remote.addr, &target, &token)).await;
    let mut broker = match opened {
        Ok(Ok(Ok(stream))) => stream,
        Ok(Ok(Err(status))) => {
            tracing::warn!(sandbox = %shared.sandbox_id, status, "the broker refused a CONNECT");
            return Refusal::BrokerRefused.respond(Some(&target), pending);
        }
        Ok(Err(e)) => {
            tracing::warn!(sandbox = %shared.sandbox_id, addr = %remote.addr, "the broker did not answer: {e}");
            return Refusal::BrokerUnavailable.respond(Some(&target), pending);
        }
        Err(_) => return Refusal::BrokerUnavailable.respond(Some(&target), pending),
    };
    pending.set_status(200);
    let stopped = shared.stopped.clone();
    tokio::spawn(async move {
        let _slot = slot;
        let relay = async {
            let upgraded = hyper::upgrade::on(req).await.map_err(|_| "client_closed")?;
            relay(TokioIo::new(upgraded), &mut broker).await
        };
        tokio::select! {
            ended = relay => match ended {
                // Each request through it has its record, written by the broker.
                Ok(()) => pending.discard(),
                Err(error) => pending.finish(Some(error)),
            },
            _ = stopped.cancelled() => drop(pending),
        }
    });
    Response::new(empty())
}

/// Relays both ways. The machine closes first when it is done; the broker
/// closing first (it stopped, or was killed mid-request) is recorded.
async fn relay<C>(client: C, broker: &mut TcpStream) -> Result<(), &'static str>
where
    C: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (mut from_client, mut to_client) = tokio::io::split(client);
    let (mut from_broker, mut to_broker) = broker.split();
    let up = async {
        let copied = tokio::io::copy(&mut from_client, &mut to_broker).await;
        // Best effort: the broker may be gone already, which `down` reports.
        to_broker.shutdown().await.ok();
        copied
    };
    let down = async {
        let copied = tokio::io::copy(&mut from_broker, &mut to_client).await;
        to_client.shutdown().await.ok();
        copied
    };
    tokio::pin!(up, down);
    tokio::select! {
        sent = &mut up => {
            sent.map_err(|_| "client_closed")?;
            down.await.map(drop).map_err(|_| "broker_closed")
        }
        _ = &mut down => Err("broker_closed"),
    }
}

/// Connects to the broker and asks for `target`: the stream once it
/// answered 200, or the status it answered instead.
async fn open(addr: &str, target: &Target, token: &str) -> std::io::Result<Result<TcpStream, u16>> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let head = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nProxy-Authorization: Bearer {token}\r\n\r\n");
    stream.write_all(head.as_bytes()).await?;
    // Byte by byte up to the blank line: what follows belongs to the tunnel.
    let mut answer = Vec::with_capacity(128);
    while !answer.ends_with(b"\r\n\r\n") {
        if answer.len() >= MAX_HEAD {
            return Err(std::io::Error::other("the broker's answer head is too long"));
        }
        let byte = stream.read_u8().await?;
        answer.push(byte);
    }
    let status = std::str::from_utf8(&answer)
        .ok()
        .and_then(|text| text.split(' ').nth(1))
        .and_then(|code| code.parse::<u16>().ok())
        .unwrap_or(0);
    Ok(if status == 200 { Ok(stream) } else { Err(status) })
}
