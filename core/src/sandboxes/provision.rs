//! Building a new machine, stage by stage (spec 6.1): the machine starts
//! with open egress, then `clone`, `packages`, `network` (the environment's
//! policy applied), `broker` (with brokerage on) and `setup` run in that order, each `started` then `done`
//! or `failed`. Stages with nothing to do are left out; `network` always
//! runs. The whole build has a deadline; the stage it cuts short fails.
//! A quick stage (`network`) is logged once it ends, `started` and its
//! outcome in one write, which the next stage's `started` or `provision`'s
//! `done` carries: a start writes the log fewer times.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

use super::model::SandboxRow;
use super::redact::OutputRedaction;
use super::service::{Material, Sandboxes, log, network_policy};
use crate::environments::{Environment, Repository};
use crate::events::{self, NewEvent, StageState};
use crate::provider::{NetworkPolicy, Supervisor};
use crate::state::AppState;

pub(super) struct Ctx<'a> {
    pub state: &'a AppState,
    pub svc: &'a Sandboxes,
    pub row: &'a SandboxRow,
    pub scope: &'a events::Scope,
    pub env: Option<&'a Environment>,
    pub material: &'a Material,
}

type StageResult = Result<Value, String>;

/// A built machine: its URL, and the stage events not yet written, which
/// go to the log with `provision` `done`.
pub(super) struct Built {
    pub url: Option<String>,
    pub unwritten: Vec<NewEvent>,
}

/// What the log is owed: the stage under way (and whether its `started`
/// is written yet), and events decided but not yet written. Shared with
/// `run`, which writes them when the deadline cuts the build short.
#[derive(Default)]
struct Owed {
    stage: Option<(&'static str, bool)>,
    unwritten: Vec<NewEvent>,
}

fn owed(shared: &Mutex<Owed>) -> std::sync::MutexGuard<'_, Owed> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs every stage; `Ok` when the machine is ready.
pub(super) async fn run(ctx: &Ctx<'_>, deadline: Duration) -> Result<Built, String> {
    let shared = Mutex::new(Owed::default());
    match tokio::time::timeout(deadline, stages(ctx, &shared)).await {
        Ok(outcome) => outcome,
        Err(_) => {
            let error = format!("provisioning passed its deadline of {} s", deadline.as_secs());
            let batch = {
                let mut owed = owed(&shared);
                let mut batch = std::mem::take(&mut owed.unwritten);
                if let Some((name, started_logged)) = owed.stage.take() {
                    if !started_logged {
                        batch.push(NewEvent::stage(name, StageState::Started, &json!({})));
                    }
                    batch.push(NewEvent::stage(name, StageState::Failed, &json!({"error": error})));
                }
                batch
            };
            if !batch.is_empty() {
                log(ctx.state, ctx.scope, &batch).await;
            }
            Err(error)
        }
    }
}

async fn stages(ctx: &Ctx<'_>, shared: &Mutex<Owed>) -> Result<Built, String> {
    // The broker is settled before the machine starts (it must trust the CA
    // from its first process on); its stage reports after `network`.
    let broker = crate::broker::for_machine(ctx.state, super::broker_machine(ctx.row), false).await;
    let machine_broker = match &broker {
        Ok(b) => b.as_ref().map(|(_, b)| b.clone()),
        Err(_) => None,
    };
    if let Ok(b) = &broker {
        super::service::record_ca(ctx.state, ctx.row, b.as_ref().map(|(id, _)| *id)).await?;
    }
    if let Err(e) = &broker {
        // Nothing runs unbrokered that should run brokered: fail before any machine.
        let error = e.to_string();
        run_stage(ctx, shared, "broker", Logged::AsItGoes, async { Err::<Value, _>(error) }).await?;
    }
    let env = ctx.env;
    let repos = env.map(|e| e.repositories.as_slice()).unwrap_or_default();
    let policy = network_policy(env);
    // The clone and packages stages need the open network; without them nothing runs in the
    // machine before `network`, so it starts under its final policy and that stage changes
    // nothing (an unrestricted machine's nftables set entry is then made beside its disk).
    let builds = !repos.is_empty() || env.is_some_and(|e| !e.packages.is_empty());
    let first = if builds { NetworkPolicy::Open } else { policy.clone() };
    let spec = ctx.svc.spec(ctx.row, ctx.material.env.clone(), first, machine_broker);
    let started =
        ctx.svc.provider(ctx.row).start(&spec).await.map_err(|e| ctx.material.redactor.redact_str(&e.to_string()))?;
    let sup = ctx.svc.provider(ctx.row).supervisor(ctx.row.id);
    if !repos.is_empty() {
        run_stage(ctx, shared, "clone", Logged::AsItGoes, clone(ctx, &sup, repos)).await?;
    }
    if let Some(e) = env.filter(|e| !e.packages.is_empty()) {
        run_stage(ctx, shared, "packages", Logged::AsItGoes, packages(ctx, &sup, &e.packages)).await?;
    }
    run_stage(ctx, shared, "network", Logged::OnceItEnds, async {
        ctx.svc.provider(ctx.row).set_network(ctx.row.id, &policy).await.map_err(|e| e.to_string())?;
        Ok(json!({"networking_type": if policy == NetworkPolicy::Unrestricted { "unrestricted" } else { "limited" }}))
    })
    .await?;
    if let Ok(Some((ca_id, _))) = &broker {
        run_stage(ctx, shared, "broker", Logged::AsItGoes, async {
            crate::broker::reachable(ctx.state).await.map_err(|e| e.to_string())?;
            Ok(json!({"ca_id": ca_id}))
        })
        .await?;
    }
    if let Some(e) = env.filter(|e| !e.setup_script.trim().is_empty()) {
        run_stage(ctx, shared, "setup", Logged::AsItGoes, setup(ctx, &sup, e)).await?;
    }
    Ok(Built { url: started.url, unwritten: std::mem::take(&mut owed(shared).unwritten) })
}

/// How a stage is logged: as it goes (`started` before the work), or once
/// it ends, for a stage of a few milliseconds (`started` and `done` wait in
/// `unwritten` for the next write; a failure is written at once).
#[derive(Clone, Copy, PartialEq)]
enum Logged {
    AsItGoes,
    OnceItEnds,
}

/// Runs one stage; any unwritten events go to the log before this stage's.
async fn run_stage(
    ctx: &Ctx<'_>,
    shared: &Mutex<Owed>,
    name: &'static str,
    logged: Logged,
    work: impl Future<Output = StageResult>,
) -> Result<(), String> {
    let as_it_goes = logged == Logged::AsItGoes;
    let before = {
        let mut owed = owed(shared);
        owed.stage = Some((name, as_it_goes));
        as_it_goes.then(|| {
            owed.unwritten.push(NewEvent::stage(name, StageState::Started, &json!({})));
            std::mem::take(&mut owed.unwritten)
        })
    };
    if let Some(batch) = before {
        log(ctx.state, ctx.scope, &batch).await;
    }
    let outcome = work.await.map_err(|error| ctx.material.redactor.redact_str(&error));
    let after = {
        let mut owed = owed(shared);
        owed.stage = None;
        if !as_it_goes {
            owed.unwritten.push(NewEvent::stage(name, StageState::Started, &json!({})));
        }
        let end = match &outcome {
            Ok(data) => NewEvent::stage(name, StageState::Done, data),
            Err(error) => NewEvent::stage(name, StageState::Failed, &json!({"error": error})),
        };
        owed.unwritten.push(end);
        (as_it_goes || outcome.is_err()).then(|| std::mem::take(&mut owed.unwritten))
    };
    if let Some(batch) = after {
        log(ctx.state, ctx.scope, &batch).await;
    }
    outcome.map(drop).map_err(|error| format!("{name} failed: {error}"))
}

/// Runs a command in the machine, its output going to the event log
/// (redacted) as it comes; an error unless it exits 0 in time.
async fn exec_logged(
    ctx: &Ctx<'_>,
    sup: &Supervisor,
    argv: Vec<String>,
    env: BTreeMap<String, String>,
    timeout: Option<Duration>,
) -> Result<(), String> {
    let req = sandboxd::proto::ExecRequest {
        argv,
        cwd: Some("/workspace".into()),
        env,
        stdin: None,
        timeout_ms: timeout.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        max_output: None,
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(sandboxd::proto::Stream, Vec<u8>)>();
    let writer = async {
        // Output comes in pieces that may cut a secret (or a char) in two: each stream holds back
        // what could begin one until the next piece shows.
        let mut stdout = OutputRedaction::new(&ctx.material.redactor);
        let mut stderr = OutputRedaction::new(&ctx.material.redactor);
        while let Some((stream, bytes)) = rx.recv().await {
            let (name, text) = match stream {
                sandboxd::proto::Stream::Stdout => ("stdout", stdout.push(&bytes)),
                sandboxd::proto::Stream::Stderr => ("stderr", stderr.push(&bytes)),
            };
            write_output(ctx, name, &text).await;
        }
        write_output(ctx, "stdout", &stdout.finish()).await;
        write_output(ctx, "stderr", &stderr.finish()).await;
    };
    let exec = async {
        let exit = sup.exec_streaming(&req, |stream, bytes| {
            let _ = tx.send((stream, bytes.to_vec()));
        });
        let exit = exit.await;
        drop(tx);
        exit
    };
    let (exit, ()) = tokio::join!(exec, writer);
    let exit = exit.map_err(|e| format!("the supervisor failed: {e}"))?;
    if exit.timed_out {
        return Err(format!("timed out after {} s", timeout.map(|t| t.as_secs()).unwrap_or_default()));
    }
    match exit.code {
        Some(0) => Ok(()),
        Some(code) => Err(format!("exited with status {code}")),
        None => Err(format!("killed by signal {}", exit.signal.unwrap_or_default())),
    }
}

async fn write_output(ctx: &Ctx<'_>, stream: &'static str, text: &str) {
    if text.is_empty() {
        return;
    }
    if let Err(e) = events::output(ctx.state, ctx.scope, stream, text).await {
        tracing::error!("output event not written: {e}");
    }
}

/// Where a repository lands: its `mount_path` under `/workspace` unless it
/// already names a writable place of the machine.
pub fn clone_target(mount_path: &str) -> String {
    if mount_path == "/workspace" || mount_path.starts_with("/workspace/") || mount_path.starts_with("/home/agent/") {
        mount_path.to_owned()
    } else {
        format!("/workspace{mount_path}")
    }
}

/// `git clone` arguments; the token never appears here (it goes in the
/// command's environment as an HTTP header, so git writes it nowhere).
pub fn clone_argv(repo: &Repository) -> Vec<String> {
    let mut argv = vec!["git".to_owned(), "clone".to_owned(), "--quiet".to_owned()];
    if let Some(r) = &repo.git_ref {
        argv.extend(["-b".to_owned(), r.clone()]);
    }
    argv.extend(["--".to_owned(), repo.url.clone(), clone_target(&repo.mount_path)]);
    argv
}

/// Git configuration through the environment: HTTPS basic auth with the token.
pub fn clone_env(token: Option<&str>) -> BTreeMap<String, String> {
    let mut env = BTreeMap::from([("GIT_TERMINAL_PROMPT".to_owned(), "0".to_owned())]);
    if let Some(token) = token {
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"));
        env.insert("GIT_CONFIG_COUNT".into(), "1".into());
        env.insert("GIT_CONFIG_KEY_0".into(), "http.extraHeader".into());
        env.insert("GIT_CONFIG_VALUE_0".into(), format!("Authorization: Basic {basic}"));
    }
    env
}

async fn clone(ctx: &Ctx<'_>, sup: &Supervisor, repos: &[Repository]) -> StageResult {
    for repo in repos {
        let token = match &repo.secret_key {
            Some(key) => Some(
                ctx.material.secrets.get(key).ok_or_else(|| format!("secret `{key}` for {} is not set", repo.url))?,
            ),
            None => None,
        };
        exec_logged(ctx, sup, clone_argv(repo), clone_env(token.map(String::as_str)), None)
            .await
            .map_err(|e| format!("git clone {}: {e}", repo.url))?;
    }
    Ok(json!({"repositories": repos.len()}))
}

/// One command per package manager. `apt` packages come from the host (the
/// `local` provider shares the host's read-only `/usr`), so they are checked,
/// not installed; the others install into the agent's home.
pub fn package_commands(packages: &serde_json::Map<String, Value>) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut out = Vec::new();
    for (manager, list) in packages {
        let names: Vec<String> = match list {
            Value::Array(items) => items.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
            _ => return Err(format!("packages.{manager} must be a list of names")),
        };
        if let Some(bad) = names.iter().find(|n| n.is_empty() || n.starts_with('-') || n.contains(char::is_whitespace))
        {
            return Err(format!("packages.{manager}: `{bad}` is not a package name"));
        }
        if names.is_empty() {
            continue;
        }
        let mut argv: Vec<String> = match manager.as_str() {
            "apt" => vec!["dpkg-query".into(), "--show".into(), "--showformat=${Package} ${Version}\\n".into()],
            "npm" => ["npm", "install", "--global", "--prefix", "/home/agent/.local", "--no-fund", "--no-audit"]
                .map(String::from)
                .to_vec(),
            "pip" => ["python3", "-m", "pip", "install", "--user", "--break-system-packages", "--quiet"]
                .map(String::from)
                .to_vec(),
            "cargo" => ["cargo", "install", "--root", "/home/agent/.local"].map(String::from).to_vec(),
            other => return Err(format!("unknown package manager `{other}` (apt, npm, pip, cargo)")),
        };
        argv.push("--".into());
        argv.extend(names);
        out.push((manager.clone(), argv));
    }
    Ok(out)
}

async fn packages(ctx: &Ctx<'_>, sup: &Supervisor, packages: &serde_json::Map<String, Value>) -> StageResult {
    let commands = package_commands(packages)?;
    for (manager, argv) in &commands {
        let result = if manager == "apt" { host_apt_check(argv).await } else { Ok(()) };
        result?;
        if manager != "apt" {
            exec_logged(ctx, sup, argv.clone(), BTreeMap::new(), None).await.map_err(|e| format!("{manager}: {e}"))?;
        }
    }
    Ok(json!({"managers": commands.iter().map(|(m, _)| m.as_str()).collect::<Vec<_>>()}))
}

async fn host_apt_check(argv: &[String]) -> Result<(), String> {
    let out = tokio::process::Command::new(&argv[0])
        .args(&argv[1..])
        .output()
        .await
        .map_err(|e| format!("apt: dpkg-query: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let names = argv.iter().skip_while(|a| *a != "--").skip(1);
    let missing: Vec<&str> = names
        .filter(|n| !String::from_utf8_lossy(&out.stdout).lines().any(|l| l.split(' ').next() == Some(n.as_str())))
        .map(String::as_str)
        .collect();
    Err(format!("apt: not installed on this host: {} (the local provider shares the host's /usr)", missing.join(", ")))
}

async fn setup(ctx: &Ctx<'_>, sup: &Supervisor, env: &Environment) -> StageResult {
    let secs = u64::try_from(env.setup_timeout_seconds).unwrap_or(120);
    let argv = vec!["bash".into(), "-e".into(), "-c".into(), env.setup_script.clone()];
    exec_logged(ctx, sup, argv, BTreeMap::new(), Some(Duration::from_secs(secs))).await?;
    Ok(json!({}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(url: &str, mount: &str, r: Option<&str>) -> Repository {
        serde_json::from_value(json!({"url": url, "mount_path": mount, "ref": r})).unwrap()
    }

    #[test]
    fn repositories_land_under_workspace_with_their_ref() {
        assert_eq!(clone_target("/app"), "/workspace/app");
        assert_eq!(clone_target("/workspace/app"), "/workspace/app");
        assert_eq!(clone_target("/home/agent/src"), "/home/agent/src");
        let argv = clone_argv(&repo("https://example.com/a.git", "/app", Some("v1")));
        assert_eq!(argv, ["git", "clone", "--quiet", "-b", "v1", "--", "https://example.com/a.git", "/workspace/app"]);
        let argv = clone_argv(&repo("https://example.com/a.git", "/app", None));
        assert!(!argv.contains(&"-b".to_owned()));
    }

    #[test]
    fn the_clone_token_travels_only_as_a_header_in_the_environment() {
        let env = clone_env(Some("s3cret"));
        let header = &env["GIT_CONFIG_VALUE_0"];
        let encoded = header.strip_prefix("Authorization: Basic ").unwrap();
        let decoded = base64::engine::general_purpose::STANDARD.decode(encoded).unwrap();
        assert_eq!(decoded, b"x-access-token:s3cret");
        assert_eq!(env["GIT_CONFIG_KEY_0"], "http.extraHeader");
        assert!(!clone_env(None).contains_key("GIT_CONFIG_COUNT"));
    }

    #[test]
    fn package_commands_refuse_options_and_unknown_managers() {
        let ok = json!({"npm": ["left-pad"], "apt": ["jq"]});
        let cmds = package_commands(ok.as_object().unwrap()).unwrap();
        assert_eq!(cmds.len(), 2);
        assert!(cmds.iter().all(|(_, argv)| argv.contains(&"--".to_owned())));
        let bad = json!({"npm": ["--registry=http://evil"]});
        assert!(package_commands(bad.as_object().unwrap()).unwrap_err().contains("not a package name"));
        let unknown = json!({"brew": ["jq"]});
        assert!(package_commands(unknown.as_object().unwrap()).unwrap_err().contains("unknown package manager"));
        let shape = json!({"pip": "requests"});
        assert!(package_commands(shape.as_object().unwrap()).is_err());
    }
}
