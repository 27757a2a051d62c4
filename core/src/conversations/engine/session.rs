//! The agent process of a conversation: kept by the machine's `sandboxd`
//! under one name per conversation, so it outlives server restarts, and
//! spoken to over ACP through an attachment.

use std::collections::BTreeMap;

use sandboxd::proto::SpawnRequest;
use uuid::Uuid;

use crate::acp::attach::{self, ResumeOffset};
use crate::acp::client::{AcpClient, Handshake, WORKSPACE};
use crate::agents::Agent;
use crate::provider::Supervisor;
use crate::time_fmt::now_micros;

/// A live ACP session with the conversation's agent process.
#[derive(Debug)]
pub struct Session {
    pub client: AcpClient,
    /// Where stdout has been read up to (saved with the events read from it).
    pub resume: ResumeOffset,
    /// The machine the process runs on, and when it (last) started: a new
    /// machine, or the same one woken, needs a new session.
    pub sandbox_id: Uuid,
    pub machine_started: Option<i64>,
}

/// The supervisor's name for a conversation's agent process.
pub fn process_name(conversation_id: Uuid) -> String {
    format!("conv-{}", conversation_id.simple())
}

/// The agent program's argv: the agent's `command`. The named runtimes get
/// their installed programs in the runtimes issue; until then they too need
/// a `command`.
pub fn argv(agent: &Agent) -> Result<Vec<String>, String> {
    match agent.spec.command.as_deref() {
        Some([first, ..]) if !first.is_empty() => Ok(agent.spec.command.clone().unwrap_or_default()),
        _ => Err(format!("runtime {} has no agent program installed on this server", agent.spec.runtime.as_str())),
    }
}

/// Starts the agent process (replacing a finished one) and opens a session.
pub async fn open(
    sup: &Supervisor,
    conversation_id: Uuid,
    (sandbox_id, machine_started): (Uuid, Option<i64>),
    argv: Vec<String>,
    env: &BTreeMap<String, String>,
) -> Result<(Session, Handshake), String> {
    let name = process_name(conversation_id);
    // A process of a session we no longer hold (a crash before its session was recorded) is stopped.
    if sup.list().await.map_err(|e| e.to_string())?.iter().any(|p| p.name == name && p.running) {
        let _ = sup.kill(&name, libc::SIGKILL).await;
        wait_stopped(sup, &name).await;
    }
    let req = SpawnRequest { name: name.clone(), argv, cwd: Some(WORKSPACE.into()), env: BTreeMap::new() };
    sup.spawn(&req).await.map_err(|e| format!("starting the agent failed: {e}"))?;
    let attachment = sup.attach(&name, 0, 0).await.map_err(|e| e.to_string())?;
    let (transport, resume) = attach::transport(attachment);
    let (client, handshake) =
        AcpClient::start(transport, env).await.map_err(|e| format!("the agent did not start a session: {e}"))?;
    Ok((Session { client, resume, sandbox_id, machine_started }, handshake))
}

/// Takes over a running agent process after a server restart, reading its
/// stdout from `offset` (where the log's events stop).
pub async fn resume(
    sup: &Supervisor,
    conversation_id: Uuid,
    (sandbox_id, machine_started): (Uuid, Option<i64>),
    session_id: String,
    offset: u64,
) -> Result<Session, String> {
    let attachment = sup.attach(&process_name(conversation_id), offset, 0).await.map_err(|e| e.to_string())?;
    let (transport, resume) = attach::transport(attachment);
    // Ids above any the earlier connection used: micros since the epoch only grow.
    let first_id = u64::try_from(now_micros()).unwrap_or(1);
    let client = AcpClient::resume(transport, session_id, first_id);
    Ok(Session { client, resume, sandbox_id, machine_started })
}

/// The exit code of a finished agent process, if it exited with one.
pub async fn exit_code(sup: &Supervisor, conversation_id: Uuid) -> Option<i64> {
    let name = process_name(conversation_id);
    for _ in 0..20 {
        if let Ok(list) = sup.list().await
            && let Some(p) = list.iter().find(|p| p.name == name && !p.running)
        {
            return p.code.map(i64::from).or(p.signal.map(|s| 128 + i64::from(s)));
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    None
}

/// Stops the agent process (terminate, interrupt that went unanswered).
pub async fn kill(sup: &Supervisor, conversation_id: Uuid) {
    let name = process_name(conversation_id);
    if sup.kill(&name, libc::SIGKILL).await.is_ok() {
        wait_stopped(sup, &name).await;
    }
}

async fn wait_stopped(sup: &Supervisor, name: &str) {
    for _ in 0..40 {
        match sup.list().await {
            Ok(list) if list.iter().any(|p| p.name == name && p.running) => {}
            _ => return,
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}
