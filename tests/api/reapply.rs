//! Reapply (spec 3.3, 4.1 reapply rules): a live conversation takes another
//! agent, environment, vault, model or session config on the same machine;
//! the next prompt starts an agent that reads them. Refusals: 410 ended, 409
//! busy, 503 building, 409 `rebuild_required`, 409 `inference_source_changed`,
//! the create-time 422s and 404s.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::Row;
use uuid::Uuid;

use crate::common::{
    Backend, Resp, SCRIPTED_AGENT_LOG, TestApp, User, assert_error, assert_refused, created, finished_turns, id,
    scripted_app, scripted_runtime_agent, sh,
};

async fn app(b: Backend) -> TestApp {
    scripted_app(b, &[]).await
}

async fn agent(app: &TestApp, u: &User, runtime: &str, extra: Value) -> Uuid {
    scripted_runtime_agent(app, u, runtime, extra).await
}

async fn environment(app: &TestApp, u: &User, body: Value) -> Uuid {
    created(app, u, "/api/environments", body).await
}

/// A vault holding `secrets`.
async fn vault(app: &TestApp, u: &User, secrets: &[(&str, &str)]) -> Uuid {
    let v = created(app, u, "/api/vaults", json!({"name": format!("v-{}", Uuid::new_v4().simple())})).await;
    for (k, value) in secrets {
        let r = app
            .request(Method::PUT, &format!("/api/vaults/{v}/secrets/{k}"), Some(&u.key), Some(json!({"value": value})))
            .await;
        assert!(r.status.is_success(), "{}", r.text);
    }
    v
}

/// A credential set holding an Anthropic key.
async fn credential_set(app: &TestApp, u: &User, name: &str) -> Uuid {
    let set = created(app, u, "/api/account/inference-credential-sets", json!({"name": name})).await;
    let path = format!("/api/account/inference-credential-sets/{set}/credentials/anthropic_api_key");
    let r = app.request(Method::PUT, &path, Some(&u.key), Some(json!({"value": format!("sk-ant-{name}")}))).await;
    assert!(r.status.is_success(), "{}", r.text);
    set
}

/// Creates a conversation and waits until its machine is up and no turn runs.
async fn open(app: &TestApp, u: &User, body: Value) -> Uuid {
    let conv = id(&crate::common::create_conversation(app, u, body).await);
    wait_idle(app, conv).await;
    conv
}

async fn wait_idle(app: &TestApp, conv: Uuid) {
    for _ in 0..600 {
        let c = acs::core::conversations::store::get(&app.state().db, conv).await.unwrap().unwrap();
        if c.status == acs::core::sandboxes::model::ConversationStatus::Idle && c.pending_prompt.is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("conversation {conv} did not become idle");
}

async fn reapply(app: &TestApp, u: &User, conv: Uuid, body: Value) -> Resp {
    app.post(&format!("/api/conversations/{conv}/reapply"), &u.key, body).await
}

async fn reapplied(app: &TestApp, u: &User, conv: Uuid, body: Value) -> Value {
    let r = reapply(app, u, conv, body).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body["data"].clone()
}

fn assert_rebuild(r: &Resp, field: &str) {
    assert_error(r, StatusCode::CONFLICT, "rebuild_required");
    assert_eq!(r.body["field"], field, "{}", r.text);
}

async fn prompt(app: &TestApp, u: &User, conv: Uuid, text: &str) -> Resp {
    app.post(&format!("/api/conversations/{conv}/prompts"), &u.key, json!({"prompt": text})).await
}

/// Sends a prompt and waits for its turn (the `n`th) to end; returns the turns as the API shows them.
async fn turn(app: &TestApp, u: &User, conv: Uuid, text: &str, n: usize) -> Vec<Value> {
    let r = prompt(app, u, conv, text).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    finished_turns(app, conv, n).await;
    let r = app.get(&format!("/api/conversations/{conv}/turns"), &u.key).await;
    r.body["data"].as_array().unwrap().clone()
}

/// The stdout of one turn.
async fn output(app: &TestApp, conv: Uuid, turn: &Value) -> String {
    let rows = sqlx::query(
        "SELECT data FROM events WHERE conversation_id = $1 AND turn_id = $2 AND kind = 'output' \
         AND stream = 'stdout' ORDER BY id",
    )
    .bind(conv.to_string())
    .bind(turn["id"].as_str().unwrap().to_owned())
    .fetch_all(&app.state().db.pool)
    .await
    .unwrap();
    rows.iter().map(|r| r.get::<String, _>("data")).collect()
}

/// `(state, data)` of the conversation's stage events named `stage`, oldest first.
async fn stages(app: &TestApp, conv: Uuid, stage: &str) -> Vec<(String, Value)> {
    let rows = sqlx::query("SELECT state, data FROM events WHERE conversation_id = $1 AND stage = $2 ORDER BY id")
        .bind(conv.to_string())
        .bind(stage.to_owned())
        .fetch_all(&app.state().db.pool)
        .await
        .unwrap();
    rows.iter()
        .map(|r| (r.get("state"), serde_json::from_str(&r.get::<String, _>("data")).unwrap_or(Value::Null)))
        .collect()
}

async fn sandbox_of(app: &TestApp, conv: Uuid) -> Uuid {
    acs::core::conversations::store::get(&app.state().db, conv).await.unwrap().unwrap().sandbox_id.unwrap()
}

async fn an_empty_body_keeps_everything_and_null_clears(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let env = environment(&app, &u, json!({"name": "vars", "env_vars": {"A": "1"}})).await;
    let v = vault(&app, &u, &[("S", "secret")]).await;
    let a = agent(&app, &u, "claude", json!({"model": "anthropic/haiku", "session_config": {"effort": "low"}})).await;
    let conv = open(
        &app,
        &u,
        json!({"agent_id": a, "environment_id": env, "vault_id": v, "model": "anthropic/sonnet",
            "session_config": {"effort": "high"}, "title": "kept"}),
    )
    .await;
    let before = app.get(&format!("/api/conversations/{conv}"), &u.key).await.body["data"].clone();
    let machine = sandbox_of(&app, conv).await;

    let after = reapplied(&app, &u, conv, json!({})).await;
    for field in ["agent_id", "sandbox_id", "environment_id", "vault_id", "model", "session_config", "title", "status"]
    {
        assert_eq!(after[field], before[field], "{field}");
    }
    let config = stages(&app, conv, "configuration").await;
    assert_eq!(config.len(), 1);
    assert_eq!(config[0].0, "done");
    assert_eq!(config[0].1["environment_id"], json!(env));

    let after = reapplied(
        &app,
        &u,
        conv,
        json!({"environment_id": null, "vault_id": null, "model": null, "session_config": null}),
    )
    .await;
    assert_eq!(
        (&after["environment_id"], &after["vault_id"], &after["model"], &after["session_config"]),
        (&Value::Null, &Value::Null, &Value::Null, &Value::Null)
    );
    assert_eq!(after["sandbox_id"], json!(machine), "the machine stays");
    assert_eq!(app.get(&format!("/api/conversations/{conv}"), &u.key).await.body["data"]["model"], Value::Null);
    // The machine now holds the selection without overrides.
    let row = acs::core::sandboxes::store::get(&app.state().db, machine).await.unwrap().unwrap();
    assert_eq!((row.environment_id, row.vault_id), (None, None));
    // The agent's model and options are back.
    let t = turn(&app, &u, conv, "say: after", 1).await;
    assert_eq!(t[0]["model_selection"], "anthropic/haiku", "{}", t[0]);
    assert_eq!(t[0]["config_selection"]["requested"], json!({"effort": "low"}));
}

async fn model_and_session_config_take_effect_on_the_next_turn(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, "claude", json!({"model": "anthropic/haiku"})).await;
    let conv = open(&app, &u, json!({"agent_id": a})).await;
    let t = turn(&app, &u, conv, "say: one", 1).await;
    assert_eq!(t[0]["model_selection"], "anthropic/haiku");

    reapplied(&app, &u, conv, json!({"model": "anthropic/sonnet", "session_config": {"effort": "high", "fast": "on"}}))
        .await;
    let t = turn(&app, &u, conv, "say: two", 2).await;
    assert_eq!(t[1]["status"], "done", "{}", t[1]);
    assert_eq!(t[1]["model_selection"], "anthropic/sonnet");
    assert_eq!(t[1]["config_selection"]["applied"], json!({"effort": "high", "fast": "on"}), "{}", t[1]);
    // A new agent process took them: two sessions, two handshakes, and the options set on the new one.
    let sessions = stages(&app, conv, "session").await;
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    let machine = sandbox_of(&app, conv).await;
    let (_, log, _) = sh(&app, machine, &format!("cat {SCRIPTED_AGENT_LOG}")).await;
    let methods: Vec<Value> =
        log.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).map(|m| m["method"].clone()).collect();
    assert_eq!(methods.iter().filter(|m| *m == "initialize").count(), 2, "{log}");
    let last_init = methods.iter().rposition(|m| m == "initialize").unwrap();
    assert!(methods[last_init..].iter().any(|m| m == "session/set_config_option"), "{log}");

    // Back to the agent's model and no options of its own.
    reapplied(&app, &u, conv, json!({"model": null, "session_config": null})).await;
    let t = turn(&app, &u, conv, "say: three", 3).await;
    assert_eq!(t[2]["model_selection"], "anthropic/haiku");
    assert_eq!(t[2]["config_selection"]["requested"], json!({}));
}

async fn variables_and_secrets_of_a_new_selection_reach_the_next_agent(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let first = environment(&app, &u, json!({"name": "first", "env_vars": {"GREETING": "from-first"}})).await;
    let second = environment(&app, &u, json!({"name": "second", "env_vars": {"GREETING": "from-second"}})).await;
    let v = vault(&app, &u, &[("TOKEN", "tok-value")]).await;
    let a = agent(&app, &u, "acp", json!({})).await;
    // The machine starts with the first environment and the vault in its own environment.
    let conv = open(&app, &u, json!({"agent_id": a, "environment_id": first, "vault_id": v})).await;
    let script = "echo-env: GREETING\nsay: |\necho-env: TOKEN";
    let t = turn(&app, &u, conv, script, 1).await;
    // The secret arrives, and leaves the server redacted.
    assert_eq!(output(&app, conv, &t[0]).await, "from-first|[REDACTED]");

    // New variables reach the next agent; a secret no longer selected does not, although the
    // running machine started with it.
    reapplied(&app, &u, conv, json!({"environment_id": second, "vault_id": null})).await;
    let t = turn(&app, &u, conv, script, 2).await;
    assert_eq!(output(&app, conv, &t[1]).await, "from-second|");

    reapplied(&app, &u, conv, json!({"vault_id": v})).await;
    let t = turn(&app, &u, conv, script, 3).await;
    assert_eq!(output(&app, conv, &t[2]).await, "from-second|[REDACTED]");
}

async fn a_sleeping_conversation_applies_on_wake(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let first = environment(&app, &u, json!({"name": "first", "env_vars": {"GREETING": "from-first"}})).await;
    let second = environment(&app, &u, json!({"name": "second", "env_vars": {"GREETING": "from-second"}})).await;
    let home = agent(&app, &u, "acp", json!({"sandbox_mode": "persistent", "environment_id": first})).await;
    let conv = open(&app, &u, json!({"agent_id": home})).await;
    let machine = sandbox_of(&app, conv).await;
    acs::core::sandboxes::service::park(app.state(), machine).await.unwrap();

    let after = reapplied(&app, &u, conv, json!({"environment_id": second})).await;
    assert_eq!(after["environment_id"], json!(second));
    let config = stages(&app, conv, "configuration").await;
    assert_eq!(config.last().unwrap().0, "failed", "{config:?}");
    assert!(config.last().unwrap().1["reason"].as_str().is_some_and(|r| r.contains("wakes")), "{config:?}");

    let r = prompt(&app, &u, conv, "echo-env: GREETING").await;
    assert_eq!(r.body["data"]["status"], "queued", "{}", r.text);
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(t[0].status, "done");
    let turns = app.get(&format!("/api/conversations/{conv}/turns"), &u.key).await.body["data"].clone();
    assert_eq!(output(&app, conv, &turns[0]).await, "from-second");
    assert_eq!(sandbox_of(&app, conv).await, machine, "the same machine woke");
}

async fn a_busy_a_building_and_an_ended_conversation_refuse(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let slow = environment(&app, &u, json!({"name": "slow", "setup_script": "sleep 3"})).await;
    let a = agent(&app, &u, "acp", json!({"environment_id": slow})).await;
    let conv = id(&crate::common::create_conversation(&app, &u, json!({"agent_id": a})).await);
    let r = reapply(&app, &u, conv, json!({})).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.text);
    assert_eq!(r.body["error"], "provisioning");
    wait_idle(&app, conv).await;

    let r = prompt(&app, &u, conv, "say: slow\nsleep: 3000").await;
    assert_eq!(r.body["data"]["status"], "accepted", "{}", r.text);
    assert_error(&reapply(&app, &u, conv, json!({})).await, StatusCode::CONFLICT, "conversation_busy");
    finished_turns(&app, conv, 1).await;
    assert_eq!(stages(&app, conv, "configuration").await, vec![], "nothing was applied");
    reapplied(&app, &u, conv, json!({})).await;

    let r = app.post(&format!("/api/conversations/{conv}/terminate"), &u.key, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_error(&reapply(&app, &u, conv, json!({})).await, StatusCode::GONE, "conversation_ended");
}

async fn a_selection_needing_a_new_disk_is_refused(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let env = environment(&app, &u, json!({"name": "built", "setup_script": "true"})).await;
    let other = environment(&app, &u, json!({"name": "other", "setup_script": "echo other"})).await;
    let claude = agent(&app, &u, "claude", json!({"environment_id": env})).await;
    let codex = agent(&app, &u, "codex", json!({"environment_id": env})).await;
    let conv = open(&app, &u, json!({"agent_id": claude})).await;

    assert_rebuild(&reapply(&app, &u, conv, json!({"agent_id": codex})).await, "environment");
    assert_rebuild(&reapply(&app, &u, conv, json!({"environment_id": other})).await, "environment");
    // Another agent of the same runtime and build is fine.
    let twin = agent(&app, &u, "claude", json!({"environment_id": env})).await;
    assert_eq!(reapplied(&app, &u, conv, json!({"agent_id": twin})).await["agent_id"], json!(twin));
    // The environment edited in place no longer matches the disk, even for an empty body.
    let r = app
        .request(
            Method::PATCH,
            &format!("/api/environments/{env}"),
            Some(&u.key),
            Some(json!({"setup_script": "echo v2"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_rebuild(&reapply(&app, &u, conv, json!({})).await, "environment");
    // A machine without a recorded fingerprint is not trusted either.
    let plain = environment(&app, &u, json!({"name": "plain"})).await;
    let fresh = open(&app, &u, json!({"agent_id": twin, "environment_id": plain})).await;
    sqlx::query("UPDATE sandboxes SET fingerprint = NULL WHERE id = $1")
        .bind(sandbox_of(&app, fresh).await.to_string())
        .execute(&app.state().db.pool)
        .await
        .unwrap();
    assert_rebuild(&reapply(&app, &u, fresh, json!({})).await, "environment");
    assert_eq!(stages(&app, conv, "configuration").await.len(), 1, "only the accepted reapply reported");
}

async fn a_shared_machine_keeps_its_selection(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let v = vault(&app, &u, &[("S", "x")]).await;
    let home = agent(&app, &u, "claude", json!({"sandbox_mode": "persistent"})).await;
    let one = open(&app, &u, json!({"agent_id": home})).await;
    let two = open(&app, &u, json!({"agent_id": home})).await;
    assert_eq!(sandbox_of(&app, one).await, sandbox_of(&app, two).await, "one home");

    assert_rebuild(&reapply(&app, &u, one, json!({"vault_id": v})).await, "shared_sandbox");
    // What stays per conversation may change.
    assert_eq!(reapplied(&app, &u, one, json!({"model": "anthropic/opus"})).await["model"], "anthropic/opus");

    // A guest pairing: the other conversation on the home is another agent's.
    let guest = agent(&app, &u, "codex", json!({})).await;
    sqlx::query("UPDATE conversations SET agent_id = $1, runtime = 'codex' WHERE id = $2")
        .bind(guest.to_string())
        .bind(two.to_string())
        .execute(&app.state().db.pool)
        .await
        .unwrap();
    assert_rebuild(&reapply(&app, &u, one, json!({"vault_id": v})).await, "guest");

    // Alone on the machine, the conversation takes the vault and the machine follows it.
    let r = app.post(&format!("/api/conversations/{two}/terminate"), &u.key, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    reapplied(&app, &u, one, json!({"vault_id": v})).await;
    let row = acs::core::sandboxes::store::get(&app.state().db, sandbox_of(&app, one).await).await.unwrap().unwrap();
    assert_eq!(row.vault_id, Some(v));
}

async fn a_changed_credential_or_agent_model_is_inference_source_changed(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let default = credential_set(&app, &u, "main").await;
    let other = credential_set(&app, &u, "other").await;
    let a = agent(&app, &u, "claude", json!({"model": "anthropic/haiku"})).await;
    let on_other = agent(&app, &u, "claude", json!({"inference_credential_id": other})).await;
    let on_default = agent(&app, &u, "claude", json!({"inference_credential_id": default})).await;
    let conv = open(&app, &u, json!({"agent_id": a})).await;

    // A target on another credential set: refused, nothing changed.
    let r = reapply(&app, &u, conv, json!({"agent_id": on_other, "model": "anthropic/opus"})).await;
    assert_error(&r, StatusCode::CONFLICT, "inference_source_changed");
    let now = app.get(&format!("/api/conversations/{conv}"), &u.key).await.body["data"].clone();
    assert_eq!((&now["agent_id"], &now["model"]), (&json!(a), &Value::Null));
    assert!(stages(&app, conv, "configuration").await.is_empty());

    // The agent's model edited: a conversation following it stops until reapplied.
    let r = app
        .request(Method::PATCH, &format!("/api/agents/{a}"), Some(&u.key), Some(json!({"model": "anthropic/sonnet"})))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_error(&prompt(&app, &u, conv, "say: refused").await, StatusCode::CONFLICT, "inference_source_changed");
    assert!(crate::common::turns(&app, conv).await.is_empty(), "no turn opened");
    // One with its own model is not concerned.
    let own = open(&app, &u, json!({"agent_id": a, "model": "anthropic/opus"})).await;
    assert_eq!(prompt(&app, &u, own, "say: fine").await.status, StatusCode::ACCEPTED);

    reapplied(&app, &u, conv, json!({})).await;
    let t = turn(&app, &u, conv, "say: after", 1).await;
    assert_eq!(t[0]["model_selection"], "anthropic/sonnet");
    // The same credential set through another agent is no change.
    assert_eq!(reapplied(&app, &u, conv, json!({"agent_id": on_default})).await["agent_id"], json!(on_default));
}

async fn bad_selections_are_refused(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let stranger = app.user().await;
    let allowed = environment(&app, &u, json!({"name": "allowed"})).await;
    let elsewhere = environment(&app, &u, json!({"name": "elsewhere"})).await;
    let v = vault(&app, &u, &[]).await;
    let a = agent(&app, &u, "claude", json!({"allowed_environment_ids": [allowed], "allowed_vault_ids": []})).await;
    let acp = agent(&app, &u, "acp", json!({})).await;
    let conv = open(&app, &u, json!({"agent_id": a})).await;
    let theirs_env = environment(&app, &stranger, json!({"name": "theirs"})).await;
    let theirs_agent = agent(&app, &stranger, "claude", json!({})).await;

    let cases = [
        (json!({"model": "openai/gpt-5"}), StatusCode::UNPROCESSABLE_ENTITY, "model_invalid"),
        (json!({"model": "no-provider"}), StatusCode::UNPROCESSABLE_ENTITY, "model_invalid"),
        (json!({"session_config": {"model": "x"}}), StatusCode::UNPROCESSABLE_ENTITY, "session_config_invalid"),
        (json!({"session_config": "high"}), StatusCode::UNPROCESSABLE_ENTITY, "session_config_invalid"),
        (json!({"environment_id": elsewhere}), StatusCode::UNPROCESSABLE_ENTITY, "environment_not_allowed"),
        (json!({"vault_id": v}), StatusCode::UNPROCESSABLE_ENTITY, "vault_not_allowed"),
        (json!({"environment_id": theirs_env}), StatusCode::NOT_FOUND, "not_found"),
        (json!({"agent_id": theirs_agent}), StatusCode::NOT_FOUND, "not_found"),
        (json!({"prompt": "x"}), StatusCode::UNPROCESSABLE_ENTITY, "validation_failed"),
    ];
    for (body, status, code) in cases {
        let r = reapply(&app, &u, conv, body.clone()).await;
        assert_eq!((r.status, r.body["error"].as_str()), (status, Some(code)), "{body}: {}", r.text);
    }
    // A model is checked against the target agent's runtime (the acp runtime takes none).
    let with_model = open(&app, &u, json!({"agent_id": a, "model": "anthropic/opus"})).await;
    assert_error(
        &reapply(&app, &u, with_model, json!({"agent_id": acp})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "model_invalid",
    );
    // Another account's conversation does not exist for this caller.
    assert_error(&reapply(&app, &stranger, conv, json!({})).await, StatusCode::NOT_FOUND, "not_found");
    // The machine's own key may not choose what the machine holds.
    let machine = sandbox_of(&app, conv).await;
    let key = acs::core::keys::create_for_sandbox(&app.state().db.pool, u.id.parse().unwrap(), machine, "machine")
        .await
        .unwrap()
        .api_key;
    let r = app.post(&format!("/api/conversations/{conv}/reapply"), &key, json!({})).await;
    assert_refused(&r, StatusCode::FORBIDDEN, "insufficient_scope");
    assert!(stages(&app, conv, "configuration").await.is_empty(), "nothing was applied");
}

crate::both!(
    an_empty_body_keeps_everything_and_null_clears,
    model_and_session_config_take_effect_on_the_next_turn,
    variables_and_secrets_of_a_new_selection_reach_the_next_agent,
    a_sleeping_conversation_applies_on_wake,
    a_busy_a_building_and_an_ended_conversation_refuse,
    a_selection_needing_a_new_disk_is_refused,
    a_shared_machine_keeps_its_selection,
    a_changed_credential_or_agent_model_is_inference_source_changed,
    bad_selections_are_refused,
);
