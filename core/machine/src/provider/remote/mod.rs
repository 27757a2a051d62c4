//! The `runner` provider: machines on a user's own computer, run by an
//! `acs runner` that dialled this server over a WebSocket.
//!
//! A runner is a [`SandboxProvider`] of its own (the `local` provider, on its
//! host); this side calls its methods over the socket ([`proto`]) and reaches
//! each machine's supervisor through a stream on the same socket. The
//! supervisor client speaks to a unix socket, so every runner machine gets
//! a bridge socket here (`<bridge_dir>/<id>.sock`) whose connections become
//! streams: the conversation engine, reads and stages use a runner machine
//! exactly as a local one. While the socket is down every call fails at
//! once and the bridges hang up; the machines keep running on the runner,
//! and when it dials again each known machine is reattached before the
//! runner counts as online (see `docs/runners.md`).

pub mod proto;
pub mod serve;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use self::proto::{Call, Frame, FromRunner, ToRunner, WireEgress, WireExec, WireSpec, data_frame, parse_data};
use super::{
    BoxFut, CheckpointInfo, ExecOutput, MachineSpec, MachineState, NetworkPolicy, ProviderError, ProviderResult,
    SandboxProvider, Started, Supervisor,
};
use crate::egress::EgressSink;

/// A start builds the machine on the runner (its disk, network, supervisor).
const START_TIMEOUT: Duration = Duration::from_secs(600);
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Bytes of one stream buffered here before the socket's reader waits.
const STREAM_BUFFER: usize = 64;

fn mutex<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn offline(runner: Uuid) -> ProviderError {
    ProviderError::Host(format!("runner {runner} is offline"))
}

/// One connected runner: its socket's sending side, the calls waiting for a
/// reply and the open supervisor streams.
pub struct Link {
    pub runner: Uuid,
    out: mpsc::UnboundedSender<Frame>,
    calls: Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>,
    streams: Mutex<HashMap<u32, mpsc::Sender<Vec<u8>>>>,
    next_call: AtomicU64,
    next_stream: AtomicU32,
    gone: CancellationToken,
}

impl Link {
    fn send(&self, msg: &ToRunner) -> Result<(), String> {
        let text = serde_json::to_string(msg).map_err(|e| e.to_string())?;
        self.out.send(Frame::Text(text)).map_err(|_| "the runner's socket closed".to_owned())
    }

    async fn call(&self, call: Call, within: Duration) -> Result<Value, String> {
        let id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        mutex(&self.calls).insert(id, tx);
        if let Err(e) = self.send(&ToRunner::Call { id, call }) {
            mutex(&self.calls).remove(&id);
            return Err(e);
        }
        let gone = "the runner disconnected before it answered";
        let answer = tokio::select! {
            r = tokio::time::timeout(within, rx) => match r {
                Ok(Ok(result)) => result,
                Ok(Err(_)) => Err(gone.to_owned()),
                Err(_) => Err(format!("the runner did not answer within {} s", within.as_secs())),
            },
            () = self.gone.cancelled() => Err(gone.to_owned()),
        };
        mutex(&self.calls).remove(&id);
        answer
    }

    fn open(&self, machine: Uuid) -> Result<(u32, mpsc::Receiver<Vec<u8>>), String> {
        let stream = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        mutex(&self.streams).insert(stream, tx);
        self.send(&ToRunner::Open { stream, machine })?;
        Ok((stream, rx))
    }

    fn close(&self, stream: u32) {
        if mutex(&self.streams).remove(&stream).is_some() {
            // A closed socket already ended the stream on the runner too.
            self.send(&ToRunner::Close { stream }).ok();
        }
    }

    fn data(&self, stream: u32, bytes: &[u8]) -> Result<(), String> {
        self.out.send(data_frame(stream, bytes)).map_err(|_| "the runner's socket closed".to_owned())
    }

    /// Resolves once the link is shut (the runner deleted, or replaced by a newer connection).
    pub async fn closed(&self) {
        self.gone.cancelled().await
    }

    /// Ends everything waiting on this socket.
    fn shut(&self) {
        self.gone.cancel();
        mutex(&self.calls).clear();
        mutex(&self.streams).clear();
    }
}

/// A machine placed on a runner.
struct Placed {
    runner: Uuid,
    /// What it was last started with, without its environment: what a reattach needs.
    spec: Option<WireSpec>,
    bridge: Option<tokio::task::JoinHandle<()>>,
}

pub struct RemoteProvider {
    bridge_dir: PathBuf,
    /// The API URL machines call (the runner's welcome tells it).
    api_url: String,
    sink: Arc<dyn EgressSink>,
    links: Mutex<HashMap<Uuid, Arc<Link>>>,
    machines: Mutex<HashMap<Uuid, Placed>>,
    /// Bumped whenever a runner comes online or goes.
    changed: watch::Sender<u64>,
}

impl RemoteProvider {
    /// `bridge_dir` holds the supervisors' bridge sockets (made here, root only).
    pub fn new(bridge_dir: PathBuf, api_url: String, sink: Arc<dyn EgressSink>) -> Result<Arc<RemoteProvider>, String> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&bridge_dir)
            .map_err(|e| format!("runner bridge directory {}: {e}", bridge_dir.display()))?;
        Ok(Arc::new(RemoteProvider {
            bridge_dir,
            api_url,
            sink,
            links: Mutex::new(HashMap::new()),
            machines: Mutex::new(HashMap::new()),
            changed: watch::Sender::new(0),
        }))
    }

    pub fn api_url(&self) -> &str {
        &self.api_url
    }

    fn link(&self, runner: Uuid) -> Option<Arc<Link>> {
        mutex(&self.links).get(&runner).cloned()
    }

    fn link_of(&self, machine: Uuid) -> ProviderResult<Arc<Link>> {
        let runner = self.runner_of(machine).ok_or_else(|| ProviderError::Host("not a runner machine".into()))?;
        self.link(runner).ok_or_else(|| offline(runner))
    }

    pub fn online(&self, runner: Uuid) -> bool {
        mutex(&self.links).contains_key(&runner)
    }

    /// Waits until `runner` is online (its machines reattached), at most `within`.
    pub async fn wait_online(&self, runner: Uuid, within: Duration) -> bool {
        let mut changes = self.changed.subscribe();
        let wait = async {
            loop {
                if self.online(runner) {
                    return;
                }
                if changes.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        };
        tokio::time::timeout(within, wait).await.is_ok()
    }

    /// The runner a machine is placed on.
    pub fn runner_of(&self, machine: Uuid) -> Option<Uuid> {
        mutex(&self.machines).get(&machine).map(|p| p.runner)
    }

    /// Places a machine on a runner (at server start, for the machines the database knows).
    pub fn place(self: &Arc<Self>, machine: Uuid, runner: Uuid) {
        let mut machines = mutex(&self.machines);
        let placed = machines.entry(machine).or_insert(Placed { runner, spec: None, bridge: None });
        placed.runner = runner;
        if placed.bridge.is_none() {
            placed.bridge = self.bridge(machine);
        }
    }

    fn forget(&self, machine: Uuid) {
        if let Some(p) = mutex(&self.machines).remove(&machine)
            && let Some(task) = p.bridge
        {
            task.abort();
        }
        self.remove_socket(machine);
    }

    /// Removes the machine's bridge socket, if there is one; the path.
    fn remove_socket(&self, machine: Uuid) -> PathBuf {
        let socket = self.socket(machine);
        if let Err(e) = std::fs::remove_file(&socket)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(sandbox = %machine, "bridge socket {} not removed: {e}", socket.display());
        }
        socket
    }

    fn socket(&self, machine: Uuid) -> PathBuf {
        self.bridge_dir.join(format!("{}.sock", machine.simple()))
    }

    /// A runner dialled: its link, not yet online (see [`RemoteProvider::ready`]).
    pub fn connected(&self, runner: Uuid, out: mpsc::UnboundedSender<Frame>) -> Arc<Link> {
        Arc::new(Link {
            runner,
            out,
            calls: Mutex::new(HashMap::new()),
            streams: Mutex::new(HashMap::new()),
            next_call: AtomicU64::new(1),
            next_stream: AtomicU32::new(1),
            gone: CancellationToken::new(),
        })
    }

    /// Reattaches the runner's known machines, then counts it online. A
    /// machine that did not survive stays placed: its next call fails.
    pub async fn ready(&self, link: &Arc<Link>) {
        let specs: Vec<WireSpec> =
            mutex(&self.machines).values().filter(|p| p.runner == link.runner).filter_map(|p| p.spec.clone()).collect();
        for spec in specs {
            let id = spec.id;
            match link.call(Call::Reattach { spec }, CALL_TIMEOUT).await {
                Ok(Value::Bool(true)) => {}
                Ok(_) => {
                    tracing::warn!(sandbox = %id, runner = %link.runner, "the machine stopped while the runner was away")
                }
                Err(e) => tracing::warn!(sandbox = %id, runner = %link.runner, "reattach on the runner failed: {e}"),
            }
        }
        if let Some(old) = mutex(&self.links).insert(link.runner, link.clone()) {
            old.shut();
        }
        self.changed.send_modify(|n| *n += 1);
    }

    /// A deleted runner: its socket is closed now.
    pub fn drop_runner(&self, runner: Uuid) {
        let link = mutex(&self.links).remove(&runner);
        if let Some(link) = link {
            link.shut();
            self.changed.send_modify(|n| *n += 1);
        }
    }

    /// The socket closed: every call and stream of it ends now.
    pub fn disconnected(&self, link: &Arc<Link>) {
        {
            let mut links = mutex(&self.links);
            if links.get(&link.runner).is_some_and(|l| Arc::ptr_eq(l, link)) {
                links.remove(&link.runner);
            }
        }
        link.shut();
        self.changed.send_modify(|n| *n += 1);
    }

    /// A frame the runner sent. Errors are the runner's mistakes; the caller drops it.
    pub async fn receive(&self, link: &Link, frame: Frame) -> Result<(), String> {
        match frame {
            Frame::Binary(bytes) => {
                let (stream, data) = parse_data(&bytes).ok_or("a binary frame without a stream number")?;
                let tx = mutex(&link.streams).get(&stream).cloned();
                // Bytes for a stream this side already closed are dropped.
                if let Some(tx) = tx
                    && tx.send(data.to_vec()).await.is_err()
                {
                    mutex(&link.streams).remove(&stream);
                }
                Ok(())
            }
            Frame::Text(text) => match serde_json::from_str::<FromRunner>(&text).map_err(|e| e.to_string())? {
                FromRunner::Reply { id, ok, error } => {
                    if let Some(tx) = mutex(&link.calls).remove(&id) {
                        // The caller may have timed out and gone.
                        tx.send(match error {
                            Some(e) => Err(e),
                            None => Ok(ok.unwrap_or(Value::Null)),
                        })
                        .ok();
                    }
                    Ok(())
                }
                FromRunner::Closed { stream, error } => {
                    if let Some(e) = error {
                        tracing::debug!(runner = %link.runner, stream, "runner stream closed: {e}");
                    }
                    mutex(&link.streams).remove(&stream);
                    Ok(())
                }
                FromRunner::Egress { record } => {
                    self.egress(link, record);
                    Ok(())
                }
                FromRunner::Hello { .. } => Err("a second hello".into()),
            },
        }
    }

    /// A runner's egress record is kept only for a machine placed on that runner.
    fn egress(&self, link: &Link, record: WireEgress) {
        if self.runner_of(record.sandbox_id) == Some(link.runner) {
            self.sink.record(record.into());
        } else {
            tracing::warn!(runner = %link.runner, sandbox = %record.sandbox_id, "egress record for another machine dropped");
        }
    }

    /// The listener whose connections become streams to the machine's supervisor.
    fn bridge(self: &Arc<Self>, machine: Uuid) -> Option<tokio::task::JoinHandle<()>> {
        let socket = self.remove_socket(machine);
        let listener = match UnixListener::bind(&socket) {
            Ok(l) => l,
            Err(e) => {
                tracing::error!(sandbox = %machine, "bridge socket {}: {e}", socket.display());
                return None;
            }
        };
        let me = Arc::downgrade(self);
        Some(tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let Some(me) = me.upgrade() else { return };
                // While the runner is away a connection is hung up at once: the client sees the machine unreachable.
                if let Ok(link) = me.link_of(machine) {
                    tokio::spawn(pump(link, machine, conn));
                }
            }
        }))
    }

    fn remember(self: &Arc<Self>, spec: &MachineSpec, runner: Uuid) {
        self.place(spec.id, runner);
        let mut kept = WireSpec::from(spec);
        kept.env = BTreeMap::new();
        if let Some(p) = mutex(&self.machines).get_mut(&spec.id) {
            p.spec = Some(kept);
        }
    }

    async fn call(&self, machine: Uuid, call: Call, within: Duration) -> ProviderResult<Value> {
        let link = self.link_of(machine)?;
        link.call(call, within).await.map_err(ProviderError::Host)
    }
}

/// Copies one bridge connection to and from its stream.
async fn pump(link: Arc<Link>, machine: Uuid, conn: UnixStream) {
    let (stream, mut from_runner) = match link.open(machine) {
        Ok(s) => s,
        Err(e) => {
            tracing::debug!(sandbox = %machine, "bridge stream not opened: {e}");
            return;
        }
    };
    let (mut read, mut write) = conn.into_split();
    let up = async {
        let mut buf = vec![0u8; proto::MAX_CHUNK];
        loop {
            match read.read(&mut buf).await {
                Ok(0) | Err(_) => {
                    link.data(stream, &[]).ok();
                    return;
                }
                Ok(n) => {
                    if link.data(stream, &buf[..n]).is_err() {
                        return;
                    }
                }
            }
        }
    };
    let down = async {
        while let Some(bytes) = from_runner.recv().await {
            if bytes.is_empty() {
                write.shutdown().await.ok();
                return;
            }
            if write.write_all(&bytes).await.is_err() {
                return;
            }
        }
        // The runner went or closed the stream: the client sees the end.
    };
    tokio::select! {
        ((), ()) = async { tokio::join!(up, down) } => {}
        () = link.gone.cancelled() => {}
    }
    link.close(stream);
}

impl SandboxProvider for Arc<RemoteProvider> {
    fn name(&self) -> &'static str {
        "runner"
    }

    fn start<'a>(&'a self, spec: &'a MachineSpec) -> BoxFut<'a, ProviderResult<Started>> {
        Box::pin(async move {
            let runner = spec.runner.ok_or_else(|| ProviderError::Host("the machine names no runner".into()))?;
            self.remember(spec, runner);
            let link = self.link(runner).ok_or_else(|| offline(runner))?;
            link.call(Call::Start { spec: WireSpec::from(spec) }, START_TIMEOUT).await.map_err(ProviderError::Host)?;
            // The machine's own endpoint is an address on the runner's host, not one anybody else reaches.
            Ok(Started { url: None })
        })
    }

    fn reattach<'a>(&'a self, spec: &'a MachineSpec) -> BoxFut<'a, ProviderResult<bool>> {
        Box::pin(async move {
            let runner = spec.runner.ok_or_else(|| ProviderError::Host("the machine names no runner".into()))?;
            self.remember(spec, runner);
            let Some(link) = self.link(runner) else {
                // Reattached when the runner dials again (`ready`).
                return Err(offline(runner));
            };
            match link.call(Call::Reattach { spec: WireSpec::from(spec) }, CALL_TIMEOUT).await {
                Ok(v) => Ok(v == Value::Bool(true)),
                Err(e) => Err(ProviderError::Host(e)),
            }
        })
    }

    fn set_network<'a>(&'a self, id: Uuid, policy: &'a NetworkPolicy) -> BoxFut<'a, ProviderResult<()>> {
        Box::pin(async move {
            if let Some(p) = mutex(&self.machines).get_mut(&id)
                && let Some(spec) = p.spec.as_mut()
            {
                spec.network = policy.into();
            }
            self.call(id, Call::SetNetwork { id, network: policy.into() }, CALL_TIMEOUT).await.map(|_| ())
        })
    }

    fn stop(&self, id: Uuid) -> BoxFut<'_, ()> {
        Box::pin(async move {
            if let Err(e) = self.call(id, Call::Stop { id }, CALL_TIMEOUT).await {
                tracing::warn!(sandbox = %id, "stop on the runner: {e}");
            }
        })
    }

    fn checkpoint(&self, id: Uuid) -> BoxFut<'_, ProviderResult<CheckpointInfo>> {
        Box::pin(async move {
            let v = self.call(id, Call::Checkpoint { id }, START_TIMEOUT).await?;
            serde_json::from_value(v).map_err(|e| ProviderError::Host(format!("bad checkpoint from the runner: {e}")))
        })
    }

    fn restore(&self, id: Uuid) -> BoxFut<'_, ProviderResult<()>> {
        Box::pin(async move { self.call(id, Call::Restore { id }, START_TIMEOUT).await.map(|_| ()) })
    }

    fn destroy(&self, id: Uuid) -> BoxFut<'_, ()> {
        Box::pin(async move {
            if let Err(e) = self.call(id, Call::Destroy { id }, CALL_TIMEOUT).await {
                tracing::warn!(sandbox = %id, "destroy on the runner: {e} (the runner keeps the machine until it stops by itself)");
            }
            self.forget(id);
        })
    }

    fn state(&self, id: Uuid) -> BoxFut<'_, MachineState> {
        Box::pin(async move {
            match self.call(id, Call::State { id }, CALL_TIMEOUT).await {
                Ok(Value::String(s)) if s == "running" => MachineState::Running,
                Ok(Value::String(s)) if s == "missing" => MachineState::Missing,
                // Unreachable: its processes are not running as far as anyone here can tell.
                _ => MachineState::Stopped,
            }
        })
    }

    fn served(&self) -> Vec<Uuid> {
        let links = mutex(&self.links);
        mutex(&self.machines).iter().filter(|(_, p)| links.contains_key(&p.runner)).map(|(id, _)| *id).collect()
    }

    /// A runner's machine is served by the socket, not by this server's processes.
    fn let_go(&self, _id: Uuid) {}

    fn supervisor(&self, id: Uuid) -> Supervisor {
        Supervisor::new(self.socket(id))
    }

    fn exec_offline<'a>(
        &'a self,
        id: Uuid,
        argv: &'a [String],
        env: &'a BTreeMap<String, String>,
    ) -> BoxFut<'a, ProviderResult<ExecOutput>> {
        Box::pin(async move {
            let call = Call::ExecOffline { id, argv: argv.to_vec(), env: env.clone() };
            let v = self.call(id, call, CALL_TIMEOUT).await?;
            let wire: WireExec =
                serde_json::from_value(v).map_err(|e| ProviderError::Host(format!("bad exec output: {e}")))?;
            ExecOutput::try_from(wire).map_err(ProviderError::Host)
        })
    }
}

/// The machines of this server's host and of its runners behind one
/// provider: a machine placed on a runner goes to it, every other to `host`.
pub struct Routed {
    pub host: Arc<dyn SandboxProvider>,
    pub remote: Arc<RemoteProvider>,
}

impl Routed {
    fn pick(&self, id: Uuid) -> &dyn SandboxProvider {
        if self.remote.runner_of(id).is_some() { &self.remote } else { self.host.as_ref() }
    }

    fn pick_spec(&self, spec: &MachineSpec) -> &dyn SandboxProvider {
        if spec.runner.is_some() { &self.remote } else { self.host.as_ref() }
    }
}

impl SandboxProvider for Routed {
    fn name(&self) -> &'static str {
        self.host.name()
    }
    fn start<'a>(&'a self, spec: &'a MachineSpec) -> BoxFut<'a, ProviderResult<Started>> {
        self.pick_spec(spec).start(spec)
    }
    fn reattach<'a>(&'a self, spec: &'a MachineSpec) -> BoxFut<'a, ProviderResult<bool>> {
        self.pick_spec(spec).reattach(spec)
    }
    fn set_network<'a>(&'a self, id: Uuid, policy: &'a NetworkPolicy) -> BoxFut<'a, ProviderResult<()>> {
        self.pick(id).set_network(id, policy)
    }
    fn stop(&self, id: Uuid) -> BoxFut<'_, ()> {
        self.pick(id).stop(id)
    }
    fn checkpoint(&self, id: Uuid) -> BoxFut<'_, ProviderResult<CheckpointInfo>> {
        self.pick(id).checkpoint(id)
    }
    fn restore(&self, id: Uuid) -> BoxFut<'_, ProviderResult<()>> {
        self.pick(id).restore(id)
    }
    fn destroy(&self, id: Uuid) -> BoxFut<'_, ()> {
        self.pick(id).destroy(id)
    }
    fn state(&self, id: Uuid) -> BoxFut<'_, MachineState> {
        self.pick(id).state(id)
    }
    fn served(&self) -> Vec<Uuid> {
        let mut all = self.host.served();
        all.extend(self.remote.served());
        all
    }
    fn let_go(&self, id: Uuid) {
        self.pick(id).let_go(id)
    }
    fn supervisor(&self, id: Uuid) -> Supervisor {
        self.pick(id).supervisor(id)
    }
    fn exec_offline<'a>(
        &'a self,
        id: Uuid,
        argv: &'a [String],
        env: &'a BTreeMap<String, String>,
    ) -> BoxFut<'a, ProviderResult<ExecOutput>> {
        self.pick(id).exec_offline(id, argv, env)
    }
}
