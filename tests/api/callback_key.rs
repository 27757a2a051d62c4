//! The callback key (scope `sandbox`, `ACS_API_KEY` inside a machine) acts
//! only for its own machine and conversation (spec 5.2, 5.7): a second live
//! conversation of the same account on another machine, working while the
//! key's streams are open, is never on them, in any list, or reachable
//! through any route the key may call; its streams end when the key is
//! revoked.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::Row;
use uuid::Uuid;

use crate::common::{
    Backend, TestApp, assert_error, assert_refused, create_conversation, finished_turns, scripted_app,
    scripted_runtime_agent, sh,
};
use crate::events::{Frame, Sse};

fn id(v: &Value, field: &str) -> Uuid {
    v[field].as_str().unwrap().parse().unwrap()
}

async fn newest_event_id(app: &TestApp) -> i64 {
    let row = sqlx::query("SELECT COALESCE(MAX(id), 0) AS id FROM events").fetch_one(&app.state().db.pool).await;
    row.unwrap().get("id")
}

/// Frames until the `turn` `done` event of `conv`, that frame included.
async fn until_turn_done(sse: &mut Sse, conv: Uuid) -> Vec<Frame> {
    let mut frames = Vec::new();
    loop {
        let f = sse.frame_within(Duration::from_secs(30)).await.expect("a frame within 30 s");
        let done = f.event.is_none()
            && f.data["conversation_id"] == conv.to_string()
            && f.data["stage"] == "turn"
            && f.data["state"] == "done";
        frames.push(f);
        if done {
            return frames;
        }
    }
}

/// Signal frames before the first event of `conv`.
fn signals_before(frames: &[Frame], conv: Uuid) -> usize {
    frames
        .iter()
        .take_while(|f| f.event.is_some() || f.data["conversation_id"] != conv.to_string())
        .filter(|f| f.event.as_deref() == Some("conversations"))
        .count()
}

async fn the_callback_key_never_sees_a_second_live_conversation(b: Backend) {
    let app = scripted_app(b, &[]).await;
    let u = app.user().await;
    let a = scripted_runtime_agent(&app, &u, "acp", json!({})).await;
    let mine = create_conversation(&app, &u, json!({"agent_id": a, "prompt": "say: mine-first"})).await;
    let (mine, machine) = (id(&mine, "id"), id(&mine, "sandbox_id"));
    finished_turns(&app, mine, 1).await;
    let other = create_conversation(
        &app,
        &u,
        json!({"agent_id": a, "prompt": "say: other-first", "labels": {"who": "other"}, "title": "other-title"}),
    )
    .await;
    let (other, elsewhere) = (id(&other, "id"), id(&other, "sandbox_id"));
    assert_ne!(machine, elsewhere, "ephemeral conversations run on machines of their own");
    finished_turns(&app, other, 1).await;
    // The key the machine really holds.
    let key = sh(&app, machine, "printf %s \"$ACS_API_KEY\"").await.1;
    assert!(key.starts_with("acs_"), "{key}");

    // The key's streams and the owner's, opened before the second conversation works.
    let last = newest_event_id(&app).await;
    let mut key_all = Sse::at(&app.http, &app.base, "/api/events/stream?blocks=true", &key, Some(last)).await;
    let mut key_own =
        Sse::at(&app.http, &app.base, &format!("/api/conversations/{mine}/stream"), &key, Some(last)).await;
    let mut owner_all = Sse::at(&app.http, &app.base, "/api/events/stream", &u.key, Some(last)).await;
    let r = app
        .post(
            &format!("/api/conversations/{other}/prompts"),
            &u.key,
            json!({"prompt": "say: other-live-marker\nlabels: {\"stage\": \"two\"}\ntool: t1 read Read other.txt"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    finished_turns(&app, other, 2).await;
    let r = app.post(&format!("/api/conversations/{mine}/prompts"), &u.key, json!({"prompt": "say: mine-live"})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    finished_turns(&app, mine, 2).await;

    // The owner's stream saw the other conversation, and was told its list changed.
    let seen = until_turn_done(&mut owner_all, mine).await;
    assert!(seen.iter().any(|f| f.data["conversation_id"] == other.to_string()), "the owner sees both");
    assert!(signals_before(&seen, mine) >= 1, "the owner hears of the other conversation's turn");
    // The key's streams show its own conversation only, and no signal of the other's changes.
    let seen = until_turn_done(&mut key_all, mine).await;
    for f in &seen {
        let text = f.data.to_string();
        assert!(!text.contains("other-live-marker") && !text.contains(&other.to_string()), "{text}");
        if f.event.is_none() {
            assert_eq!(f.data["conversation_id"], mine.to_string(), "{text}");
        }
    }
    assert_eq!(signals_before(&seen, mine), 0, "the other conversation's changes are not signalled to the key");
    assert!(seen.iter().any(|f| f.data["data"].as_str().is_some_and(|d| d.contains("mine-live"))));
    // Its own conversation's changes are signalled (the turn's end: maybe already read, before its event).
    let own_signal = seen
        .iter()
        .skip_while(|f| f.event.is_some() || f.data["conversation_id"] != mine.to_string())
        .any(|f| f.event.as_deref() == Some("conversations"));
    if !own_signal {
        let (signal, _) = key_all.until(Some("conversations")).await;
        assert_eq!(signal.data, json!({"reason": "changed"}));
    }
    let seen = until_turn_done_own(&mut key_own).await;
    assert!(seen.iter().all(|f| !f.data.to_string().contains("other-live-marker")));

    // Lists and reads.
    let ids = |r: &crate::common::Resp| -> Vec<Value> {
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        r.body["data"].as_array().unwrap().iter().map(|c| c["id"].clone()).collect()
    };
    assert_eq!(ids(&app.get("/api/conversations", &key).await), [json!(mine)]);
    assert!(ids(&app.get("/api/conversations?label=who:other", &key).await).is_empty());
    assert_eq!(ids(&app.get("/api/sandboxes", &key).await), [json!(machine)]);
    let detail = app.get(&format!("/api/sandboxes/{machine}"), &key).await;
    let on_machine: Vec<&Value> =
        detail.body["data"]["conversations"].as_array().unwrap().iter().map(|c| &c["id"]).collect();
    assert_eq!(on_machine, [&json!(mine)]);
    for part in ["", "/events", "/history", "/turns", "/stream"] {
        let r = app.get(&format!("/api/conversations/{other}{part}"), &key).await;
        assert_error(&r, StatusCode::NOT_FOUND, "not_found");
    }
    for part in ["prompts", "wake", "interrupt", "terminate"] {
        let r = app.post(&format!("/api/conversations/{other}/{part}"), &key, json!({"prompt": "say: hijack"})).await;
        assert_error(&r, StatusCode::NOT_FOUND, "not_found");
    }
    let r = app
        .request(
            Method::PATCH,
            &format!("/api/conversations/{other}/labels"),
            Some(&key),
            Some(json!({"labels": {"x": "y"}})),
        )
        .await;
    assert_error(&r, StatusCode::FORBIDDEN, "machine_may_not_label_another_conversation");
    for path in ["", "/status", "/files?path=/etc/hostname", "/changes?path=/workspace", "/egress"] {
        let r = app.get(&format!("/api/sandboxes/{elsewhere}{path}"), &key).await;
        assert_error(&r, StatusCode::NOT_FOUND, "sandbox_not_found");
    }
    // Routes beyond its machine refuse it: the team stream and lists, the queue, webhooks, agents.
    for path in [
        "/api/team/stream",
        &format!("/api/team/{a}/conversations"),
        "/api/team",
        "/api/sandbox-queue",
        "/api/webhooks",
        "/api/agents",
    ] {
        assert_refused(&app.get(path, &key).await, StatusCode::FORBIDDEN, "insufficient_scope");
    }
    // Its agent's permission requests are for a person to answer, not for the machine.
    let r =
        app.post(&format!("/api/conversations/{mine}/permissions/1"), &key, json!({"option_id": "allow-once"})).await;
    assert_refused(&r, StatusCode::FORBIDDEN, "insufficient_scope");
    // The other conversation is as it was.
    let r = app.get(&format!("/api/conversations/{other}"), &u.key).await;
    assert_eq!(r.body["data"]["labels"], json!({"who": "other", "stage": "two"}), "{}", r.text);

    // Ending its machine revokes the key: its open streams end, the owner's goes on.
    let r = app.post(&format!("/api/conversations/{mine}/terminate"), &u.key, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert!(key_all.ends_within(Duration::from_secs(10)).await, "the key's all-conversations stream ends");
    assert!(key_own.ends_within(Duration::from_secs(10)).await, "the key's conversation stream ends");
    assert!(!owner_all.ends_within(Duration::from_millis(500)).await, "the owner's stream stays open");
    assert_eq!(app.get("/api/conversations", &key).await.status, StatusCode::UNAUTHORIZED);
}

/// Frames of a conversation stream (no `conversation_id` in its frames) until its `turn` `done`.
async fn until_turn_done_own(sse: &mut Sse) -> Vec<Frame> {
    let mut frames = Vec::new();
    loop {
        let f = sse.frame_within(Duration::from_secs(30)).await.expect("a frame within 30 s");
        let done = f.data["stage"] == "turn" && f.data["state"] == "done";
        frames.push(f);
        if done {
            return frames;
        }
    }
}

crate::both!(the_callback_key_never_sees_a_second_live_conversation);
