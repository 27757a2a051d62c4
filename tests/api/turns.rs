//! Turns end to end: conversations on real machines running the scripted
//! ACP agent (tests/scripted-agent), whose prompt text scripts each turn.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::Row;
use uuid::Uuid;

use crate::common::{Backend, TestApp, User, assert_error, finished_turns, scripted_agent, spawn_with, turns};

const AGENT: &str = "/opt/acs/bin/scripted-agent";

async fn app_with_agent(b: Backend) -> TestApp {
    let bind = format!("{}:{AGENT}", scripted_agent().display());
    spawn_with(b, &[("sandbox.ro_binds", json!([bind]))]).await
}

async fn agent(app: &TestApp, u: &User, extra: Value) -> Uuid {
    crate::common::acp_agent(app, u, AGENT, extra).await
}

async fn create(app: &TestApp, u: &User, body: Value) -> Value {
    crate::common::create_conversation(app, u, body).await
}

fn id_of(v: &Value) -> Uuid {
    v["id"].as_str().unwrap().parse().unwrap()
}

async fn prompt(app: &TestApp, u: &User, conv: Uuid, body: Value) -> crate::common::Resp {
    app.post(&format!("/api/conversations/{conv}/prompts"), &u.key, body).await
}

#[derive(Debug, Clone)]
struct Ev {
    kind: String,
    stream: String,
    stage: Option<String>,
    state: Option<String>,
    data: String,
    turn_id: Option<String>,
}

async fn events(app: &TestApp, conv: Uuid) -> Vec<Ev> {
    let rows = sqlx::query(
        "SELECT kind, stream, stage, state, data, turn_id FROM events WHERE conversation_id = $1 ORDER BY id",
    )
    .bind(conv.to_string())
    .fetch_all(&app.state().db.pool)
    .await
    .unwrap();
    rows.iter()
        .map(|r| Ev {
            kind: r.get("kind"),
            stream: r.get("stream"),
            stage: r.get("stage"),
            state: r.get("state"),
            data: r.get("data"),
            turn_id: r.get("turn_id"),
        })
        .collect()
}

fn stdout(events: &[Ev]) -> String {
    events.iter().filter(|e| e.kind == "output" && e.stream == "stdout").map(|e| e.data.as_str()).collect()
}

fn stages(events: &[Ev], stage: &str) -> Vec<String> {
    events.iter().filter(|e| e.stage.as_deref() == Some(stage)).map(|e| e.state.clone().unwrap_or_default()).collect()
}

/// Waits until the conversation's stdout contains `needle`.
async fn wait_output(app: &TestApp, conv: Uuid, needle: &str) {
    for _ in 0..400 {
        if stdout(&events(app, conv).await).contains(needle) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no output {needle:?}: {:?}", events(app, conv).await);
}

async fn conversation_status(app: &TestApp, conv: Uuid) -> String {
    let c = acs::core::conversations::store::get(&app.state().db, conv).await.unwrap().unwrap();
    acs::core::conversations::store::status_str(c.status).to_owned()
}

async fn vault_with(app: &TestApp, u: &User, key: &str, value: &str) -> Uuid {
    let r = app.post("/api/vaults", &u.key, json!({"name": "v"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let id: Uuid = r.body["data"]["id"].as_str().unwrap().parse().unwrap();
    let r = app
        .request(
            reqwest::Method::PUT,
            &format!("/api/vaults/{id}/secrets/{key}"),
            Some(&u.key),
            Some(json!({"value": value})),
        )
        .await;
    assert!(r.status.is_success(), "{}", r.text);
    id
}

async fn a_whole_turn_runs_from_create_to_idle(b: Backend) {
    let app = app_with_agent(b).await;
    let u = app.user().await;
    let vault = vault_with(&app, &u, "VAULT_TOKEN", "vault-s3cret-0042").await;
    let a = agent(&app, &u, json!({"vault_id": vault})).await;
    let script = "think: planning\nsay: Hello there, friend\ntool: t1 read Read README.md\nplan: look; fix\n\
                  usage: 10 5 2 1\necho-env: VAULT_TOKEN";
    let c = create(&app, &u, json!({"agent_id": a, "prompt": script, "client_request_id": "req-1 ✓"})).await;
    let conv = id_of(&c);
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(t[0].status, "done", "{t:?}");
    assert_eq!(t[0].client_request_id.as_deref(), Some("req-1 ✓"));
    assert_eq!(t[0].origin, "api");
    assert_eq!(t[0].stop_reason.as_deref(), Some("end_turn"));
    assert_eq!(t[0].usage, Some(json!({"input": 10, "output": 5, "cache_read": 2, "cache_write": 1})));
    let ev = events(&app, conv).await;
    let text = stdout(&ev);
    assert!(text.starts_with("Hello there, friend"), "{text}");
    assert!(text.ends_with("[REDACTED]"), "{text}");
    assert!(ev.iter().all(|e| !e.data.contains("vault-s3cret")), "the vault value leaked");
    assert_eq!(stages(&ev, "session"), ["done"]);
    assert_eq!(stages(&ev, "turn"), ["started", "done"]);
    let started = ev.iter().find(|e| e.stage.as_deref() == Some("turn")).unwrap();
    let data: Value = serde_json::from_str(&started.data).unwrap();
    assert_eq!(data["turn_id"], json!(t[0].id));
    assert_eq!(data["client_request_id"], "req-1 ✓");
    let prompt_event = ev.iter().find(|e| e.stream == "prompt").unwrap();
    assert_eq!(prompt_event.data, script);
    assert_eq!(conversation_status(&app, conv).await, "idle");

    // The next prompt reuses the agent's session.
    let r = prompt(&app, &u, conv, json!({"prompt": "say: again", "client_request_id": "req-2"})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(r.body["data"]["status"], "accepted");
    assert_eq!(r.body["data"]["client_request_id"], "req-2");
    let t = finished_turns(&app, conv, 2).await;
    assert_eq!(t[1].status, "done");
    assert_eq!(stages(&events(&app, conv).await, "session"), ["done"]);
    let r = app.get(&format!("/api/conversations/{conv}/turns"), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 2);
    assert_eq!(r.body["data"][0]["client_request_id"], "req-1 ✓");
}

async fn a_busy_conversation_refuses_and_a_waking_one_queues_once(b: Backend) {
    let app = app_with_agent(b).await;
    let u = app.user().await;
    let env = app.post("/api/environments", &u.key, json!({"name": "slow", "setup_script": "sleep 1"})).await;
    assert_eq!(env.status, StatusCode::CREATED, "{}", env.text);
    let a = agent(&app, &u, json!({"environment_id": env.body["data"]["id"]})).await;
    // The machine is still being built: both prompts are queued, the second dropped.
    let conv = id_of(&create(&app, &u, json!({"agent_id": a})).await);
    let r1 = prompt(&app, &u, conv, json!({"prompt": "say: first", "client_request_id": "one"})).await;
    let r2 = prompt(&app, &u, conv, json!({"prompt": "say: second", "client_request_id": "two"})).await;
    assert_eq!(
        (r1.body["data"]["status"].as_str(), r2.body["data"]["status"].as_str()),
        (Some("queued"), Some("queued"))
    );
    let t = finished_turns(&app, conv, 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t2 = turns(&app, conv).await;
    assert_eq!(t2.len(), 1, "{t2:?}");
    assert_eq!(t[0].client_request_id.as_deref(), Some("one"));
    // Awake and mid-turn: the loser is told.
    let r = prompt(&app, &u, conv, json!({"prompt": "say: slow\nsleep: 2000"})).await;
    assert_eq!(r.body["data"]["status"], "accepted", "{}", r.text);
    let r = prompt(&app, &u, conv, json!({"prompt": "say: too soon"})).await;
    assert_error(&r, StatusCode::CONFLICT, "conversation_busy");
    let t = finished_turns(&app, conv, 2).await;
    assert_eq!(t.len(), 2);
}

async fn interrupt_stops_the_turn_and_its_permission_request(b: Backend) {
    let app = app_with_agent(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let conv = id_of(&create(&app, &u, json!({"agent_id": a, "prompt": "say: start\nsleep: 20000\nsay: never"})).await);
    wait_output(&app, conv, "start").await;
    let r = app.post(&format!("/api/conversations/{conv}/interrupt"), &u.key, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["interrupted"], true);
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(t[0].status, "interrupted");
    assert_eq!(t[0].stop_reason.as_deref(), Some("cancelled"));
    let ev = events(&app, conv).await;
    assert_eq!(stages(&ev, "turn"), ["started", "interrupted"]);
    assert!(!stdout(&ev).contains("never"));
    assert_eq!(conversation_status(&app, conv).await, "idle");
    let r = app.post(&format!("/api/conversations/{conv}/interrupt"), &u.key, json!({})).await;
    assert_eq!(r.body["data"]["interrupted"], false);

    // A permission request waits for an answer; an interrupt cancels it.
    let block = ask_permission(&app, &u, conv, "permission: t9 Run rm -rf /tmp/x").await;
    assert_eq!(block["options"][0]["optionId"], "allow-once");
    app.post(&format!("/api/conversations/{conv}/interrupt"), &u.key, json!({})).await;
    let t = finished_turns(&app, conv, 2).await;
    assert_eq!(t[1].status, "interrupted");
    let ev = events(&app, conv).await;
    assert_eq!(stages(&ev, "request"), ["started", "done"]);
    assert!(stdout(&ev).contains("permission: cancelled"), "{}", stdout(&ev));
}

/// Sends a prompt whose turn asks a permission; returns its `permission_request` block.
async fn ask_permission(app: &TestApp, u: &User, conv: Uuid, prompt_text: &str) -> Value {
    let r = prompt(app, u, conv, json!({ "prompt": prompt_text })).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    for _ in 0..400 {
        let row = sqlx::query(
            "SELECT blocks FROM events WHERE conversation_id = $1 AND blocks LIKE '%permission_request%' \
             ORDER BY id DESC LIMIT 1",
        )
        .bind(conv.to_string())
        .fetch_optional(&app.state().db.pool)
        .await
        .unwrap();
        if let Some(row) = row {
            let blocks: Value = serde_json::from_str(&row.get::<String, _>("blocks")).unwrap();
            if stages(&events(app, conv).await, "request").last().map(String::as_str) == Some("started") {
                return blocks[0].clone();
            }
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no permission request");
}

async fn a_permission_answer_reaches_the_agent(b: Backend) {
    let app = app_with_agent(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let conv = id_of(&create(&app, &u, json!({"agent_id": a})).await);
    let block = ask_permission(&app, &u, conv, "permission: t1 Run ls").await;
    let request_id = block["request_id"].as_str().unwrap().to_owned();
    let path = format!("/api/conversations/{conv}/permissions/{request_id}");

    let r = app.post(&path, &u.key, json!({"option_id": "allow-forever"})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "unknown_option");
    let r =
        app.post(&format!("/api/conversations/{conv}/permissions/999"), &u.key, json!({"option_id": "reject"})).await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");
    let other = app.user().await;
    let r = app.post(&path, &other.key, json!({"option_id": "reject"})).await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");

    let r = app.post(&path, &u.key, json!({"option_id": "allow-once"})).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(t[0].status, "done");
    let ev = events(&app, conv).await;
    assert!(stdout(&ev).contains("permission: allow-once"), "{}", stdout(&ev));
    assert_eq!(stages(&ev, "request"), ["started", "done"], "answered once, not also cancelled");
    let done = ev.iter().find(|e| e.stage.as_deref() == Some("request") && e.state.as_deref() == Some("done")).unwrap();
    let data: Value = serde_json::from_str(&done.data).unwrap();
    assert_eq!(data, json!({"request_id": request_id, "outcome": "selected", "option_id": "allow-once"}));
    assert_eq!(done.turn_id.as_deref(), Some(t[0].id.to_string().as_str()));
    // Answered requests are closed.
    let r = app.post(&path, &u.key, json!({"option_id": "reject"})).await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");
}

async fn terminate_ends_the_conversation_and_reclaims_its_machine(b: Backend) {
    let app = app_with_agent(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let c = create(&app, &u, json!({"agent_id": a, "prompt": "say: working\nsleep: 20000"})).await;
    let conv = id_of(&c);
    wait_output(&app, conv, "working").await;
    let r = app.post(&format!("/api/conversations/{conv}/terminate"), &u.key, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["status"], "terminated");
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(t[0].status, "interrupted");
    let ev = events(&app, conv).await;
    assert_eq!(stages(&ev, "terminate"), ["done"]);
    assert_eq!(stages(&ev, "sandbox"), ["done"]);
    let sandbox: Uuid = c["sandbox_id"].as_str().unwrap().parse().unwrap();
    let row = acs::core::sandboxes::store::get(&app.state().db, sandbox).await.unwrap().unwrap();
    assert_eq!(row.status, acs::core::sandboxes::model::SandboxState::Terminated);
    assert_error(&prompt(&app, &u, conv, json!({"prompt": "hello"})).await, StatusCode::GONE, "conversation_ended");
}

async fn agent_failures_fail_the_turn_and_the_next_prompt_starts_afresh(b: Backend) {
    let app = app_with_agent(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let conv = id_of(&create(&app, &u, json!({"agent_id": a, "prompt": "say: bye\nexit: 3"})).await);
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!((t[0].status.as_str(), t[0].exit_code), ("failed", Some(3)), "{t:?}");
    assert_eq!(conversation_status(&app, conv).await, "failed");
    prompt(&app, &u, conv, json!({"prompt": "error: -32000 model overloaded"})).await;
    let t = finished_turns(&app, conv, 2).await;
    assert_eq!(t[1].status, "failed");
    assert!(t[1].error.as_deref().unwrap_or_default().contains("model overloaded"), "{t:?}");
    prompt(&app, &u, conv, json!({"prompt": "say: cut\nstop: max_tokens"})).await;
    let t = finished_turns(&app, conv, 3).await;
    assert_eq!((t[2].status.as_str(), t[2].limit_reason.as_deref()), ("done", Some("max_tokens")));
    let ev = events(&app, conv).await;
    assert_eq!(stages(&ev, "session"), ["done", "done"], "a new agent after the crash");
    assert_eq!(stages(&ev, "turn"), ["started", "failed", "started", "failed", "started", "done"]);
}

async fn a_server_restart_mid_turn_loses_and_repeats_nothing(b: Backend) {
    let mut app = app_with_agent(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let conv = id_of(&create(&app, &u, json!({"agent_id": a, "prompt": "say: before\nsleep: 1500\nsay: after"})).await);
    wait_output(&app, conv, "before").await;
    app.restart().await;
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(t[0].status, "done", "{t:?}");
    let ev = events(&app, conv).await;
    assert_eq!(stdout(&ev), "beforeafter");
    assert_eq!(stages(&ev, "reattach"), ["started", "done"]);
    assert_eq!(stages(&ev, "turn"), ["started", "done"]);
    assert!(ev.iter().filter(|e| e.kind == "output").all(|e| e.turn_id.as_deref() == Some(&t[0].id.to_string())));
    // The session goes on after the restart.
    let r = prompt(&app, &u, conv, json!({"prompt": "say: later"})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let t = finished_turns(&app, conv, 2).await;
    assert_eq!(t[1].status, "done");
    assert_eq!(stages(&events(&app, conv).await, "session"), ["done"]);
}

async fn sandbox_of(app: &TestApp, conv: Uuid) -> Option<Uuid> {
    acs::core::conversations::store::get(&app.state().db, conv).await.unwrap().unwrap().sandbox_id
}

async fn a_sleeping_machine_wakes_for_the_next_prompt(b: Backend) {
    let app = app_with_agent(b).await;
    let u = app.user().await;
    // Ephemeral: reclaimed, then replaced by a new machine on wake.
    let a = agent(&app, &u, json!({})).await;
    let conv = id_of(&create(&app, &u, json!({"agent_id": a, "prompt": "say: one"})).await);
    finished_turns(&app, conv, 1).await;
    let first = sandbox_of(&app, conv).await.unwrap();
    acs::core::sandboxes::service::reclaim(app.state(), first).await.unwrap();
    let r = app.post(&format!("/api/conversations/{conv}/wake"), &u.key, json!({})).await;
    assert_eq!((r.status, r.body["data"]["status"].as_str()), (StatusCode::OK, Some("waking")), "{}", r.text);
    let second = sandbox_of(&app, conv).await.unwrap();
    assert_ne!(first, second);
    for _ in 0..400 {
        let row = acs::core::sandboxes::store::get(&app.state().db, second).await.unwrap().unwrap();
        if row.status == acs::core::sandboxes::model::SandboxState::Ready {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let r = app.post(&format!("/api/conversations/{conv}/wake"), &u.key, json!({})).await;
    assert_eq!(r.body["data"]["status"], "awake", "{}", r.text);
    prompt(&app, &u, conv, json!({"prompt": "say: two"})).await;
    let t = finished_turns(&app, conv, 2).await;
    assert_eq!(t[1].status, "done");
    let ev = events(&app, conv).await;
    assert_eq!(stdout(&ev), "onetwo");
    assert_eq!(stages(&ev, "session"), ["done", "done"], "a new machine runs a new agent");

    // Persistent: parked with a checkpoint; a prompt is queued and opens its turn once it is back.
    let home = agent(&app, &u, json!({"sandbox_mode": "persistent"})).await;
    let conv = id_of(&create(&app, &u, json!({"agent_id": home, "prompt": "write: /workspace/kept.txt kept"})).await);
    finished_turns(&app, conv, 1).await;
    let machine = sandbox_of(&app, conv).await.unwrap();
    acs::core::sandboxes::service::park(app.state(), machine).await.unwrap();
    let r = prompt(&app, &u, conv, json!({"prompt": "say: back", "client_request_id": "after-park"})).await;
    assert_eq!(r.body["data"]["status"], "queued", "{}", r.text);
    let t = finished_turns(&app, conv, 2).await;
    assert_eq!((t[1].status.as_str(), t[1].client_request_id.as_deref()), ("done", Some("after-park")));
    assert_eq!(sandbox_of(&app, conv).await, Some(machine), "the home is the same machine");
    assert_eq!(stages(&events(&app, conv).await, "checkpoint"), ["done"]);
}

crate::both!(
    a_sleeping_machine_wakes_for_the_next_prompt,
    a_whole_turn_runs_from_create_to_idle,
    a_busy_conversation_refuses_and_a_waking_one_queues_once,
    interrupt_stops_the_turn_and_its_permission_request,
    a_permission_answer_reaches_the_agent,
    terminate_ends_the_conversation_and_reclaims_its_machine,
    agent_failures_fail_the_turn_and_the_next_prompt_starts_afresh,
    a_server_restart_mid_turn_loses_and_repeats_nothing,
);
