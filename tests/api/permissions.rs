//! Permission policies (narrowing at create, answers by policy, `ask`
//! timeouts), `_service/labels` stamps from the agent, and turn usage, with
//! the scripted ACP agent (tests/scripted-agent).

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::Row;
use uuid::Uuid;

use crate::common::{Backend, TestApp, User, assert_error, finished_turns, scripted_agent, spawn_with};

const AGENT: &str = "/opt/acs/bin/scripted-agent";

async fn app_with(b: Backend, extra: &[(&str, Value)]) -> TestApp {
    let bind = format!("{}:{AGENT}", scripted_agent().display());
    let mut overrides = vec![("sandbox.ro_binds", json!([bind]))];
    overrides.extend(extra.iter().cloned());
    spawn_with(b, &overrides).await
}

async fn agent(app: &TestApp, u: &User, extra: Value) -> Uuid {
    crate::common::acp_agent(app, u, AGENT, extra).await
}

async fn start(app: &TestApp, u: &User, body: Value) -> Uuid {
    let c = crate::common::create_conversation(app, u, body).await;
    c["id"].as_str().unwrap().parse().unwrap()
}

/// (stage or stream, state, data, blocks) of every event, oldest first.
async fn events(app: &TestApp, conv: Uuid) -> Vec<(String, String, String, String)> {
    let rows =
        sqlx::query("SELECT stream, stage, state, data, blocks FROM events WHERE conversation_id = $1 ORDER BY id")
            .bind(conv.to_string())
            .fetch_all(&app.state().db.pool)
            .await
            .unwrap();
    rows.iter()
        .map(|r| {
            let stage: Option<String> = r.get("stage");
            (
                stage.unwrap_or_else(|| r.get("stream")),
                r.get::<Option<String>, _>("state").unwrap_or_default(),
                r.get("data"),
                r.get::<Option<String>, _>("blocks").unwrap_or_default(),
            )
        })
        .collect()
}

fn stdout(ev: &[(String, String, String, String)]) -> String {
    ev.iter().filter(|e| e.0 == "stdout").map(|e| e.2.as_str()).collect()
}

/// The data of each `request` stage event, in order.
fn requests(ev: &[(String, String, String, String)]) -> Vec<(String, Value)> {
    ev.iter().filter(|e| e.0 == "request").map(|e| (e.1.clone(), serde_json::from_str(&e.2).unwrap())).collect()
}

fn shown_blocks(ev: &[(String, String, String, String)]) -> bool {
    ev.iter().any(|e| e.3.contains("permission_request"))
}

async fn a_launch_policy_may_only_narrow_the_agents(b: Backend) {
    let app = app_with(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({"permission_policy": {"execute": "auto_allow", "ask_timeout": 60}})).await;
    let create = |body: Value| app.post("/api/conversations", &u.key, body);

    let r = create(json!({"agent_id": a, "permission_policy": {"read": "auto_allow"}})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "permission_policy_widens");
    assert!(r.body["message"].as_str().unwrap().contains("`read`"), "{}", r.text);
    let r = create(json!({"agent_id": a, "permission_policy": {"default": "auto_allow"}})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "permission_policy_widens");
    let r = create(json!({"agent_id": a, "permission_policy": {"ask_timeout": 61}})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "permission_policy_widens");
    let r = create(json!({"agent_id": a, "permission_policy": {"execute": "auto_deny"},
        "session_config": {"mode": "full-access"}}))
    .await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "permission_policy_unenforceable");
    // The agent's own session config counts too; without a launch policy nothing is refused.
    let yolo = agent(&app, &u, json!({"session_config": {"mode": "yolo"}})).await;
    let r = create(json!({"agent_id": yolo, "permission_policy": {"ask_timeout": 5}})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "permission_policy_unenforceable");
    // A policy that only narrows (the agent's ask_timeout exactly) opens the conversation.
    start(
        &app,
        &u,
        json!({"agent_id": a, "permission_policy": {"execute": "ask", "read": "auto_deny",
        "ask_timeout": 60}}),
    )
    .await;
    start(&app, &u, json!({"agent_id": yolo})).await;
}

async fn policies_answer_requests_without_asking(b: Backend) {
    let app = app_with(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({"permission_policy": {"Run ls": "auto_allow", "execute": "auto_deny"}})).await;
    let script = "permission: t1 Run ls\npermission: t2 Run rm\nsay: end";
    let conv = start(&app, &u, json!({"agent_id": a, "prompt": script})).await;
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(t[0].status, "done");
    let ev = events(&app, conv).await;
    let out = stdout(&ev);
    assert!(out.contains("permission: allow-once") && out.contains("permission: reject"), "{out}");
    assert!(!shown_blocks(&ev), "a policy's answer shows no permission_request");
    let r = requests(&ev);
    let states: Vec<&str> = r.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(states, ["started", "done", "started", "done"]);
    assert_eq!(r[1].1, json!({"request_id": "1", "outcome": "selected", "option_id": "allow-once", "by": "policy"}));
    assert_eq!(r[3].1, json!({"request_id": "2", "outcome": "selected", "option_id": "reject", "by": "policy"}));

    // The launch narrows: its deny of the title wins over the agent's allow.
    let conv = start(
        &app,
        &u,
        json!({"agent_id": a, "prompt": "permission: t1 Run ls",
        "permission_policy": {"Run ls": "auto_deny"}}),
    )
    .await;
    finished_turns(&app, conv, 1).await;
    let ev = events(&app, conv).await;
    assert!(stdout(&ev).contains("permission: reject"), "{}", stdout(&ev));
    assert!(!shown_blocks(&ev));
}

/// Waits for the turn of a prompt that asks, and checks how its request ended.
async fn expires_after(app: &TestApp, conv: Uuid, at_least: Duration) {
    let began = std::time::Instant::now();
    let t = finished_turns(app, conv, 1).await;
    assert!(began.elapsed() >= at_least.saturating_sub(Duration::from_millis(500)));
    assert_eq!(t[0].status, "done");
    let ev = events(app, conv).await;
    assert!(shown_blocks(&ev), "an ask shows its request");
    assert!(stdout(&ev).contains("permission: reject"), "{}", stdout(&ev));
    let r = requests(&ev);
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(r[1], ("done".into(), json!({"request_id": "1", "outcome": "expired", "option_id": "reject"})));
}

async fn an_unanswered_ask_expires_at_the_shortest_timeout(b: Backend) {
    let app = app_with(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({"permission_policy": {"ask_timeout": 30}})).await;
    let conv = start(
        &app,
        &u,
        json!({"agent_id": a, "prompt": "permission: t1 Run ls",
        "permission_policy": {"ask_timeout": 1}}),
    )
    .await;
    expires_after(&app, conv, Duration::from_secs(1)).await;
}

async fn the_global_permission_timeout_applies_without_a_policy(b: Backend) {
    let app = app_with(b, &[("conversations.permission_timeout_seconds", json!(1))]).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let conv = start(&app, &u, json!({"agent_id": a, "prompt": "permission: t1 Run ls"})).await;
    expires_after(&app, conv, Duration::from_secs(1)).await;
    // A launch may not set a longer wait than the global one when the agent sets none.
    let r =
        app.post("/api/conversations", &u.key, json!({"agent_id": a, "permission_policy": {"ask_timeout": 2}})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "permission_policy_widens");
}

/// Waits until the conversation shows an open `ask` request; returns its `request` stage data.
async fn open_request(app: &TestApp, conv: Uuid) -> Value {
    for _ in 0..400 {
        let r = requests(&events(app, conv).await);
        if let [.., (state, data)] = r.as_slice()
            && state == "started"
        {
            return data.clone();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no permission request");
}

async fn an_open_request_outlives_a_server_restart(b: Backend) {
    let mut app = app_with(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let conv = start(&app, &u, json!({"agent_id": a, "prompt": "permission: t1 Run ls\nsay: end"})).await;
    let asked = open_request(&app, conv).await;
    let expires: time::OffsetDateTime = time::OffsetDateTime::parse(
        asked["expires_at"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    let left = expires - time::OffsetDateTime::now_utc();
    assert!(left > time::Duration::minutes(59) && left <= time::Duration::hours(1), "{asked}");
    app.restart().await;
    let path = format!("/api/conversations/{conv}/permissions/{}", asked["request_id"].as_str().unwrap());
    let r = app.post(&path, &u.key, json!({"option_id": "nope"})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "unknown_option");
    let r = app.post(&path, &u.key, json!({"option_id": "allow-once"})).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(t[0].status, "done");
    let ev = events(&app, conv).await;
    assert!(stdout(&ev).contains("permission: allow-once") && stdout(&ev).contains("end"), "{}", stdout(&ev));
    let r = requests(&ev);
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(r[1].1, json!({"request_id": "1", "outcome": "selected", "option_id": "allow-once"}));
}

async fn a_request_open_across_a_restart_still_expires(b: Backend) {
    let mut app = app_with(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({"permission_policy": {"ask_timeout": 3}})).await;
    let began = std::time::Instant::now();
    let conv = start(&app, &u, json!({"agent_id": a, "prompt": "permission: t1 Run ls"})).await;
    open_request(&app, conv).await;
    app.restart().await;
    let t = finished_turns(&app, conv, 1).await;
    assert!(began.elapsed() >= Duration::from_millis(2500), "{:?}", began.elapsed());
    assert_eq!(t[0].status, "done");
    let ev = events(&app, conv).await;
    assert!(stdout(&ev).contains("permission: reject"), "{}", stdout(&ev));
    let r = requests(&ev);
    assert_eq!(r[1], ("done".into(), json!({"request_id": "1", "outcome": "expired", "option_id": "reject"})));
}

async fn labels(app: &TestApp, u: &User, conv: Uuid) -> Value {
    let r = app.get(&format!("/api/conversations/{conv}"), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body["data"]["labels"].clone()
}

async fn agent_labels_are_merged_and_never_in_the_transcript(b: Backend) {
    let app = app_with(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let script = "labels: {\"stage\": \"triage\", \"owner\": null}\nsay: labelled";
    let conv =
        start(&app, &u, json!({"agent_id": a, "labels": {"owner": "me", "kept": "yes"}, "prompt": script})).await;
    finished_turns(&app, conv, 1).await;
    assert_eq!(labels(&app, &u, conv).await, json!({"stage": "triage", "kept": "yes"}));
    let ev = events(&app, conv).await;
    // Only the prompt itself (which scripted the stamp) mentions it.
    let mut shown = ev.iter().filter(|e| e.0 != "prompt");
    assert!(shown.all(|e| !e.2.contains("triage") && !e.3.contains("triage")), "{ev:?}");
    assert_eq!(stdout(&ev), "labelled");

    // A stamp that breaks a rule (a value over 256 bytes) is dropped whole; the turn goes on.
    let long = "v".repeat(257);
    let script = format!("labels: {{\"stage\": \"done\", \"big\": \"{long}\"}}\nsay: still here");
    let r = app.post(&format!("/api/conversations/{conv}/prompts"), &u.key, json!({"prompt": script})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let t = finished_turns(&app, conv, 2).await;
    assert_eq!(t[1].status, "done");
    assert_eq!(labels(&app, &u, conv).await, json!({"stage": "triage", "kept": "yes"}));
    assert_eq!(t.len(), 2, "a stamp opens no turn");
}

async fn usage_holds_only_what_the_runtime_reported(b: Backend) {
    let app = app_with(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let conv = start(&app, &u, json!({"agent_id": a, "prompt": "usage: 120 40\nsay: ok"})).await;
    let t = finished_turns(&app, conv, 1).await;
    // The usage_update carried no cost: counts only, no accounting.
    assert_eq!(t[0].usage, Some(json!({"input": 120, "output": 40})));
    let r = app.get(&format!("/api/conversations/{conv}/turns"), &u.key).await;
    assert_eq!(
        r.body["data"][0]["usage"],
        json!({"input": 120, "output": 40, "cache_read": null, "cache_write": null})
    );
    let r = app.post(&format!("/api/conversations/{conv}/prompts"), &u.key, json!({"prompt": "say: nothing"})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let t = finished_turns(&app, conv, 2).await;
    assert_eq!(t[1].usage, None, "no report, no usage");
}

crate::both!(
    a_launch_policy_may_only_narrow_the_agents,
    policies_answer_requests_without_asking,
    an_unanswered_ask_expires_at_the_shortest_timeout,
    the_global_permission_timeout_applies_without_a_policy,
    agent_labels_are_merged_and_never_in_the_transcript,
    usage_holds_only_what_the_runtime_reported,
    an_open_request_outlives_a_server_restart,
    a_request_open_across_a_restart_still_expires,
);
