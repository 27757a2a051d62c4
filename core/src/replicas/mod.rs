//! Servers sharing one database. Each running server keeps a row in
//! `servers`, refreshed every `HEARTBEAT` and removed at a clean stop; one
//! silent for `SILENCE` is gone.
//!
//! What lives in one server's memory has an owner column naming it: a
//! machine (`sandboxes.server_id`: its egress proxy and supervisor
//! connection, set when this server builds or wakes it) and a conversation's
//! running turn (`conversations.server_id`: the turn's task, its agent
//! attachment and open permission requests, set by the claim that started
//! the turn). Whatever a gone server owned is taken over by another, one
//! compare-and-set per row: at a server's start (so a restart picks up where
//! the last run stopped), then at every heartbeat (so the turns of a server
//! that died go on elsewhere). A server that starts leaves what live
//! replicas own alone.
//!
//! An interrupt or a permission answer that reaches a replica other than the
//! turn's owner is sent to the owner over `acs_control` (PostgreSQL's
//! NOTIFY; on SQLite one server owns everything).

pub mod store;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::boxed::BoxFuture;
use crate::db::Backend;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::time_fmt::now_micros;

pub use store::Owned;
use store::{adopt, orphans};

/// How often a server says it is alive, and looks for work to take over.
pub const HEARTBEAT: Duration = Duration::from_secs(3);
/// A server silent this long is gone: what it owned is taken over.
pub const SILENCE: Duration = Duration::from_secs(15);

/// What the layers above do when this server takes work over, lets a
/// machine go, or gets a control request; the server assembly puts it in
/// the state's slots (replicas sit below the machines and turns they move).
pub struct TakeOver {
    /// Serve a machine a gone server owned.
    pub machine: for<'a> fn(&'a AppState, Uuid) -> BoxFuture<'a, ()>,
    /// Follow a running turn a gone server ran.
    pub turn: fn(AppState, Uuid) -> BoxFuture<'static, ()>,
    /// Apply a control request another replica addressed to this server.
    pub control: fn(AppState, Control) -> BoxFuture<'static, ()>,
    /// The machines this server serves now.
    pub served: fn(&AppState) -> Vec<Uuid>,
    /// Stop serving a machine (its proxy closes; the machine runs on).
    pub let_go: fn(&AppState, Uuid),
}

/// A request for the turn that another replica runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Control {
    Interrupt { conversation_id: Uuid },
    Answer { conversation_id: Uuid, request_id: String, option_id: String },
}

/// The live replica, other than this one, that runs the conversation's turn.
/// Always `None` on SQLite (one server).
pub async fn turn_elsewhere(state: &AppState, conversation_id: Uuid) -> ApiResult<Option<Uuid>> {
    if state.db.backend != Backend::Postgres {
        return Ok(None);
    }
    let owner = store::live_owner(&state.db, Owned::Turn, conversation_id, now_micros()).await?;
    Ok(owner.filter(|o| *o != state.events.server()))
}

/// Sends a control request to the replica that runs the turn.
pub async fn forward(state: &AppState, to: Uuid, control: &Control) -> ApiResult<()> {
    let body = serde_json::to_string(control).map_err(|_| ApiError::internal())?;
    state.events.notify_control(&state.db, to, &body).await?;
    Ok(())
}

/// Where this process's id means something: the host's boot and the PID
/// namespace. Empty when either cannot be read (then only silence counts).
pub fn pid_scope() -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let ns = std::fs::read_link("/proc/self/ns/pid").map(|p| p.display().to_string()).unwrap_or_default();
    if boot.trim().is_empty() || ns.is_empty() { String::new() } else { format!("{}/{ns}", boot.trim()) }
}

/// Whether a process of this PID namespace exists (unknown counts as yes).
fn process_exists(pid: i64) -> bool {
    let Ok(pid) = i32::try_from(pid) else { return true };
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let found = unsafe { libc::kill(pid, 0) } == 0;
    found || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// The servers alive now by the rules above (seen within the silence, and
/// for one of this host and PID namespace, its process still there), each
/// with whether it runs here: read by operator tools with no server of their own.
pub async fn alive(db: &crate::db::Db) -> Result<Vec<(Uuid, bool)>, sqlx::Error> {
    let scope = pid_scope();
    let recent = store::recent(db, now_micros()).await?;
    Ok(recent
        .into_iter()
        .filter_map(|(id, their_scope, pid)| {
            let here = !scope.is_empty() && their_scope == scope;
            (!here || process_exists(pid)).then_some((id, here))
        })
        .collect())
}

async fn register(state: &AppState) -> Result<(), sqlx::Error> {
    let pid = i64::from(std::process::id());
    store::register(&state.db, state.events.server(), now_micros(), &pid_scope(), pid).await
}

/// Servers of this host and PID namespace whose process is gone: gone now,
/// without waiting for their silence (a server killed and started again
/// takes its machines back at once).
async fn forget_the_dead(state: &AppState) {
    let scope = pid_scope();
    if scope.is_empty() {
        return;
    }
    for (server, pid) in store::neighbours(&state.db, state.events.server(), &scope).await.unwrap_or_default() {
        if !process_exists(pid) {
            tracing::info!("server {server} (process {pid}) is gone");
            if let Err(e) = store::forget(&state.db, server).await {
                tracing::warn!("replicas: the row of gone server {server} stays: {e}");
            }
        }
    }
}

/// Takes over the machines, then the running turns, of servers that are gone.
/// Machines first: a turn is followed through its machine's supervisor.
async fn take_over(state: &AppState) {
    let Some(handlers) = state.get::<TakeOver>() else { return };
    let me = state.events.server();
    forget_the_dead(state).await;
    for kind in [Owned::Machine, Owned::Turn] {
        let found = match orphans(&state.db, kind, now_micros()).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!("replicas: could not look for {kind:?} rows to take over: {e}");
                continue;
            }
        };
        for (id, from) in found {
            if !matches!(adopt(&state.db, kind, id, &from, me).await, Ok(true)) {
                continue;
            }
            if !from.is_empty() {
                tracing::info!("taking over {kind:?} {id} from server {from}");
            }
            match kind {
                Owned::Machine => (handlers.machine)(state, id).await,
                Owned::Turn => {
                    tokio::spawn((handlers.turn)(state.clone(), id));
                }
            }
        }
    }
}

/// Stops serving the machines this server no longer owns: another server
/// stopped, reset or woke them, or took them over while this one was
/// silent. Their proxies close, so their addresses are free again.
async fn let_go_of_others(state: &AppState) {
    let Some(handlers) = state.get::<TakeOver>() else { return };
    // Served first: a machine starts only after its row names its owner, so
    // one served before the read below is in what the read finds.
    let served = (handlers.served)(state);
    let owned = match store::owned_by(&state.db, Owned::Machine, state.events.server()).await {
        Ok(owned) => owned.into_iter().collect::<std::collections::HashSet<_>>(),
        Err(e) => return tracing::warn!("replicas: this server's machines not read: {e}"),
    };
    for id in served.into_iter().filter(|id| !owned.contains(id)) {
        tracing::info!(sandbox = %id, "no longer this server's machine: its proxy closes here");
        (handlers.let_go)(state, id);
    }
}

/// At start: this server is alive, and takes over what no live server owns.
pub async fn start(state: &AppState) -> Result<(), sqlx::Error> {
    register(state).await?;
    take_over(state).await;
    Ok(())
}

/// Until shutdown: the heartbeat, the takeover of what silent servers
/// owned, and control requests from other replicas. At shutdown the
/// server's row goes, so a successor takes its work over at once.
pub async fn run(state: AppState) {
    let me = state.events.server();
    let mut controls = state.events.subscribe_controls();
    let mut tick = tokio::time::interval(HEARTBEAT);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = state.shutdown.cancelled() => break,
            _ = tick.tick() => {
                match store::beat(&state.db, me, now_micros()).await {
                    Ok(true) => {}
                    // Taken for gone (its row removed) while it could not write: it is back.
                    Ok(false) => if let Err(e) = register(&state).await {
                        tracing::warn!("replicas: this server's row not written again: {e}");
                    },
                    Err(e) => tracing::warn!("replicas: heartbeat not written: {e}"),
                }
                take_over(&state).await;
                let_go_of_others(&state).await;
            }
            body = controls.recv() => match body {
                Ok(body) => match serde_json::from_str::<Control>(&body) {
                    Ok(control) => match state.get::<TakeOver>() {
                        Some(handlers) => {
                            tokio::spawn((handlers.control)(state.clone(), control));
                        }
                        None => tracing::warn!("replicas: a control request and nothing to apply it"),
                    },
                    Err(e) => tracing::warn!("replicas: unreadable control request {body:?}: {e}"),
                },
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!("replicas: {n} control requests dropped");
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            },
        }
    }
    if let Some(handlers) = state.get::<TakeOver>() {
        for id in (handlers.served)(&state) {
            (handlers.let_go)(&state, id);
        }
    }
    if let Err(e) = store::deregister(&state.db, me, now_micros()).await {
        tracing::warn!("replicas: this server's row not removed: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_missing_process_counts_as_gone() {
        assert!(process_exists(i64::from(std::process::id())));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = i64::from(child.id());
        child.wait().unwrap();
        assert!(!process_exists(pid), "a reaped child is gone");
        assert!(process_exists(0) && process_exists(-5) && process_exists(i64::MAX), "unknown ids count as alive");
        assert!(pid_scope().contains("pid:["), "{}", pid_scope());
    }

    #[test]
    fn control_requests_round_trip_as_json() {
        let id = Uuid::new_v4();
        let answer = Control::Answer { conversation_id: id, request_id: "7".into(), option_id: "allow".into() };
        let text = serde_json::to_string(&answer).unwrap();
        assert!(text.contains(r#""action":"answer""#), "{text}");
        assert_eq!(serde_json::from_str::<Control>(&text).unwrap(), answer);
        let interrupt = Control::Interrupt { conversation_id: id };
        assert_eq!(serde_json::from_str::<Control>(&serde_json::to_string(&interrupt).unwrap()).unwrap(), interrupt);
    }
}
