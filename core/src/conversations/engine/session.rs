//! The agent process of a conversation: kept by the machine's `sandboxd`
//! under one name per conversation, so it outlives server restarts, and
//! spoken to over ACP through an attachment.

use std::collections::BTreeMap;
use std::path::Path;

use sandboxd::proto::SpawnRequest;
use uuid::Uuid;

use crate::acp::attach::{self, ResumeOffset};
use crate::acp::client::{AcpClient, Handshake, SessionSetup, WORKSPACE};
use crate::acp::types::ConfigOption;
use crate::agents::Agent;
use crate::config::Config;
use crate::provider::Supervisor;
use crate::runtimes::{self, Launch, LaunchInputs};
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
    /// Which model credential the process was started with (a fingerprint);
    /// `None` for a process taken over after a restart (not known, kept).
    pub credential: Option<String>,
    /// The runtime's config options as it last listed them (`None`: it offers none, as Gemini).
    pub options: Option<Vec<ConfigOption>>,
    /// The model in force on a runtime without a `model` option (its legacy `models` list, then
    /// what `session/set_model` set); `None` when not known.
    pub model: Option<String>,
}

/// The agent program to start.
#[derive(Debug, Clone)]
pub struct Program {
    pub argv: Vec<String>,
    /// Added to the machine's environment for this process only (the model credential).
    pub env: BTreeMap<String, String>,
    /// Fingerprint of that credential.
    pub credential: String,
    /// What `session/new` carries: the agent's MCP servers, the runtime's settings.
    pub setup: SessionSetup,
}

/// The supervisor's name for a conversation's agent process.
pub fn process_name(conversation_id: Uuid) -> String {
    format!("conv-{}", conversation_id.simple())
}

/// The agent program: the agent's `command` when it has one (DESIGN section
/// 5), else its runtime as installed under `runtimes.dir`. `model`: the
/// conversation's, else the agent's.
pub fn launch(agent: &Agent, model: Option<&str>, config: &Config) -> Result<Launch, String> {
    let name = agent.spec.runtime.as_str();
    let system_prompt = agent.spec.system_prompt.as_deref().filter(|p| !p.trim().is_empty());
    if let Some(argv @ [first, ..]) = agent.spec.command.as_deref()
        && !first.is_empty()
    {
        let session_meta = runtimes::launch::session_meta(name, system_prompt);
        return Ok(Launch { argv: argv.to_vec(), env: BTreeMap::new(), session_meta });
    }
    let Some(pinned) = runtimes::pinned(name) else {
        return Err(format!("runtime {name} needs the agent's command"));
    };
    if runtimes::installed_version(Path::new(&config.runtimes.dir), pinned).is_none() {
        return Err(format!(
            "runtime {name} is not installed on this server: an operator runs `acs runtimes install {name}`"
        ));
    }
    let inputs = LaunchInputs { model, system_prompt, base_urls: &config.inference.base_urls };
    Ok(runtimes::launch(pinned, inputs))
}

/// Starts the agent process under `name` (replacing a finished one) and opens a session.
pub async fn open(
    sup: &Supervisor,
    name: &str,
    (sandbox_id, machine_started): (Uuid, Option<i64>),
    program: Program,
    env: &BTreeMap<String, String>,
) -> Result<(Session, Handshake), String> {
    let name = name.to_owned();
    // A process of a session we no longer hold (a crash before its session was recorded) is stopped.
    if sup.list().await.map_err(|e| e.to_string())?.iter().any(|p| p.name == name && p.running) {
        let _ = sup.kill(&name, libc::SIGKILL).await;
        wait_stopped(sup, &name).await;
    }
    let req = SpawnRequest { name: name.clone(), argv: program.argv, cwd: Some(WORKSPACE.into()), env: program.env };
    sup.spawn(&req).await.map_err(|e| format!("starting the agent failed: {e}"))?;
    let attachment = sup.attach(&name, 0, 0).await.map_err(|e| e.to_string())?;
    let (transport, resume) = attach::transport(attachment);
    let (client, handshake) = AcpClient::start(transport, env, program.setup)
        .await
        .map_err(|e| format!("the agent did not start a session: {e}"))?;
    let credential = Some(program.credential);
    let options = handshake.session.config_options.clone();
    let model = handshake.session.models.as_ref().and_then(|m| m.get("currentModelId")).and_then(|m| m.as_str());
    let session =
        Session { client, resume, sandbox_id, machine_started, credential, options, model: model.map(str::to_owned) };
    Ok((session, handshake))
}

/// Takes over a running agent process after a server restart, reading its
/// stdout from `offset` (where the log's events stop). `options`: the list
/// the runtime advertised before the prompt (as the conversation shows it).
pub async fn resume(
    sup: &Supervisor,
    conversation_id: Uuid,
    (sandbox_id, machine_started): (Uuid, Option<i64>),
    session_id: String,
    offset: u64,
    options: Option<Vec<ConfigOption>>,
) -> Result<Session, String> {
    let attachment = sup.attach(&process_name(conversation_id), offset, 0).await.map_err(|e| e.to_string())?;
    let (transport, resume) = attach::transport(attachment);
    // Ids above any the earlier connection used: micros since the epoch only grow.
    let first_id = u64::try_from(now_micros()).unwrap_or(1);
    let client = AcpClient::resume(transport, session_id, first_id);
    Ok(Session { client, resume, sandbox_id, machine_started, credential: None, options, model: None })
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

/// Stops the kept process `name` (terminate, interrupt that went unanswered).
pub async fn kill(sup: &Supervisor, name: &str) {
    if sup.kill(name, libc::SIGKILL).await.is_ok() {
        wait_stopped(sup, name).await;
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

#[cfg(test)]
mod tests {
    use serde_json::json;
    use time::OffsetDateTime;

    use super::*;
    use crate::agents::{AgentCreate, AgentSpec};

    fn agent(body: serde_json::Value) -> Agent {
        let spec = AgentSpec::try_from(serde_json::from_value::<AgentCreate>(body).unwrap()).unwrap();
        let now = OffsetDateTime::now_utc();
        Agent { id: Uuid::new_v4(), spec, version: 1, inserted_at: now, updated_at: now }
    }

    fn config_with_runtimes(dir: &Path) -> Config {
        let mut c = Config::default();
        c.runtimes.dir = dir.display().to_string();
        c.inference.base_urls.google = "http://gw".into();
        c
    }

    #[test]
    fn the_agents_command_overrides_the_runtime() {
        let c = config_with_runtimes(Path::new("/nonexistent"));
        let l = launch(&agent(json!({"name": "a", "runtime": "gemini", "command": ["my-gemini", "--acp"]})), None, &c);
        assert_eq!(
            l.unwrap(),
            Launch { argv: vec!["my-gemini".into(), "--acp".into()], env: BTreeMap::new(), session_meta: None }
        );
    }

    #[test]
    fn a_named_runtime_runs_when_installed() {
        let dir = std::env::temp_dir().join(format!("acs-session-{}", Uuid::new_v4().simple()));
        let c = config_with_runtimes(&dir);
        let gemini = agent(json!({"name": "a", "runtime": "gemini"}));
        let e = launch(&gemini, None, &c).unwrap_err();
        assert!(e.contains("`acs runtimes install gemini`"), "{e}");
        std::fs::create_dir_all(dir.join("gemini")).unwrap();
        std::fs::write(dir.join("gemini").join(runtimes::MARKER), "@google/gemini-cli@0.61.0\n").unwrap();
        let l = launch(&gemini, Some("google/gemini-2.5-pro"), &c).unwrap();
        assert_eq!(l.argv.last().map(String::as_str), Some("gemini-2.5-pro"));
        assert_eq!(l.env["GOOGLE_GEMINI_BASE_URL"], "http://gw");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
