//! Agents started ahead in warm-pool machines (`sandboxes::pool`): the
//! pool's agent, with the environment and model credential a conversation of
//! that agent would start it with, its ACP session open. The first turn of
//! the conversation that claims the machine takes the process when it would
//! start the very same program (same argv, environment, credential and
//! session setup); otherwise the waiting process is stopped and the turn
//! starts its own, so a claim never runs anything the conversation's own
//! configuration would not.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use serde_json::Value;
use uuid::Uuid;

use super::session::{self, Program, Session};
use crate::agents::Agent;
use crate::boxed::BoxFuture;
use crate::inference::Holder;
use crate::provider::Supervisor;
use crate::runtimes::launch::warm_up as warm_up_argv;
use crate::sandboxes::model::SandboxRow;
use crate::sandboxes::pool::PoolHooks;
use crate::sandboxes::service as machines;
use crate::state::AppState;

/// An agent waiting in a pooled machine.
struct Warm {
    session: Session,
    /// Tells apart the programs it could stand for (a digest, never the values).
    program: String,
    session_id: String,
    options: Option<Value>,
}

/// The agents this server started ahead, by machine.
#[derive(Default)]
struct WarmAgents {
    by_machine: Mutex<HashMap<Uuid, Warm>>,
}

fn agents(state: &AppState) -> std::sync::Arc<WarmAgents> {
    state.get_or_put(WarmAgents::default)
}

fn take(state: &AppState, sandbox_id: Uuid) -> Option<Warm> {
    agents(state).by_machine.lock().unwrap_or_else(PoisonError::into_inner).remove(&sandbox_id)
}

/// The supervisor's name for the agent a pooled machine keeps started.
fn process_name(sandbox_id: Uuid) -> String {
    format!("warm-{}", sandbox_id.simple())
}

/// The pool's hooks as the server registers them.
pub fn hooks() -> PoolHooks {
    PoolHooks {
        warm: |state, row, agent| Box::pin(start_ahead(state, row, agent)),
        retired: |state, id| drop(take(state, id)),
    }
}

/// What a program is, for comparing one started ahead with the one a turn would start.
fn digest(p: &Program) -> String {
    let text = serde_json::json!([p.argv, p.env, p.credential, p.setup.mcp_servers, p.setup.meta]).to_string();
    crate::auth::token::digest(&text)
}

/// Starts `agent` in the pooled machine `row` as a new conversation of it would.
fn start_ahead<'a>(state: &'a AppState, row: &'a SandboxRow, agent: &'a Agent) -> BoxFuture<'a, ()> {
    Box::pin(async move {
        match start(state, row, agent).await {
            Ok(warm) => {
                agents(state).by_machine.lock().unwrap_or_else(PoisonError::into_inner).insert(row.id, warm);
                // The machine is offered for claims once this hook returns, so a claim finds it warmed up.
                warm_up(state, row, agent).await;
            }
            Err(e) => tracing::warn!(sandbox = %row.id, "the warm pool's agent did not start: {e}"),
        }
    })
}

async fn start(state: &AppState, row: &SandboxRow, agent: &Agent) -> Result<Warm, String> {
    let holder = Holder { account_id: row.account_id, sandbox_id: Some(row.id), inference_credential_id: None };
    let inference = crate::inference::resolve(state, &holder, agent).await.map_err(machines::reason)?;
    if let Some(missing) = inference.missing {
        return Err(missing);
    }
    let material = super::agent_material(state, row, inference.credential.as_ref()).await?;
    let (program, auth_env) = super::agent_program(state, agent, None, &material.env, &inference)?;
    let digest = digest(&program);
    let sup = machines::service(state).map_err(machines::reason)?.provider(row).supervisor(row.id);
    let place = (row.id, row.last_resumed_at);
    let (session, handshake) = session::open(&sup, &process_name(row.id), place, program, &auth_env)
        .await
        .map_err(|e| material.redactor.redact_str(&e))?;
    let options = handshake.session.config_options.as_ref().and_then(|o| serde_json::to_value(o).ok());
    Ok(Warm { session, program: digest, session_id: handshake.session.session_id, options })
}

/// Runs the runtime's warm-up command in the machine (`runtimes::launch::warm_up`), when it has
/// one and runs as installed; a failure only costs the first prompt its time.
async fn warm_up(state: &AppState, row: &SandboxRow, agent: &Agent) {
    if agent.spec.command.is_some() {
        return;
    }
    let Some(argv) = warm_up_argv(agent.spec.runtime.as_str()) else { return };
    let Ok(svc) = machines::service(state) else { return };
    let req =
        sandboxd::proto::ExecRequest { argv, timeout_ms: Some(10_000), max_output: Some(4096), ..Default::default() };
    match svc.provider(row).supervisor(row.id).exec(&req).await {
        Ok(out) if out.exit.code == Some(0) => {}
        Ok(out) => tracing::debug!(sandbox = %row.id, code = ?out.exit.code, "the warm agent's warm-up did not answer"),
        Err(e) => tracing::debug!(sandbox = %row.id, "the warm agent's warm-up did not run: {e}"),
    }
}

/// The agent started ahead on the conversation's machine, when it is the very program the
/// turn would start on it now: renamed the conversation's, with its session id and options.
/// Any other waiting agent there is stopped.
pub(super) async fn adopt(
    state: &AppState,
    sup: &Supervisor,
    conversation_id: Uuid,
    (sandbox_id, machine_started): (Uuid, Option<i64>),
    program: &Program,
) -> Option<(Session, String, Option<Value>)> {
    let name = process_name(sandbox_id);
    let warm = take(state, sandbox_id);
    let fits = warm.as_ref().is_some_and(|w| {
        w.program == digest(program)
            && w.session.sandbox_id == sandbox_id
            && w.session.machine_started == machine_started
    });
    let Some(warm) = warm.filter(|_| fits) else {
        // One started ahead for another program (or by a server before a restart) must not linger.
        if sup.list().await.is_ok_and(|list| list.iter().any(|p| p.name == name && p.running)) {
            session::kill(sup, &name).await;
        }
        return None;
    };
    if let Err(e) = sup.rename(&name, &session::process_name(conversation_id)).await {
        tracing::warn!(sandbox = %sandbox_id, "the warm agent could not be handed over: {e}");
        session::kill(sup, &name).await;
        return None;
    }
    Some((warm.session, warm.session_id, warm.options))
}
