//! The runner's side of the protocol: serves the server's calls with a
//! provider of this host, and copies supervisor streams.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use uuid::Uuid;

use super::super::{MachineSpec, MachineState, SandboxProvider};
use super::mutex;
use super::proto::{Call, Frame, FromRunner, MAX_CHUNK, ToRunner, WireExec, data_frame, parse_data};
use crate::egress::{EgressRecord, EgressSink};

/// Stream bytes waiting for the machine's supervisor before the socket's reader waits.
const STREAM_BUFFER: usize = 64;

/// Sends the runner's egress records to the server.
pub struct SocketSink(pub mpsc::UnboundedSender<Frame>);

impl EgressSink for SocketSink {
    fn record(&self, record: EgressRecord) {
        let msg = FromRunner::Egress { record: (&record).into() };
        if let Ok(text) = serde_json::to_string(&msg) {
            // A closed socket loses the record, as a stopped server would.
            self.0.send(Frame::Text(text)).ok();
        }
    }
}

fn send(out: &mpsc::UnboundedSender<Frame>, msg: &FromRunner) {
    if let Ok(text) = serde_json::to_string(msg) {
        out.send(Frame::Text(text)).ok();
    }
}

/// Serves one connection until `incoming` ends. Machines keep running after
/// it: the next connection's server reattaches them.
pub async fn serve(
    provider: Arc<dyn SandboxProvider>,
    mut incoming: mpsc::Receiver<Frame>,
    out: mpsc::UnboundedSender<Frame>,
) {
    let streams: Arc<Mutex<HashMap<u32, mpsc::Sender<Vec<u8>>>>> = Arc::default();
    while let Some(frame) = incoming.recv().await {
        match frame {
            Frame::Binary(bytes) => {
                let Some((stream, data)) = parse_data(&bytes) else { continue };
                let tx = mutex(&streams).get(&stream).cloned();
                if let Some(tx) = tx
                    && tx.send(data.to_vec()).await.is_err()
                {
                    mutex(&streams).remove(&stream);
                }
            }
            Frame::Text(text) => match serde_json::from_str::<ToRunner>(&text) {
                Ok(ToRunner::Call { id, call }) => {
                    let (provider, out) = (provider.clone(), out.clone());
                    tokio::spawn(async move {
                        let (ok, error) = match dispatch(provider.as_ref(), call).await {
                            Ok(v) => (Some(v), None),
                            Err(e) => (None, Some(e)),
                        };
                        send(&out, &FromRunner::Reply { id, ok, error });
                    });
                }
                Ok(ToRunner::Open { stream, machine }) => {
                    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
                    mutex(&streams).insert(stream, tx);
                    let (provider, out, streams) = (provider.clone(), out.clone(), streams.clone());
                    tokio::spawn(async move {
                        let error = copy(provider.as_ref(), machine, stream, rx, &out).await.err();
                        mutex(&streams).remove(&stream);
                        send(&out, &FromRunner::Closed { stream, error });
                    });
                }
                Ok(ToRunner::Close { stream }) => {
                    mutex(&streams).remove(&stream);
                }
                Ok(ToRunner::Welcome { .. }) => tracing::warn!("a second welcome ignored"),
                Err(e) => tracing::warn!("a frame the runner does not understand: {e}"),
            },
        }
    }
}

/// One stream: the machine's supervisor socket, both ways.
async fn copy(
    provider: &dyn SandboxProvider,
    machine: Uuid,
    stream: u32,
    mut from_server: mpsc::Receiver<Vec<u8>>,
    out: &mpsc::UnboundedSender<Frame>,
) -> Result<(), String> {
    let conn = provider.supervisor(machine).connect().await.map_err(|e| e.to_string())?;
    let (mut read, mut write) = conn.into_split();
    let up = async {
        let mut buf = vec![0u8; MAX_CHUNK];
        loop {
            match read.read(&mut buf).await {
                Ok(0) | Err(_) => {
                    out.send(data_frame(stream, &[])).ok();
                    return;
                }
                Ok(n) => {
                    if out.send(data_frame(stream, &buf[..n])).is_err() {
                        return;
                    }
                }
            }
        }
    };
    let down = async {
        while let Some(bytes) = from_server.recv().await {
            if bytes.is_empty() {
                write.shutdown().await.ok();
                // Keep the write half until the server closes: dropping it is not needed to end the request.
                while from_server.recv().await.is_some() {}
                return;
            }
            if write.write_all(&bytes).await.is_err() {
                return;
            }
        }
    };
    // Ends when the server closes the stream (its sender dropped) or the supervisor hung up and was read out.
    tokio::select! {
        () = up => {}
        () = down => {}
    }
    Ok(())
}

async fn dispatch(p: &dyn SandboxProvider, call: Call) -> Result<Value, String> {
    let e = |e: super::super::ProviderError| e.to_string();
    Ok(match call {
        Call::Start { spec } => {
            let spec = MachineSpec::from(spec);
            let started = p.start(&spec).await.map_err(e)?;
            json!({"url": started.url})
        }
        Call::Reattach { spec } => json!(p.reattach(&MachineSpec::from(spec)).await.map_err(e)?),
        Call::SetNetwork { id, network } => {
            p.set_network(id, &network.into()).await.map_err(e)?;
            Value::Null
        }
        Call::Stop { id } => {
            p.stop(id).await;
            Value::Null
        }
        Call::Checkpoint { id } => {
            serde_json::to_value(p.checkpoint(id).await.map_err(e)?).map_err(|e| e.to_string())?
        }
        Call::Restore { id } => {
            p.restore(id).await.map_err(e)?;
            Value::Null
        }
        Call::Destroy { id } => {
            p.destroy(id).await;
            Value::Null
        }
        Call::State { id } => json!(match p.state(id).await {
            MachineState::Running => "running",
            MachineState::Stopped => "stopped",
            MachineState::Missing => "missing",
        }),
        Call::LetGo { id } => {
            p.let_go(id);
            Value::Null
        }
        Call::ExecOffline { id, argv, env } => {
            let output = p.exec_offline(id, &argv, &env).await.map_err(e)?;
            serde_json::to_value(WireExec::from(&output)).map_err(|e| e.to_string())?
        }
    })
}
