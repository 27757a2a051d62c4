//! Teammates end to end (spec 2.6, 4.1, 4.5, 6.2): the roster, team
//! messages with their labels, the teammate's conversations, rebinding,
//! and the team stream, with the scripted ACP agent on real machines.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::{
    Backend, Resp, TestApp, User, assert_error, finished_turns, scripted_agent, sh, spawn_with, turns,
};
use crate::events::Sse;

pub const AGENT: &str = "/opt/acs/bin/scripted-agent";

pub async fn app_with_agent(b: Backend, extra: &[(&str, Value)]) -> TestApp {
    let bind = format!("{}:{AGENT}", scripted_agent().display());
    let mut overrides = vec![("sandbox.ro_binds", json!([bind]))];
    overrides.extend(extra.iter().cloned());
    spawn_with(b, &overrides).await
}

pub async fn agent(app: &TestApp, u: &User, extra: Value) -> Uuid {
    crate::common::acp_agent(app, u, AGENT, extra).await
}

pub async fn put_teammate(app: &TestApp, u: &User, agent: Uuid, body: Value) -> Resp {
    app.request(Method::PUT, &format!("/api/team/{agent}"), Some(&u.key), Some(body)).await
}

/// Adds `agent` to the team with no bindings.
pub async fn join(app: &TestApp, u: &User, agent: Uuid) {
    let r = put_teammate(app, u, agent, json!({})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
}

pub async fn message(app: &TestApp, key: &str, agent: Uuid, body: Value) -> Resp {
    app.post(&format!("/api/team/{agent}/messages"), key, body).await
}

/// Waits until a turn of the conversation runs.
async fn running(app: &TestApp, conv: Uuid) {
    for _ in 0..400 {
        if turns(app, conv).await.iter().any(|t| t.status == "running") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no turn ran");
}

pub fn conversation_of(r: &Resp) -> Uuid {
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    r.body["data"]["conversation_id"].as_str().expect("a conversation").parse().unwrap()
}

async fn conversation(app: &TestApp, u: &User, id: Uuid) -> Value {
    let r = app.get(&format!("/api/conversations/{id}"), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body["data"].clone()
}

async fn audit_actions(app: &TestApp, u: &User) -> Vec<String> {
    let r = app.get("/api/audit", &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body["data"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap().to_owned()).collect()
}

async fn the_roster_adds_updates_and_removes_teammates(b: Backend) {
    let app = app_with_agent(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let r = app.get("/api/team", &u.key).await;
    assert_eq!(r.body["data"], json!([]), "{}", r.text);

    let r = put_teammate(&app, &u, a, json!({})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let t = &r.body["data"];
    assert_eq!(t["agent_id"], json!(a));
    assert_eq!(t["agent"], app.get(&format!("/api/agents/{a}"), &u.key).await.body["data"]);
    for field in ["environment_id", "vault_id", "conversation", "last_turn"] {
        assert_eq!(t[field], Value::Null, "{field}");
    }
    // The same teammate again: nothing changes.
    let r = put_teammate(&app, &u, a, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);

    let env = app.post("/api/environments", &u.key, json!({"name": "e"})).await.body["data"]["id"].clone();
    let vault = app.post("/api/vaults", &u.key, json!({"name": "v"})).await.body["data"]["id"].clone();
    let r = put_teammate(&app, &u, a, json!({"environment_id": env, "vault_id": vault})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!((&r.body["data"]["environment_id"], &r.body["data"]["vault_id"]), (&env, &vault));
    // The whole teammate: an omitted binding is cleared.
    let r = put_teammate(&app, &u, a, json!({"vault_id": vault})).await;
    assert_eq!((&r.body["data"]["environment_id"], &r.body["data"]["vault_id"]), (&Value::Null, &vault));

    // Ownership and the agent's allowed lists, as on create.
    let other = app.user().await;
    let foreign = app.post("/api/environments", &other.key, json!({"name": "x"})).await.body["data"]["id"].clone();
    assert_error(
        &put_teammate(&app, &u, a, json!({"environment_id": foreign})).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(&put_teammate(&app, &u, Uuid::now_v7(), json!({})).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&put_teammate(&app, &other, a, json!({})).await, StatusCode::NOT_FOUND, "not_found");
    let strict = agent(&app, &u, json!({"allowed_environment_ids": [], "allowed_vault_ids": []})).await;
    let r = put_teammate(&app, &u, strict, json!({"environment_id": env})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "environment_not_allowed");
    let r = put_teammate(&app, &u, strict, json!({"vault_id": vault})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "vault_not_allowed");

    let r = app.get("/api/team", &u.key).await;
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1, "{}", r.text);
    assert_eq!(app.get("/api/team", &other.key).await.body["data"], json!([]));

    assert_eq!(app.delete(&format!("/api/team/{a}"), &u.key).await.status, StatusCode::NO_CONTENT);
    assert_error(&app.delete(&format!("/api/team/{a}"), &u.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_eq!(app.get("/api/team", &u.key).await.body["data"], json!([]));
    let actions = audit_actions(&app, &u).await;
    for action in ["team.member.added", "team.updated", "team.member.removed"] {
        assert!(actions.iter().any(|a| a == action), "{action} in {actions:?}");
    }
    // Deleting the agent takes its place on the team with it.
    join(&app, &u, a).await;
    assert_eq!(app.delete(&format!("/api/agents/{a}"), &u.key).await.status, StatusCode::NO_CONTENT);
    assert_eq!(app.get("/api/team", &u.key).await.body["data"], json!([]));
}

async fn messages_go_to_the_teammates_own_conversation_with_labels_merged_first(b: Backend) {
    let app = app_with_agent(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    assert_error(&message(&app, &u.key, a, json!({"prompt": "say: hi"})).await, StatusCode::NOT_FOUND, "not_found");
    join(&app, &u, a).await;
    assert_error(
        &message(&app, &u.key, a, json!({"prompt": "  "})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_prompt",
    );

    let r =
        message(&app, &u.key, a, json!({"prompt": "say: first", "labels": {"topic": "a"}, "client_request_id": "m-1"}))
            .await;
    let conv = conversation_of(&r);
    assert_eq!(r.body["data"]["client_request_id"], "m-1");
    assert!(["accepted", "queued"].contains(&r.body["data"]["status"].as_str().unwrap()), "{}", r.text);
    assert_eq!(r.body["data"]["sandbox_request"], Value::Null);
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(
        (t[0].origin.as_str(), t[0].client_request_id.as_deref(), t[0].status.as_str()),
        ("api", Some("m-1"), "done")
    );

    // The next message goes to the same conversation, its labels merged.
    let r = message(&app, &u.key, a, json!({"prompt": "say: second", "labels": {"step": "2"}})).await;
    assert_eq!(conversation_of(&r), conv);
    assert_eq!(r.body["data"]["status"], "accepted", "{}", r.text);
    assert_eq!(conversation(&app, &u, conv).await["labels"], json!({"topic": "a", "step": "2"}));
    finished_turns(&app, conv, 2).await;

    // Labels rules: counted after the merge, errors name the key sent; nothing is sent then.
    let many: BTreeMap<String, String> = (0..31).map(|i| (format!("k{i:02}"), "v".to_owned())).collect();
    let r = message(&app, &u.key, a, json!({"prompt": "say: no", "labels": many})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    let problems = r.body["errors"]["labels"].as_array().expect("errors.labels");
    assert!(problems.iter().all(|m| m.as_str().unwrap().starts_with("\"k30\"")), "{}", r.text);
    assert_eq!(turns(&app, conv).await.len(), 2);
    let r = message(&app, &u.key, a, json!({"prompt": "say: no", "labels": {"k": "x".repeat(257)}})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");

    // Busy while the teammate's turn runs.
    let r = message(&app, &u.key, a, json!({"prompt": "say: slow\nsleep: 3000"})).await;
    assert_eq!(conversation_of(&r), conv);
    running(&app, conv).await;
    let r = message(&app, &u.key, a, json!({"prompt": "say: too soon", "labels": {"late": "1"}})).await;
    assert_error(&r, StatusCode::CONFLICT, "conversation_busy");
    finished_turns(&app, conv, 3).await;
    assert!(conversation(&app, &u, conv).await["labels"].get("late").is_none(), "a refused message merges nothing");

    // The roster shows the conversation and its last turn.
    let r = app.get("/api/team", &u.key).await;
    let t = &r.body["data"][0];
    assert_eq!(t["conversation"]["id"], json!(conv), "{}", r.text);
    assert_eq!(t["last_turn"]["prompt"], "say: slow\nsleep: 3000");
    assert_eq!(t["last_turn"]["status"], "done");
    assert!(t["last_turn"]["id"].is_string() && t["last_turn"]["inserted_at"].is_string());

    // The teammate's conversations, with the label filter of the conversation list.
    let list = |q: &'static str| {
        let app = &app;
        let key = u.key.clone();
        async move { app.get(&format!("/api/team/{a}/conversations{q}"), &key).await }
    };
    let ids = |r: &Resp| r.body["data"].as_array().unwrap().iter().map(|c| c["id"].clone()).collect::<Vec<_>>();
    assert_eq!(ids(&list("").await), [json!(conv)]);
    assert_eq!(ids(&list("?label=topic:a&label[]=step:2").await), [json!(conv)]);
    assert!(ids(&list("?label=topic:b").await).is_empty());
    assert_error(&list("?label=nocolon").await, StatusCode::BAD_REQUEST, "invalid_label_filter");
    let plain = crate::common::create_conversation(&app, &u, json!({"agent_id": a})).await;
    assert!(!ids(&list("").await).contains(&plain["id"]), "a conversation opened directly is not a team one");
    let other = app.user().await;
    assert_error(
        &app.get(&format!("/api/team/{a}/conversations"), &other.key).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
}

async fn a_machine_key_labels_only_its_own_conversation(b: Backend) {
    let app = app_with_agent(b, &[]).await;
    let u = app.user().await;
    let (mine, theirs) = (agent(&app, &u, json!({})).await, agent(&app, &u, json!({})).await);
    join(&app, &u, mine).await;
    join(&app, &u, theirs).await;
    let own = conversation_of(&message(&app, &u.key, mine, json!({"prompt": "say: up"})).await);
    finished_turns(&app, own, 1).await;
    let machine: Uuid = conversation(&app, &u, own).await["sandbox_id"].as_str().unwrap().parse().unwrap();
    let key = sh(&app, machine, "printf %s \"$ACS_API_KEY\"").await.1;
    assert!(!key.is_empty());

    // Its own conversation: labels merge.
    let r = message(&app, &key, mine, json!({"prompt": "say: self", "labels": {"from": "machine"}})).await;
    assert_eq!(conversation_of(&r), own);
    assert_eq!(conversation(&app, &u, own).await["labels"], json!({"from": "machine"}));
    // Another teammate: a message may go, labels may not (not even on a new conversation).
    let r = message(&app, &key, theirs, json!({"prompt": "say: hi", "labels": {"from": "machine"}})).await;
    assert_error(&r, StatusCode::FORBIDDEN, "machine_may_not_label_another_conversation");
    let r = message(&app, &key, theirs, json!({"prompt": "say: hi"})).await;
    let other = conversation_of(&r);
    finished_turns(&app, other, 1).await;
    let r = message(&app, &key, theirs, json!({"prompt": "say: hi", "labels": {"from": "machine"}})).await;
    assert_error(&r, StatusCode::FORBIDDEN, "machine_may_not_label_another_conversation");
    // A machine's key does not change the team.
    let r = put_teammate(&app, &u, mine, json!({})).await;
    assert_eq!(r.status, StatusCode::OK);
    let r = app.request(Method::PUT, &format!("/api/team/{mine}"), Some(&key), Some(json!({}))).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
}

async fn rebinding_retires_the_old_machine_and_waits_for_the_turn(b: Backend) {
    let app = app_with_agent(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    join(&app, &u, a).await;
    let old = conversation_of(&message(&app, &u.key, a, json!({"prompt": "say: slow\nsleep: 3000"})).await);
    running(&app, old).await;
    let env = app.post("/api/environments", &u.key, json!({"name": "e"})).await.body["data"]["id"].clone();
    assert_error(
        &put_teammate(&app, &u, a, json!({"environment_id": env})).await,
        StatusCode::CONFLICT,
        "conversation_busy",
    );
    finished_turns(&app, old, 1).await;
    let machine = conversation(&app, &u, old).await["sandbox_id"].as_str().unwrap().to_owned();

    let r = put_teammate(&app, &u, a, json!({"environment_id": env})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(conversation(&app, &u, old).await["status"], "terminated");
    let m = app.get(&format!("/api/sandboxes/{machine}"), &u.key).await;
    assert_eq!(m.body["data"]["status"], "terminated", "{}", m.text);

    // The next message opens a new conversation with the new bindings.
    let new = conversation_of(&message(&app, &u.key, a, json!({"prompt": "say: again"})).await);
    assert_ne!(new, old);
    assert_eq!(conversation(&app, &u, new).await["environment_id"], env);
    finished_turns(&app, new, 1).await;
    let r = app.get(&format!("/api/team/{a}/conversations"), &u.key).await;
    assert_eq!(r.body["data"].as_array().unwrap().len(), 2, "{}", r.text);
}

async fn rebinding_a_persistent_teammate_onto_an_existing_home_is_refused(b: Backend) {
    let app = app_with_agent(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({"sandbox_mode": "persistent"})).await;
    join(&app, &u, a).await;
    let own = conversation_of(&message(&app, &u.key, a, json!({"prompt": "say: home"})).await);
    finished_turns(&app, own, 1).await;
    // The agent gets a second home, built from another environment, outside the team.
    let env = app.post("/api/environments", &u.key, json!({"name": "e"})).await.body["data"]["id"].clone();
    let other = crate::common::create_conversation(&app, &u, json!({"agent_id": a, "environment_id": env})).await;
    let r = put_teammate(&app, &u, a, json!({"environment_id": env})).await;
    assert_error(&r, StatusCode::CONFLICT, "teammate_machine_exists");
    assert_eq!(r.body["sandbox_id"], other["sandbox_id"], "{}", r.text);
    assert_eq!(conversation(&app, &u, own).await["status"], "idle", "nothing was retired");
}

async fn at_the_ceiling_a_new_team_conversation_waits_in_the_sandbox_queue(b: Backend) {
    let app =
        app_with_agent(b, &[("limits.sandboxes_per_account", json!(1)), ("queue.poll_interval_seconds", json!(0.2))])
            .await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    join(&app, &u, a).await;
    let holder = crate::common::create_conversation(&app, &u, json!({"agent_id": a})).await;
    let r = message(&app, &u.key, a, json!({"prompt": "say: waited", "labels": {"q": "1"}, "client_request_id": "w"}))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let d = &r.body["data"];
    assert_eq!(
        (d["status"].clone(), d["conversation_id"].clone(), d["client_request_id"].clone()),
        (json!("queued"), Value::Null, json!("w"))
    );
    assert_eq!(
        (d["sandbox_request"]["status"].clone(), d["sandbox_request"]["position"].clone()),
        (json!("queued"), json!(1))
    );

    // The machine is freed: the queue opens the teammate's conversation with the message.
    let holder = holder["id"].as_str().unwrap();
    assert_eq!(
        app.post(&format!("/api/conversations/{holder}/terminate"), &u.key, json!({})).await.status,
        StatusCode::OK
    );
    let mut conv = None;
    for _ in 0..300 {
        let r = app.get(&format!("/api/team/{a}/conversations?label=q:1"), &u.key).await;
        if let Some(c) = r.body["data"].as_array().and_then(|l| l.first()) {
            conv = Some(c["id"].as_str().unwrap().parse::<Uuid>().unwrap());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let conv = conv.expect("the queued start opened the team conversation");
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!((t[0].prompt.as_str(), t[0].client_request_id.as_deref()), ("say: waited", Some("w")));
    let team = app.get("/api/team", &u.key).await;
    assert_eq!(team.body["data"][0]["conversation"]["id"], json!(conv), "{}", team.text);
}

/// The team stream, resuming after `last`.
pub async fn team_stream(app: &TestApp, key: &str, last: Option<i64>) -> Sse {
    Sse::at(&app.http, &app.base, "/api/team/stream", key, last).await
}

async fn the_team_stream_carries_team_events_and_signals(b: Backend) {
    let app = app_with_agent(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    // A conversation opened directly is not on the team stream.
    let plain = crate::common::create_conversation(&app, &u, json!({"agent_id": a, "prompt": "say: plain"})).await;
    let plain: Uuid = plain["id"].as_str().unwrap().parse().unwrap();
    finished_turns(&app, plain, 1).await;

    let mut sse = team_stream(&app, &u.key, None).await;
    join(&app, &u, a).await;
    let (f, _) = sse.until(Some("team")).await;
    assert_eq!((f.id, f.data), (None, json!({"reason": "changed"})));
    let r = app.post(&format!("/api/team/{a}/schedules"), &u.key, json!({"cron": "@yearly", "prompt": "p"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let (f, skipped) = sse.until(Some("schedule")).await;
    assert_eq!(f.data, json!({"reason": "changed"}));
    assert!(skipped.iter().all(|f| f.event.is_some()), "no events yet: {skipped:?}");

    let conv = conversation_of(&message(&app, &u.key, a, json!({"prompt": "say: on the stream"})).await);
    finished_turns(&app, conv, 1).await;
    let mut ids = Vec::new();
    let mut text = String::new();
    while let Some(f) = sse.frame_within(Duration::from_secs(2)).await {
        let Some(id) = f.id else { continue };
        assert_eq!(f.data["conversation_id"], json!(conv), "{:?}", f.data);
        assert_eq!(f.data["agent_id"], json!(a));
        assert!(f.data.get("duration_ms").is_none(), "{:?}", f.data);
        if f.data["stream"] == "stdout" {
            text.push_str(f.data["data"].as_str().unwrap());
        }
        ids.push(id);
    }
    assert_eq!(text, "on the stream");
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");

    // Resuming after an id sends exactly what came after it.
    let mut again = team_stream(&app, &u.key, Some(ids[1])).await;
    for want in &ids[2..] {
        let (f, _) = again.until(None).await;
        assert_eq!(f.id, Some(*want));
    }
    // From the start: the team conversation's events only.
    let mut all = team_stream(&app, &u.key, None).await;
    let (f, _) = all.until(None).await;
    assert_eq!(f.data["conversation_id"], json!(conv));
}

crate::both!(
    the_roster_adds_updates_and_removes_teammates,
    messages_go_to_the_teammates_own_conversation_with_labels_merged_first,
    a_machine_key_labels_only_its_own_conversation,
    rebinding_retires_the_old_machine_and_waits_for_the_turn,
    rebinding_a_persistent_teammate_onto_an_existing_home_is_refused,
    at_the_ceiling_a_new_team_conversation_waits_in_the_sandbox_queue,
    the_team_stream_carries_team_events_and_signals,
);
