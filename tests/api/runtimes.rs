//! The named runtimes (claude, codex, gemini) installed by `acs runtimes install` (the core
//! function) and run end to end in `local` sandboxes against the fake model server. Their model
//! requests leave the machine through its egress proxy to the host's own non-loopback address.
//! These tests are slow and the database does not matter to them: they run on SQLite only.

use std::path::PathBuf;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::Row;
use uuid::Uuid;

use crate::common::{
    Backend, TestApp, User, create_conversation, finished_turns, finished_turns_within, sh, spawn_with,
};
use acs_testkit::fake_model::{FakeModel, REPLY};

/// How long a turn on a real runtime may take: a Node runtime's first start on a busy 2-core
/// machine takes many seconds (`scripts/test` runs these tests alone, one at a time).
const RUNTIME_TURN_SECONDS: u64 = 180;

/// Installs the pinned runtimes once into `target/acs-runtimes` (kept across runs; the install's
/// own lock keeps parallel test binaries from installing at once). `Err`: why the tests skip.
async fn runtimes_dir() -> Result<PathBuf, String> {
    static DIR: tokio::sync::OnceCell<Result<PathBuf, String>> = tokio::sync::OnceCell::const_new();
    DIR.get_or_init(|| async {
        tokio::task::spawn_blocking(|| {
            let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/acs-runtimes");
            let names = ["claude", "codex", "gemini", "opencode"].map(String::from);
            acs::core::runtimes::install(&dir, &names)?;
            Ok(dir)
        })
        .await
        .map_err(|e| e.to_string())?
    })
    .await
    .clone()
}

/// The host's address on its default route: machines reach it through their proxy (their own
/// 127.0.0.1 is the machine's loopback).
fn host_ip() -> String {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    s.connect("192.0.2.1:9").unwrap();
    s.local_addr().unwrap().ip().to_string()
}

struct Setup {
    app: TestApp,
    u: User,
    fake: FakeModel,
}

/// A server whose runtimes talk to a fake model, with platform keys for every provider.
async fn setup() -> Option<Setup> {
    let dir = match runtimes_dir().await {
        Ok(d) => d,
        Err(e) => {
            println!("skipped: {e}");
            return None;
        }
    };
    let fake = FakeModel::start().await;
    let base = format!("http://{}:{}", host_ip(), fake.port());
    let app = spawn_with(
        Backend::Sqlite,
        &[
            ("sandbox.blocked_cidrs", json!([])),
            ("runtimes.dir", json!(dir.display().to_string())),
            ("inference.base_urls.anthropic", json!(base)),
            ("inference.base_urls.openai", json!(format!("{base}/v1"))),
            ("inference.base_urls.google", json!(base)),
            ("inference.platform.anthropic_api_key", json!("sk-ant-fake-claude")),
            ("inference.platform.openai_api_key", json!("sk-fake-codex")),
            ("inference.platform.gemini_api_key", json!("fake-gemini-key")),
        ],
    )
    .await;
    let u = app.user().await;
    Some(Setup { app, u, fake })
}

async fn agent(s: &Setup, runtime: &str, extra: Value) -> Uuid {
    let mut body = json!({"name": format!("{runtime}-agent"), "runtime": runtime});
    body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let r = s.app.post("/api/agents", &s.u.key, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"]["id"].as_str().unwrap().parse().unwrap()
}

async fn history(s: &Setup, conv: Uuid) -> String {
    let r = s.app.get(&format!("/api/conversations/{conv}/history"), &s.u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body["data"].to_string()
}

/// One prompt on an agent of `runtime`: the turn ends `done` with the fake reply, on the platform
/// credential, and the fake saw a request on `path` (checked with `body_has`). The setup, for
/// more checks, unless the runtimes could not be installed.
async fn plain_turn(runtime: &str, extra: Value, path: &str, body_has: fn(&Value) -> bool) -> Option<Setup> {
    let s = setup().await?;
    let a = agent(&s, runtime, extra).await;
    let c = create_conversation(&s.app, &s.u, json!({"agent_id": a, "prompt": "Say hello."})).await;
    let conv: Uuid = c["id"].as_str().unwrap().parse().unwrap();
    let t = finished_turns_within(&s.app, conv, 1, RUNTIME_TURN_SECONDS).await;
    let transcript = history(&s, conv).await;
    assert_eq!(t[0].status, "done", "{:?} {transcript}", t[0]);
    assert!(transcript.contains(REPLY), "{transcript}");
    let inference = t[0].inference.clone().unwrap_or_default();
    assert_eq!(inference["origin"], "platform", "{inference}");
    let seen = s.fake.requests();
    assert!(seen.iter().any(|(m, p, b)| m == "POST" && p.contains(path) && body_has(b)), "{seen:?}");
    // The requests left the machine through its egress proxy (the only way out).
    let sandbox = c["sandbox_id"].as_str().unwrap();
    let fake = format!("{}:{}", host_ip(), s.fake.port());
    let mut log = Value::Null;
    for _ in 0..100 {
        log = s.app.get(&format!("/api/sandboxes/{sandbox}/egress"), &s.u.key).await.body["data"].clone();
        if log.as_array().unwrap().iter().any(|e| e["host"] == fake.as_str() && e["status"] == 200) {
            return Some(s);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no model request in the egress log: {log}");
}

// SQLite only (real runtimes are slow; the database does not matter).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_answers_from_the_configured_model() {
    // The agent's system prompt reaches the model beside Claude Code's own.
    plain_turn("claude", json!({"system_prompt": "Answer like a pirate."}), "/v1/messages", |b| {
        b["messages"].to_string().contains("Say hello.") && b["system"].to_string().contains("Answer like a pirate.")
    })
    .await;
}

// SQLite only (real runtimes are slow; the database does not matter).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_answers_from_the_configured_model() {
    // The agent's system prompt reaches the model as Codex's developer instructions.
    plain_turn("codex", json!({"system_prompt": "Answer like a pirate."}), "/v1/responses", |b| {
        b["input"].to_string().contains("Say hello.") && b.to_string().contains("Answer like a pirate.")
    })
    .await;
}

// SQLite only (real runtimes are slow; the database does not matter).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_answers_from_the_configured_model() {
    // The agent's system prompt reaches the model in Gemini's system instruction (its global context file).
    plain_turn(
        "gemini",
        json!({"system_prompt": "Answer like a pirate."}),
        "gemini-2.5-flash:streamGenerateContent",
        |b| {
            b["contents"].to_string().contains("Say hello.")
                && b["systemInstruction"].to_string().contains("Answer like a pirate.")
        },
    )
    .await;
}

// SQLite only (real runtimes are slow; the database does not matter). OpenCode drives several
// providers: the agent names one, or it would pick its own default service.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_answers_from_the_configured_model() {
    // The agent's system prompt reaches the model beside OpenCode's own (an instructions file).
    let agent = json!({"model": "anthropic/claude-sonnet-4-5", "system_prompt": "Answer like a pirate."});
    let s = plain_turn("opencode", agent, "/v1/messages", |b| {
        b["messages"].to_string().contains("Say hello.") && b["system"].to_string().contains("Answer like a pirate.")
    })
    .await;
    // Its title agent stays off: no second model call per conversation (it starts with the first
    // prompt, so it would have come by the turn's end).
    if let Some(s) = s {
        let seen = s.fake.requests();
        assert!(!seen.iter().any(|(_, _, b)| b["system"].to_string().contains("title generator")), "{seen:?}");
    }
}

/// The blocks of the conversation's events that are permission requests.
async fn permission_blocks(app: &TestApp, conv: Uuid) -> Vec<Value> {
    let rows = sqlx::query("SELECT blocks FROM events WHERE conversation_id = $1 AND blocks IS NOT NULL ORDER BY id")
        .bind(conv.to_string())
        .fetch_all(&app.state().db.pool)
        .await
        .unwrap();
    rows.iter()
        .filter_map(|r| serde_json::from_str::<Value>(&r.get::<String, _>("blocks")).ok())
        .flat_map(|b| b.as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "permission_request")
        .collect()
}

// SQLite only (real runtimes are slow; the database does not matter).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_runs_a_tool_after_the_caller_allows_it() {
    let Some(s) = setup().await else { return };
    let a = agent(&s, "claude", json!({"permission_policy": {"default": "ask"}})).await;
    let prompt = "Create the file.\nrun: echo hi > hello.txt";
    let c = create_conversation(&s.app, &s.u, json!({"agent_id": a, "prompt": prompt})).await;
    let conv: Uuid = c["id"].as_str().unwrap().parse().unwrap();
    let mut asked = None;
    for _ in 0..1200 {
        if let Some(b) = permission_blocks(&s.app, conv).await.pop() {
            asked = Some(b);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let Some(asked) = asked else { panic!("no permission request: {}", history(&s, conv).await) };
    let allow = asked["options"].as_array().unwrap().iter().find(|o| o["kind"] == "allow_once").expect("allow once");
    let path = format!("/api/conversations/{conv}/permissions/{}", asked["request_id"].as_str().unwrap());
    let r = s.app.post(&path, &s.u.key, json!({"option_id": allow["optionId"]})).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    let t = finished_turns_within(&s.app, conv, 1, RUNTIME_TURN_SECONDS).await;
    assert_eq!(t[0].status, "done", "{:?} {}", t[0], history(&s, conv).await);
    let sandbox: Uuid = s.app.get(&format!("/api/conversations/{conv}"), &s.u.key).await.body["data"]["sandbox_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let (_, out, err) = sh(&s.app, sandbox, "cat /workspace/hello.txt").await;
    assert_eq!(out, "hi\n", "{err}");
    assert!(history(&s, conv).await.contains(REPLY));
}

// SQLite only: whether a runtime is installed does not depend on the database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_that_is_not_installed_fails_the_turn_naming_the_install_command() {
    let empty = std::env::temp_dir().join(format!("acs-no-runtimes-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&empty).unwrap();
    let app = spawn_with(
        Backend::Sqlite,
        &[
            ("runtimes.dir", json!(empty.display().to_string())),
            ("inference.platform.anthropic_api_key", json!("sk-ant-fake-claude")),
        ],
    )
    .await;
    let u = app.user().await;
    let r = app.get("/api/catalog", &u.key).await;
    assert_eq!(r.body["data"]["runtimes"], json!(["acp"]));
    assert_eq!(
        r.body["data"]["runtime_versions"]["claude"],
        json!({"package": "@zed-industries/claude-agent-acp", "pinned": "0.23.1", "installed": null})
    );
    let r = app.post("/api/agents", &u.key, json!({"name": "c", "runtime": "claude"})).await;
    let a = r.body["data"]["id"].as_str().unwrap().to_owned();
    let c = create_conversation(&app, &u, json!({"agent_id": a, "prompt": "hi"})).await;
    let conv: Uuid = c["id"].as_str().unwrap().parse().unwrap();
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(t[0].status, "failed", "{:?}", t[0]);
    let error = t[0].error.clone().unwrap_or_default();
    assert!(error.contains("acs runtimes install claude"), "{error}");
    let _ = std::fs::remove_dir_all(&empty);
}

// SQLite only (the catalog reads the runtimes directory, not the database).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_catalog_lists_installed_runtimes_with_their_versions() {
    let Ok(dir) = runtimes_dir().await.inspect_err(|e| println!("skipped: {e}")) else { return };
    let app = spawn_with(Backend::Sqlite, &[("runtimes.dir", json!(dir.display().to_string()))]).await;
    let u = app.user().await;
    let d = app.get("/api/catalog", &u.key).await.body["data"].clone();
    let runtimes = d["runtimes"].as_array().unwrap();
    assert_eq!(runtimes[..4], [json!("acp"), json!("claude"), json!("codex"), json!("gemini")]);
    assert_eq!(d["runtime_versions"]["codex"]["installed"], "0.16.0");
    assert_eq!(d["runtime_versions"]["gemini"]["pinned"], "0.61.0");
}

const ANTHROPIC_HOST: &str = "anthropic.model.test";
const OPENAI_HOST: &str = "openai.model.test";
const GOOGLE_HOST: &str = "google.model.test";
/// What brokered machines hold instead of a key.
const PLACEHOLDER: &str = "placeholder-not-a-key";

// SQLite only (real runtimes are slow; the database does not matter). The model APIs behind
// HTTPS with their own CA; the machines hold placeholder keys, and the broker puts the bound
// real ones in on the way out: each runtime's HTTP client goes through the proxy and trusts
// the broker's CA.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtimes_reach_the_model_through_the_broker() {
    let dir = match runtimes_dir().await {
        Ok(d) => d,
        Err(e) => {
            println!("skipped: {e}");
            return;
        }
    };
    let fake = FakeModel::start().await;
    let work = std::env::temp_dir().join(format!("acs-front-{}", Uuid::new_v4().simple()));
    let backend = std::net::SocketAddr::from(([127, 0, 0, 1], fake.port()));
    let hosts = [ANTHROPIC_HOST, OPENAI_HOST, GOOGLE_HOST];
    let front = acs_testkit::upstream::TlsFront::start(&hosts, &work, backend).await;
    let base = |host: &str| format!("https://{host}:{}", front.port);
    let app = spawn_with(
        Backend::Sqlite,
        &[
            ("sandbox.blocked_cidrs", json!([])),
            ("sandbox.host_overrides", json!(hosts.map(|h| format!("{h}=127.0.0.1")))),
            ("broker.upstream_ca_file", json!(front.ca_file.display().to_string())),
            ("features.brokerage", json!(true)),
            ("runtimes.dir", json!(dir.display().to_string())),
            ("inference.base_urls.anthropic", json!(base(ANTHROPIC_HOST))),
            ("inference.base_urls.openai", json!(format!("{}/v1", base(OPENAI_HOST)))),
            ("inference.base_urls.google", json!(base(GOOGLE_HOST))),
            ("inference.platform.anthropic_api_key", json!(PLACEHOLDER)),
            ("inference.platform.openai_api_key", json!(PLACEHOLDER)),
            ("inference.platform.gemini_api_key", json!(PLACEHOLDER)),
        ],
    )
    .await;
    let u = app.user().await;
    let real = |vendor: &str| format!("real-{vendor}-{}", Uuid::new_v4().simple());
    let (anthropic, openai, gemini) = (real("anthropic"), real("openai"), real("gemini"));
    let r = app.post("/api/vaults", &u.key, json!({"name": "model keys"})).await;
    let vault = r.body["data"]["id"].as_str().unwrap().to_owned();
    for (host, header, template, key, value) in [
        (ANTHROPIC_HOST, "x-api-key", "{value}", "ANTHROPIC_KEY", &anthropic),
        (OPENAI_HOST, "authorization", "Bearer {value}", "OPENAI_KEY", &openai),
        (GOOGLE_HOST, "x-goog-api-key", "{value}", "GEMINI_KEY", &gemini),
    ] {
        let path = format!("/api/vaults/{vault}/secrets/{key}");
        let r = app.request(reqwest::Method::PUT, &path, Some(&u.key), Some(json!({"value": value}))).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        let binding = json!({"name": host, "host": host, "header": header, "template": template,
            "source": {"vault_id": vault, "key": key}});
        let r = app.post("/api/secret-bindings", &u.key, binding).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    }
    let s = Setup { app, u, fake };
    let runtimes = [
        ("claude", json!({})),
        ("codex", json!({})),
        ("gemini", json!({})),
        ("opencode", json!({"model": "anthropic/claude-sonnet-4-5"})),
    ];
    for (runtime, extra) in runtimes {
        let a = agent(&s, runtime, extra).await;
        let c = create_conversation(&s.app, &s.u, json!({"agent_id": a, "prompt": "Say hello."})).await;
        let conv: Uuid = c["id"].as_str().unwrap().parse().unwrap();
        let t = finished_turns_within(&s.app, conv, 1, RUNTIME_TURN_SECONDS).await;
        let transcript = history(&s, conv).await;
        assert_eq!(t[0].status, "done", "{runtime}: {:?} {transcript}", t[0]);
        assert!(transcript.contains(REPLY), "{runtime}: {transcript}");
        let sandbox = c["sandbox_id"].as_str().unwrap();
        let log = s.app.get(&format!("/api/sandboxes/{sandbox}/egress"), &s.u.key).await.text;
        assert!(log.contains("\"service\":\"") && !log.contains("real-"), "{runtime}: {log}");
    }
    let keys = s.fake.keys();
    assert!(!keys.is_empty() && keys.iter().all(|k| !k.contains(PLACEHOLDER)), "{keys:?}");
    for want in [
        format!("x-api-key: {anthropic}"),
        format!("authorization: Bearer {openai}"),
        format!("x-goog-api-key: {gemini}"),
    ] {
        assert!(keys.contains(&want), "{want} not seen: {keys:?}");
    }
    std::fs::remove_dir_all(&work).ok();
}

// SQLite only (real runtimes are slow; the database does not matter).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_runtime_takes_the_agent_a_warm_pool_started_for_it() {
    let Some(mut s) = setup().await else { return };
    let runtimes = [
        ("claude", json!({"system_prompt": "Answer like a pirate."})),
        ("codex", json!({"system_prompt": "Answer like a pirate."})),
        ("gemini", json!({"system_prompt": "Answer like a pirate."})),
        ("opencode", json!({"model": "anthropic/claude-sonnet-4-5", "system_prompt": "Answer like a pirate."})),
    ];
    let mut agents = Vec::new();
    for (runtime, extra) in &runtimes {
        agents.push(agent(&s, runtime, extra.clone()).await);
    }
    let pools: Vec<Value> = runtimes
        .iter()
        .zip(&agents)
        .map(|((runtime, _), a)| json!({"name": runtime, "account_id": s.u.id, "agent_id": a, "size": 1}))
        .collect();
    s.app.restart_with(&[("sandbox.warm_pools", json!(pools))]).await;
    let state = s.app.state().clone();
    let svc = acs::core::sandboxes::service::service(&state).unwrap();
    // Each pool's machine waits with its runtime started and its session open.
    let mut waiting = Vec::new();
    for _ in 0..RUNTIME_TURN_SECONDS * 10 {
        waiting = acs::core::sandboxes::store::pooled_here(&state.db, state.events.server()).await.unwrap();
        if waiting.len() == runtimes.len() && waiting.iter().all(|m| !m.building) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(waiting.len() == runtimes.len() && waiting.iter().all(|m| !m.building), "{waiting:?}");
    for ((runtime, _), a) in runtimes.iter().zip(&agents) {
        let machine = waiting.iter().find(|m| m.pool == *runtime).unwrap().id;
        let procs = svc.serving(machine).supervisor(machine).list().await.unwrap();
        let started = procs.iter().find(|p| p.name == format!("warm-{}", machine.simple()) && p.running);
        let started = started.unwrap_or_else(|| panic!("{runtime}: no agent waits: {procs:?}")).pid;

        let c = create_conversation(&s.app, &s.u, json!({"agent_id": a, "prompt": "Say hello."})).await;
        assert_eq!(c["sandbox_id"], json!(machine), "{runtime}: {c}");
        let conv: Uuid = c["id"].as_str().unwrap().parse().unwrap();
        let t = finished_turns_within(&s.app, conv, 1, RUNTIME_TURN_SECONDS).await;
        let transcript = history(&s, conv).await;
        assert_eq!(t[0].status, "done", "{runtime}: {:?} {transcript}", t[0]);
        assert!(transcript.contains(REPLY), "{runtime}: {transcript}");
        // The turn ran on the process started ahead, now the conversation's.
        let procs = svc.serving(machine).supervisor(machine).list().await.unwrap();
        let own = procs.iter().find(|p| p.name == format!("conv-{}", conv.simple()));
        assert_eq!(own.map(|p| (p.pid, p.running)), Some((started, true)), "{runtime}: {procs:?}");
    }
}
