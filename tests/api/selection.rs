//! Deleting what a live conversation runs with (docs/conversations.md,
//! "Deleting its agent, environment or vault"): deletion is allowed, and
//! nothing that follows fails silently. A prompt (or wake, team message,
//! schedule run) meeting a deleted agent, environment or vault is refused
//! with 409 `selection_deleted` naming it in `field`; a prompt accepted
//! before the deletion ends in a `failed` turn with `error` set, its `turn`
//! `failed` event and the webhook of that event.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::Row;
use uuid::Uuid;

use crate::common::{
    Backend, Resp, TestApp, User, assert_error, create_conversation, finished_turns, scripted_app,
    scripted_runtime_agent, turns,
};
use crate::receiver::Receiver;

async fn made(app: &TestApp, u: &User, path: &str, body: Value) -> Uuid {
    let r = app.post(path, &u.key, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"]["id"].as_str().unwrap().parse().unwrap()
}

async fn vault(app: &TestApp, u: &User, value: &str) -> Uuid {
    let id = made(app, u, "/api/vaults", json!({"name": "v"})).await;
    let path = format!("/api/vaults/{id}/secrets/VAULT_TOKEN");
    let r = app.request(Method::PUT, &path, Some(&u.key), Some(json!({"value": value}))).await;
    assert!(r.status.is_success(), "{}", r.text);
    id
}

/// Deletes the `what` (`agent`, `environment`, `vault`) of id `id`.
async fn delete(app: &TestApp, u: &User, what: &str, id: Uuid) {
    let r = app.delete(&format!("/api/{what}s/{id}"), &u.key).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
}

fn id_of(v: &Value, field: &str) -> Uuid {
    v[field].as_str().unwrap().parse().unwrap()
}

#[track_caller]
fn assert_deleted(r: &Resp, what: &str) {
    assert_error(r, StatusCode::CONFLICT, "selection_deleted");
    assert_eq!(r.body["field"], what, "{}", r.text);
    assert!(r.body["message"].as_str().unwrap().contains(&format!("{what} was deleted")), "{}", r.text);
}

async fn prompt(app: &TestApp, u: &User, conv: Uuid, text: &str) -> Resp {
    app.post(&format!("/api/conversations/{conv}/prompts"), &u.key, json!({"prompt": text})).await
}

async fn sandbox_status(app: &TestApp, id: Uuid) -> String {
    let row = acs::core::sandboxes::store::get(&app.state().db, id).await.unwrap().unwrap();
    row.status.as_str().to_owned()
}

async fn wait_sandbox(app: &TestApp, id: Uuid, want: &str) {
    for _ in 0..600 {
        if sandbox_status(app, id).await == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("sandbox {id} is {}, wanted {want}", sandbox_status(app, id).await);
}

/// A conversation of an agent naming an environment (variables only) and a vault, after one turn.
struct Live {
    agent: Uuid,
    environment: Uuid,
    vault: Uuid,
    conv: Uuid,
    machine: Uuid,
}

async fn live(app: &TestApp, u: &User, agent_extra: Value) -> Live {
    let environment = made(app, u, "/api/environments", json!({"name": "e", "env_vars": {"GREETING": "hi"}})).await;
    let vault = vault(app, u, "vault-value-1234").await;
    let mut extra = json!({"environment_id": environment, "vault_id": vault});
    extra.as_object_mut().unwrap().extend(agent_extra.as_object().unwrap().clone());
    let agent = scripted_runtime_agent(app, u, "acp", extra).await;
    let c = create_conversation(app, u, json!({"agent_id": agent, "prompt": "say: first"})).await;
    let (conv, machine) = (id_of(&c, "id"), id_of(&c, "sandbox_id"));
    assert_eq!(finished_turns(app, conv, 1).await[0].status, "done");
    Live { agent, environment, vault, conv, machine }
}

fn part(l: &Live, what: &str) -> Uuid {
    match what {
        "agent" => l.agent,
        "environment" => l.environment,
        _ => l.vault,
    }
}

async fn a_prompt_after_a_deletion_is_refused_naming_what_was_deleted(b: Backend) {
    let app = scripted_app(b, &[]).await;
    let u = app.user().await;
    for what in ["environment", "vault", "agent"] {
        let l = live(&app, &u, json!({})).await;
        delete(&app, &u, what, part(&l, what)).await;
        assert_deleted(&prompt(&app, &u, l.conv, "say: second").await, what);
        assert_deleted(&app.post(&format!("/api/conversations/{}/wake", l.conv), &u.key, json!({})).await, what);
        assert_eq!(turns(&app, l.conv).await.len(), 1, "{what}: no turn opened");
        let c = app.get(&format!("/api/conversations/{}", l.conv), &u.key).await;
        assert_eq!(c.body["data"]["status"], "idle", "{what}: {}", c.text);
        assert_eq!(sandbox_status(&app, l.machine).await, "ready", "{what}: the machine is left as it is");

        // A reapply onto another one puts the conversation back to work on the same machine.
        let fix = match what {
            "environment" => {
                json!({"environment_id": made(&app, &u, "/api/environments", json!({"name": "e2"})).await})
            }
            "vault" => json!({"vault_id": vault(&app, &u, "vault-value-5678").await}),
            _ => json!({"agent_id": scripted_runtime_agent(&app, &u, "acp", json!({})).await}),
        };
        let r = app.post(&format!("/api/conversations/{}/reapply", l.conv), &u.key, fix).await;
        assert_eq!(r.status, StatusCode::OK, "{what}: {}", r.text);
        let r = prompt(&app, &u, l.conv, "say: back").await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{what}: {}", r.text);
        assert_eq!(finished_turns(&app, l.conv, 2).await[1].status, "done", "{what}");
    }
}

async fn a_sleeping_conversation_is_refused_before_its_machine_wakes(b: Backend) {
    let app = scripted_app(b, &[("sandbox.idle_seconds", json!(1))]).await;
    let u = app.user().await;
    // An ephemeral machine that was reclaimed, and a persistent home that was parked.
    for (mode, slept, what) in [
        ("ephemeral", "terminated", "vault"),
        ("persistent", "suspended", "environment"),
        ("persistent", "suspended", "agent"),
    ] {
        let l = live(&app, &u, json!({"sandbox_mode": mode})).await;
        wait_sandbox(&app, l.machine, slept).await;
        delete(&app, &u, what, part(&l, what)).await;
        assert_deleted(&prompt(&app, &u, l.conv, "say: wake up").await, what);
        assert_deleted(&app.post(&format!("/api/conversations/{}/wake", l.conv), &u.key, json!({})).await, what);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(sandbox_status(&app, l.machine).await, slept, "{mode}/{what}: nothing was woken");
        let c = app.get(&format!("/api/conversations/{}", l.conv), &u.key).await;
        assert_eq!(c.body["data"]["sandbox_id"], json!(l.machine), "{mode}/{what}: no machine was launched");
        assert_eq!(turns(&app, l.conv).await.len(), 1, "{mode}/{what}");
    }
}

/// A prompt waits (`queued`) for a machine still being built; the `what` is deleted before it is
/// ready. The turn then fails in the open: `error`, `turn` `failed` event, its webhook.
async fn deleted_while_a_queued_prompt_waits(b: Backend, what: &str) {
    let app = scripted_app(
        b,
        &[("webhooks.allow_http", json!(true)), ("webhooks.allowed_private_cidrs", json!(["127.0.0.1/32"]))],
    )
    .await;
    let u = app.user().await;
    let receiver = Receiver::start().await;
    let r = app
        .post("/api/webhooks", &u.key, json!({"url": receiver.url("/hook"), "event_types": ["conversation.turn.*"]}))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let environment = made(&app, &u, "/api/environments", json!({"name": "slow", "setup_script": "sleep 3"})).await;
    let vault = vault(&app, &u, "vault-value-1234").await;
    let agent =
        scripted_runtime_agent(&app, &u, "acp", json!({"environment_id": environment, "vault_id": vault})).await;
    let c = create_conversation(&app, &u, json!({"agent_id": agent})).await;
    let conv = id_of(&c, "id");
    // The machine has read its environment and vault: its setup runs.
    for _ in 0..400 {
        let row = sqlx::query("SELECT COUNT(*) AS n FROM events WHERE conversation_id = $1 AND stage = 'setup'")
            .bind(conv.to_string())
            .fetch_one(&app.state().db.pool)
            .await
            .unwrap();
        if row.get::<i64, _>("n") > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let r = app
        .post(
            &format!("/api/conversations/{conv}/prompts"),
            &u.key,
            json!({"prompt": "say: never", "client_request_id": "req-7"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(r.body["data"]["status"], "queued");
    let id = match what {
        "agent" => agent,
        "environment" => environment,
        _ => vault,
    };
    delete(&app, &u, what, id).await;

    let t = finished_turns(&app, conv, 1).await;
    assert_eq!((t[0].status.as_str(), t[0].client_request_id.as_deref()), ("failed", Some("req-7")), "{t:?}");
    let error = t[0].error.clone().unwrap_or_default();
    assert!(error.starts_with(&format!("selection_deleted: The conversation's {what} was deleted")), "{error}");
    // The log and the webhook tell it (the turn's row can settle a moment before its events land).
    let mut r = app.get(&format!("/api/conversations/{conv}/events"), &u.key).await;
    for _ in 0..100 {
        let turns = r.body["data"].as_array().map_or(0, |all| all.iter().filter(|e| e["stage"] == "turn").count());
        if turns >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        r = app.get(&format!("/api/conversations/{conv}/events"), &u.key).await;
    }
    let turn_events: Vec<&Value> = r.body["data"].as_array().unwrap().iter().filter(|e| e["stage"] == "turn").collect();
    assert_eq!(turn_events.iter().map(|e| e["state"].as_str().unwrap()).collect::<Vec<_>>(), ["started", "failed"]);
    let failed: Value = serde_json::from_str(turn_events[1]["data"].as_str().unwrap()).unwrap();
    assert_eq!((&failed["turn_id"], &failed["error"]), (&json!(t[0].id), &json!(error)));
    let started: Value = serde_json::from_str(turn_events[0]["data"].as_str().unwrap()).unwrap();
    assert_eq!(started["client_request_id"], "req-7");
    let turn_id = t[0].id.to_string();
    let hook = receiver
        .wait_for_one("the turn's failure", |q| {
            q.event_type() == "conversation.turn.failed" && q.json()["data"]["turn_id"] == turn_id
        })
        .await;
    assert_eq!(hook.json()["data"]["conversation_id"], conv.to_string());
    // The conversation is intact; the next prompt is refused at once.
    let c = app.get(&format!("/api/conversations/{conv}"), &u.key).await;
    assert_eq!(c.body["data"]["status"], "idle", "{}", c.text);
    assert_deleted(&prompt(&app, &u, conv, "say: again").await, what);
}

async fn the_environment_is_deleted_while_a_queued_prompt_waits(b: Backend) {
    deleted_while_a_queued_prompt_waits(b, "environment").await
}

async fn the_vault_is_deleted_while_a_queued_prompt_waits(b: Backend) {
    deleted_while_a_queued_prompt_waits(b, "vault").await
}

async fn the_agent_is_deleted_while_a_queued_prompt_waits(b: Backend) {
    deleted_while_a_queued_prompt_waits(b, "agent").await
}

async fn team_messages_and_schedules_meet_the_same_refusal(b: Backend) {
    let mut app = scripted_app(b, &[("team.tick_seconds", json!(0.1))]).await;
    let u = app.user().await;
    let a = scripted_runtime_agent(&app, &u, "acp", json!({})).await;
    let v = vault(&app, &u, "vault-value-1234").await;
    let r = app.request(Method::PUT, &format!("/api/team/{a}"), Some(&u.key), Some(json!({"vault_id": v}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let r = app.post(&format!("/api/team/{a}/messages"), &u.key, json!({"prompt": "say: hello"})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let conv: Uuid = r.body["data"]["conversation_id"].as_str().unwrap().parse().unwrap();
    finished_turns(&app, conv, 1).await;
    delete(&app, &u, "vault", v).await;
    let r = app.post(&format!("/api/team/{a}/messages"), &u.key, json!({"prompt": "say: again"})).await;
    assert_deleted(&r, "vault");

    // A schedule's run into the teammate's conversation takes the same path.
    let r = app
        .post(&format!("/api/team/{a}/schedules"), &u.key, json!({"cron": "* * * * *", "prompt": "say: tick"}))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let due = r.body["data"]["next_run_at"].as_str().unwrap().to_owned();
    let due = time::OffsetDateTime::parse(&due, &time::format_description::well_known::Rfc3339).unwrap();
    let offset = (due - time::OffsetDateTime::now_utc()).as_seconds_f64() - 1.0;
    app.restart_with(&[("team.clock_offset_seconds", json!(offset))]).await;
    let mut last_error = Value::Null;
    for _ in 0..200 {
        let r = app.get(&format!("/api/team/{a}/schedules"), &u.key).await;
        last_error = r.body["data"][0]["last_error"].clone();
        if !last_error.is_null() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let last_error = last_error.as_str().unwrap_or_default().to_owned();
    assert!(last_error.starts_with("selection_deleted: The conversation's vault was deleted"), "{last_error}");
    assert_eq!(turns(&app, conv).await.len(), 1, "no turn opened");
}

crate::both!(
    a_prompt_after_a_deletion_is_refused_naming_what_was_deleted,
    a_sleeping_conversation_is_refused_before_its_machine_wakes,
    the_environment_is_deleted_while_a_queued_prompt_waits,
    the_vault_is_deleted_while_a_queued_prompt_waits,
    the_agent_is_deleted_while_a_queued_prompt_waits,
    team_messages_and_schedules_meet_the_same_refusal,
);
