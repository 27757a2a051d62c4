//! Attach (spec 4.1 create rules 2, 3, 7, 8): conversations opened on an
//! existing sandbox with `sandbox_id`, the `claude`/`codex` guest pairing and
//! its full-scope rule, one running turn per runtime on a machine for the
//! other runtimes, one inference source for codex conversations on a
//! machine, and execution limits.

use std::time::Duration;

use acs::core::sandboxes::model::ConversationStatus;
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::{
    Backend, Resp, SCRIPTED_AGENT, TestApp, User, assert_error, finished_turns, id, scripted_app,
    scripted_runtime_agent,
};

crate::both!(
    attach_refusals_at_their_boundaries,
    a_second_conversation_shares_the_machine,
    claude_and_codex_pair_on_a_home_with_a_full_scope_key,
    codex_conversations_on_a_machine_share_one_source,
    one_gemini_turn_at_a_time_on_a_machine,
    prompts_queued_on_a_sleeping_machine_run_one_turn_of_a_runtime_at_a_time,
    execution_limits_are_checked_and_refused,
);

async fn app(b: Backend, extra: &[(&str, Value)]) -> TestApp {
    scripted_app(b, extra).await
}

async fn agent(app: &TestApp, u: &User, runtime: &str, extra: Value) -> Uuid {
    scripted_runtime_agent(app, u, runtime, extra).await
}

async fn open(app: &TestApp, key: &str, body: Value) -> Resp {
    app.post("/api/conversations", key, body).await
}

/// Opens a conversation (201) and waits for its machine; returns the conversation and machine ids.
async fn opened(app: &TestApp, u: &User, body: Value) -> (Uuid, Uuid) {
    let c = crate::common::create_conversation(app, u, body).await;
    let machine: Uuid = c["sandbox_id"].as_str().unwrap().parse().unwrap();
    wait_machine(app, machine, "ready").await;
    (id(&c), machine)
}

async fn wait_machine(app: &TestApp, machine: Uuid, want: &str) {
    for _ in 0..1200 {
        let row = acs::core::sandboxes::store::get(&app.state().db, machine).await.unwrap().unwrap();
        if row.status.as_str() == want {
            return;
        }
        assert_ne!(row.status.as_str(), "failed", "machine failed: {:?}", row.error);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("machine {machine} never became {want}");
}

async fn wait_conversation(app: &TestApp, conv: Uuid, want: ConversationStatus) {
    for _ in 0..1200 {
        let c = acs::core::conversations::store::get(&app.state().db, conv).await.unwrap().unwrap();
        if c.status == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("conversation {conv} never became {want:?}");
}

async fn prompt(app: &TestApp, u: &User, conv: Uuid, text: &str) -> Resp {
    app.post(&format!("/api/conversations/{conv}/prompts"), &u.key, json!({"prompt": text})).await
}

async fn restricted_key(app: &TestApp, u: &User) -> String {
    let r = app.post("/api/keys", &u.key, json!({"name": "narrow", "scope": "restricted"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"]["api_key"].as_str().unwrap().to_owned()
}

/// The stages logged on a conversation.
async fn stages(app: &TestApp, conv: Uuid) -> Vec<String> {
    use sqlx::Row;
    let rows = sqlx::query("SELECT stage FROM events WHERE conversation_id = $1 AND kind = 'stage' ORDER BY id")
        .bind(conv.to_string())
        .fetch_all(&app.state().db.pool)
        .await
        .unwrap();
    rows.iter().filter_map(|r| r.get::<Option<String>, _>("stage")).collect()
}

async fn attach_refusals_at_their_boundaries(b: Backend) {
    let app = app(b, &[]).await;
    let u = app.user().await;
    let acp = agent(&app, &u, "acp", json!({})).await;
    let (_, machine) = opened(&app, &u, json!({"agent_id": acp})).await;

    let r = open(&app, &u.key, json!({"agent_id": acp, "sandbox_id": Uuid::new_v4()})).await;
    assert_error(&r, StatusCode::NOT_FOUND, "sandbox_not_found");
    let other = app.user().await;
    let theirs = agent(&app, &other, "acp", json!({})).await;
    let r = open(&app, &other.key, json!({"agent_id": theirs, "sandbox_id": machine})).await;
    assert_error(&r, StatusCode::NOT_FOUND, "sandbox_not_found");

    let r = open(&app, &u.key, json!({"agent_id": acp, "sandbox_id": machine, "sandbox_api_access": "none"})).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert!(r.body["errors"]["sandbox_api_access"].is_array(), "{}", r.text);

    let env = app.post("/api/environments", &u.key, json!({"name": "elsewhere"})).await;
    assert_eq!(env.status, StatusCode::CREATED, "{}", env.text);
    let body = json!({"agent_id": acp, "sandbox_id": machine, "environment_id": id(&env.body["data"])});
    assert_error(&open(&app, &u.key, body).await, StatusCode::UNPROCESSABLE_ENTITY, "sandbox_identity_mismatch");
    let another = agent(&app, &u, "acp", json!({})).await;
    let r = open(&app, &u.key, json!({"agent_id": another, "sandbox_id": machine})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "sandbox_identity_mismatch");

    let r = app
        .request(
            reqwest::Method::PATCH,
            &format!("/api/agents/{acp}"),
            Some(&u.key),
            Some(json!({"runtime": "gemini"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let r = open(&app, &u.key, json!({"agent_id": acp, "sandbox_id": machine})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "sandbox_runtime_mismatch");

    // A machine that is gone is no longer attachable; an attach never waits in the queue.
    let fresh = agent(&app, &u, "acp", json!({})).await;
    let (conv, gone) = opened(&app, &u, json!({"agent_id": fresh})).await;
    let r = app.post(&format!("/api/conversations/{conv}/terminate"), &u.key, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    wait_machine(&app, gone, "terminated").await;
    let r = open(&app, &u.key, json!({"agent_id": fresh, "sandbox_id": gone, "queue": true})).await;
    assert_error(&r, StatusCode::CONFLICT, "sandbox_not_attachable");
}

async fn a_second_conversation_shares_the_machine(b: Backend) {
    let app = app(b, &[]).await;
    let u = app.user().await;
    let acp = agent(&app, &u, "acp", json!({})).await;
    let (first, machine) = opened(&app, &u, json!({"agent_id": acp, "prompt": "say: one"})).await;
    finished_turns(&app, first, 1).await;

    // `sandbox_mode` is ignored with `sandbox_id`.
    let r = open(&app, &u.key, json!({"agent_id": acp, "sandbox_id": machine, "sandbox_mode": "persistent"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let second = id(&r.body["data"]);
    assert_eq!(r.body["data"]["sandbox_id"], json!(machine));
    assert_eq!(r.body["data"]["status"], "idle", "{}", r.text);
    assert_eq!(prompt(&app, &u, second, "say: two").await.status, StatusCode::ACCEPTED);
    let t = finished_turns(&app, second, 1).await;
    assert_eq!(t[0].status, "done", "{t:?}");
    // One `acp` turn at a time on the machine: the first conversation goes on once the second's ended.
    assert_eq!(prompt(&app, &u, first, "say: three").await.status, StatusCode::ACCEPTED);
    let t = finished_turns(&app, first, 2).await;
    assert!(t.iter().all(|t| t.status == "done"), "{t:?}");
    assert!(!stages(&app, second).await.contains(&"provision".to_owned()), "no new machine was built");

    let r = app.get(&format!("/api/sandboxes/{machine}"), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["conversations"].as_array().unwrap().len(), 2, "{}", r.text);
    let sandboxes = app.get("/api/sandboxes", &u.key).await;
    assert_eq!(sandboxes.body["data"].as_array().unwrap().len(), 1, "{}", sandboxes.text);
}

async fn claude_and_codex_pair_on_a_home_with_a_full_scope_key(b: Backend) {
    let app = app(b, &[]).await;
    let u = app.user().await;
    let claude = agent(&app, &u, "claude", json!({"sandbox_mode": "persistent"})).await;
    let codex = agent(&app, &u, "codex", json!({"sandbox_mode": "persistent"})).await;
    let (home_conv, home) = opened(&app, &u, json!({"agent_id": claude, "prompt": "say: host"})).await;
    finished_turns(&app, home_conv, 1).await;

    let narrow = restricted_key(&app, &u).await;
    let r = open(&app, &narrow, json!({"agent_id": codex, "sandbox_id": home})).await;
    assert_error(&r, StatusCode::FORBIDDEN, "guest_attach_requires_full_scope");
    assert_eq!(r.body["reason"], "insufficient_scope", "{}", r.text);

    let body = json!({"agent_id": codex, "sandbox_id": home, "channel_id": "pair", "prompt": "say: guest"});
    let r = open(&app, &u.key, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let guest = id(&r.body["data"]);
    assert_eq!(r.body["data"]["sandbox_id"], json!(home));
    let t = finished_turns(&app, guest, 1).await;
    assert_eq!(t[0].status, "done", "{t:?}");

    // A fresh rotation of the guest's channel needs full scope too; the owner's own attach does not.
    let body = json!({"agent_id": codex, "channel_id": "pair", "fresh": true});
    assert_error(&open(&app, &narrow, body).await, StatusCode::FORBIDDEN, "guest_attach_requires_full_scope");
    let r = open(&app, &narrow, json!({"agent_id": claude, "sandbox_id": home})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);

    // A third agent (of either runtime) may not join the pair.
    let other_codex = agent(&app, &u, "codex", json!({"sandbox_mode": "persistent"})).await;
    let r = open(&app, &u.key, json!({"agent_id": other_codex, "sandbox_id": home})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "sandbox_identity_mismatch");
    let gemini = agent(&app, &u, "gemini", json!({"sandbox_mode": "persistent"})).await;
    let r = open(&app, &u.key, json!({"agent_id": gemini, "sandbox_id": home})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "sandbox_identity_mismatch");

    // Pairing needs a persistent home.
    let eph_claude = agent(&app, &u, "claude", json!({})).await;
    let (_, eph) = opened(&app, &u, json!({"agent_id": eph_claude})).await;
    let r = open(&app, &u.key, json!({"agent_id": codex, "sandbox_id": eph})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "sandbox_identity_mismatch");
}

async fn credential_set(app: &TestApp, u: &User, name: &str, value: &str) -> Uuid {
    let r = app.post("/api/account/inference-credential-sets", &u.key, json!({"name": name})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let set = id(&r.body["data"]);
    let path = format!("/api/account/inference-credential-sets/{set}/credentials/openai_api_key");
    let r = app.request(reqwest::Method::PUT, &path, Some(&u.key), Some(json!({"value": value}))).await;
    assert!(r.status.is_success(), "{}", r.text);
    set
}

async fn codex_conversations_on_a_machine_share_one_source(b: Backend) {
    let app = app(b, &[]).await;
    let u = app.user().await;
    let (x, y) = (credential_set(&app, &u, "x", "sk-x").await, credential_set(&app, &u, "y", "sk-y").await);
    let codex = agent(&app, &u, "codex", json!({"sandbox_mode": "persistent"})).await;
    let (_, home) = opened(&app, &u, json!({"agent_id": codex, "inference_credential_id": y})).await;

    let r = open(&app, &u.key, json!({"agent_id": codex, "sandbox_id": home, "inference_credential_id": x})).await;
    assert_error(&r, StatusCode::CONFLICT, "codex_inference_conflict");
    // Without its own set the conversation resolves to the account default (`x`, the first set).
    let r = open(&app, &u.key, json!({"agent_id": codex, "sandbox_id": home})).await;
    assert_error(&r, StatusCode::CONFLICT, "codex_inference_conflict");
    let r = open(&app, &u.key, json!({"agent_id": codex, "sandbox_id": home, "inference_credential_id": y})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
}

async fn one_gemini_turn_at_a_time_on_a_machine(b: Backend) {
    let app = app(b, &[]).await;
    let u = app.user().await;
    let gemini = agent(&app, &u, "gemini", json!({})).await;
    let (first, machine) = opened(&app, &u, json!({"agent_id": gemini})).await;
    let r = open(&app, &u.key, json!({"agent_id": gemini, "sandbox_id": machine})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let second = id(&r.body["data"]);

    assert_eq!(prompt(&app, &u, first, "sleep: 4000\nsay: slow").await.status, StatusCode::ACCEPTED);
    wait_conversation(&app, first, ConversationStatus::Running).await;
    assert_error(&prompt(&app, &u, second, "say: now").await, StatusCode::CONFLICT, "sandbox_at_capacity");
    let body = json!({"agent_id": gemini, "sandbox_id": machine, "prompt": "say: now"});
    assert_error(&open(&app, &u.key, body.clone()).await, StatusCode::CONFLICT, "sandbox_at_capacity");
    assert_eq!(finished_turns(&app, first, 1).await[0].status, "done");
    let r = open(&app, &u.key, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(finished_turns(&app, id(&r.body["data"]), 1).await[0].status, "done");
    assert_eq!(prompt(&app, &u, second, "say: later").await.status, StatusCode::ACCEPTED);
    assert_eq!(finished_turns(&app, second, 1).await[0].status, "done");
}

async fn prompts_queued_on_a_sleeping_machine_run_one_turn_of_a_runtime_at_a_time(b: Backend) {
    let app = app(b, &[]).await;
    let u = app.user().await;
    let gemini = agent(&app, &u, "gemini", json!({"sandbox_mode": "persistent"})).await;
    let (first, machine) = opened(&app, &u, json!({"agent_id": gemini})).await;
    let r = open(&app, &u.key, json!({"agent_id": gemini, "sandbox_id": machine})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let second = id(&r.body["data"]);
    acs::core::sandboxes::service::park(app.state(), machine).await.unwrap();
    // Both prompts wait for the machine; it wakes once, and they take turns.
    for (conv, text) in [(first, "sleep: 1000\nsay: one"), (second, "sleep: 1000\nsay: two")] {
        let r = prompt(&app, &u, conv, text).await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
        assert_eq!(r.body["data"]["status"], "queued", "{}", r.text);
    }
    let one = finished_turns(&app, first, 1).await.pop().unwrap();
    let two = finished_turns(&app, second, 1).await.pop().unwrap();
    assert_eq!((one.status.as_str(), two.status.as_str()), ("done", "done"));
    let (a, b) = if one.inserted_at < two.inserted_at { (&one, &two) } else { (&two, &one) };
    assert!(a.finished_at.unwrap() <= b.inserted_at, "the turns overlapped: {a:?} {b:?}");
}

async fn limited(app: &TestApp, u: &User, limits: Value) -> Resp {
    let body = json!({"name": "limited", "runtime": "acp", "command": [SCRIPTED_AGENT], "execution_limits": limits});
    app.post("/api/agents", &u.key, body).await
}

async fn execution_limits_are_checked_and_refused(b: Backend) {
    let ceilings =
        [("limits.execution.max_turn_seconds", json!(60)), ("limits.execution.policy", json!(["max_turns"]))];
    let app = app(b, &ceilings).await;
    let u = app.user().await;
    for malformed in [json!({"max_memory": 1}), json!({"max_turn_seconds": 0}), json!({"max_turn_seconds": "9"})] {
        assert_error(&limited(&app, &u, malformed).await, StatusCode::UNPROCESSABLE_ENTITY, "execution_limits_invalid");
    }
    let policy = limited(&app, &u, json!({"max_turns": 3})).await;
    assert_error(&policy, StatusCode::UNPROCESSABLE_ENTITY, "execution_limits_invalid");
    let wide = limited(&app, &u, json!({"max_turn_seconds": 61})).await;
    assert_error(&wide, StatusCode::UNPROCESSABLE_ENTITY, "execution_limits_widen");

    let r = limited(&app, &u, json!({"max_turn_seconds": 60, "max_output_tokens": 1000})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let capped = id(&r.body["data"]);
    let path = format!("/api/agents/{capped}");
    let r = app
        .request(
            reqwest::Method::PATCH,
            &path,
            Some(&u.key),
            Some(json!({"execution_limits": {"max_turn_seconds": 61}})),
        )
        .await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "execution_limits_widen");

    // The server enforces no limit yet: a conversation with any effective limit is refused,
    // also one that only inherits the host ceiling.
    let r = open(&app, &u.key, json!({"agent_id": capped, "prompt": "say: hi"})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "execution_limits_unsupported");
    let plain = agent(&app, &u, "acp", json!({})).await;
    let r = open(&app, &u.key, json!({"agent_id": plain})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "execution_limits_unsupported");
    let sandboxes = app.get("/api/sandboxes", &u.key).await;
    assert_eq!(sandboxes.body["data"], json!([]), "nothing was launched");
}
