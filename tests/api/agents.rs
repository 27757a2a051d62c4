//! Agents: create, read, list, partial update, delete, versions and rollback;
//! every bound at its edge; references to other records must be the caller's.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::both;
use crate::common::{Backend, Resp, TestApp, assert_error, spawn};

both!(
    create_read_list_update_delete,
    names_descriptions_and_prompts_at_their_bounds,
    session_config_bounds,
    permission_policy_bounds,
    acp_needs_a_command,
    models_must_suit_the_runtime,
    other_accounts_records_are_404,
    versions_and_rollback,
    a_patch_that_changes_nothing_writes_no_version,
    allowed_lists_round_trip_null_empty_and_absent,
    free_form_fields_round_trip
);

async fn patch(app: &TestApp, path: &str, key: &str, body: Value) -> Resp {
    app.request(Method::PATCH, path, Some(key), Some(body)).await
}

/// Creates an agent and returns its body (`data`).
async fn create(app: &TestApp, key: &str, body: Value) -> Value {
    let r = app.post("/api/agents", key, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"].clone()
}

fn id_of(agent: &Value) -> String {
    agent["id"].as_str().unwrap().to_owned()
}

#[track_caller]
fn assert_field_error(r: &Resp, field: &str) {
    assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert!(r.body["errors"][field].is_array(), "expected errors.{field}: {}", r.text);
}

/// An agent's configurable fields: the body without id, version and times.
fn fields(agent: &Value) -> Value {
    let mut v = agent.clone();
    let map = v.as_object_mut().unwrap();
    for k in ["id", "version", "inserted_at", "updated_at"] {
        map.remove(k);
    }
    v
}

/// Inserts a row straight into `table` for `account_id`, as if made through
/// its own endpoints, and returns its id.
async fn insert_owned(app: &TestApp, table: &str, account_id: &str) -> String {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&app.db_url).await.unwrap();
    let id = Uuid::now_v7().to_string();
    let sql = match table {
        "environments" => {
            "INSERT INTO environments (id, account_id, name, spec, build_fingerprint, fingerprint_at, created_at, updated_at) \
             VALUES ($1, $2, $3, '{}', 'x', 1, 1, 1)"
        }
        "vaults" => "INSERT INTO vaults (id, account_id, name, created_at, updated_at) VALUES ($1, $2, $3, 1, 1)",
        "inference_credential_sets" => {
            "INSERT INTO inference_credential_sets (id, account_id, name, created_at, updated_at) VALUES ($1, $2, $3, 1, 1)"
        }
        other => panic!("no such table {other}"),
    };
    sqlx::query(sql).bind(id.clone()).bind(account_id.to_owned()).bind(format!("t-{id}")).execute(&pool).await.unwrap();
    pool.close().await;
    id
}

async fn audit_actions(app: &TestApp, key: &str) -> Vec<String> {
    let r = app.get("/api/audit", key).await;
    r.body["data"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap().to_owned()).collect()
}

async fn create_read_list_update_delete(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let first = create(&app, &u.key, json!({"name": "  Release Bot ", "runtime": "claude"})).await;
    assert_eq!(first["name"], "Release Bot", "names are trimmed");
    assert_eq!(first["version"], 1);
    assert!(first["inserted_at"].is_string() && first["updated_at"].is_string());
    assert_eq!(
        fields(&first),
        json!({
            "name": "Release Bot", "description": null, "runtime": "claude", "command": null, "model": null,
            "system_prompt": null, "environment_id": null, "vault_id": null, "inference_credential_id": null,
            "sandbox_mode": "ephemeral", "provider": null, "runner_id": null, "permission_policy": null,
            "session_config": null, "allowed_environment_ids": null, "allowed_vault_ids": null, "allowed_inference_credential_ids": null,
            "execution_limits": null, "mcp_servers": [], "skills": [], "metadata": {}
        }),
        "every field is shown, defaults filled"
    );
    let id = id_of(&first);
    let path = format!("/api/agents/{id}");
    let r = app.get(&path, &u.key).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["data"], first);

    let second =
        create(&app, &u.key, json!({"name": "second", "runtime": "gemini", "sandbox_mode": "persistent"})).await;
    assert_eq!(second["sandbox_mode"], "persistent");
    let r = app.get("/api/agents", &u.key).await;
    let list = r.body["data"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["id"], second["id"], "newest first");
    assert_eq!(list[1], first);

    let r = patch(&app, &path, &u.key, json!({"description": "ships builds", "model": "anthropic/claude-sonnet-4-5"}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let updated = &r.body["data"];
    assert_eq!(updated["version"], 2);
    assert_eq!(updated["name"], "Release Bot", "an omitted field is unchanged");
    assert_eq!(updated["description"], "ships builds");
    assert_eq!(updated["inserted_at"], first["inserted_at"]);
    let r = patch(&app, &path, &u.key, json!({"description": null})).await;
    assert_eq!(r.body["data"]["description"], Value::Null, "null clears");
    assert_eq!(r.body["data"]["model"], "anthropic/claude-sonnet-4-5");
    assert_eq!(r.body["data"]["version"], 3);
    assert_field_error(&patch(&app, &path, &u.key, json!({"name": null})).await, "name");
    assert_field_error(&patch(&app, &path, &u.key, json!({"runtime": null})).await, "runtime");
    assert_field_error(&patch(&app, &path, &u.key, json!({"runtime": "cursor"})).await, "runtime");
    assert_eq!(app.get(&path, &u.key).await.body["data"]["version"], 3, "refused PATCHes change nothing");

    assert_eq!(app.delete(&path, &u.key).await.status, StatusCode::NO_CONTENT);
    assert_error(&app.get(&path, &u.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.get(&format!("{path}/versions"), &u.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.delete(&path, &u.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.get("/api/agents/not-a-uuid", &u.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_eq!(app.get("/api/agents", &u.key).await.body["data"].as_array().unwrap().len(), 1);

    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&app.db_url).await.unwrap();
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM agent_versions WHERE agent_id = $1")
        .bind(id.clone())
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    assert_eq!(left, 0, "versions go with the agent");

    let actions = audit_actions(&app, &u.key).await;
    for action in ["agent.created", "agent.updated", "agent.deleted"] {
        assert!(actions.iter().any(|a| a == action), "{action} in {actions:?}");
    }
}

async fn names_descriptions_and_prompts_at_their_bounds(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    create(&app, &u.key, json!({"name": "n".repeat(200), "runtime": "claude"})).await;
    for bad in [json!("n".repeat(201)), json!(""), json!("   "), json!(null), json!(5)] {
        assert_field_error(&app.post("/api/agents", &u.key, json!({"name": bad, "runtime": "claude"})).await, "name");
    }
    assert_field_error(&app.post("/api/agents", &u.key, json!({"runtime": "claude"})).await, "name");
    assert_field_error(&app.post("/api/agents", &u.key, json!({"name": "a"})).await, "runtime");
    assert_field_error(&app.post("/api/agents", &u.key, json!({"name": "a", "runtime": "cursor"})).await, "runtime");
    for runtime in ["claude", "codex", "gemini", "opencode"] {
        create(&app, &u.key, json!({"name": "a", "runtime": runtime})).await;
    }

    let agent = create(&app, &u.key, json!({"name": "a", "runtime": "codex", "description": "d".repeat(2000)})).await;
    let r = app
        .post("/api/agents", &u.key, json!({"name": "a", "runtime": "codex", "description": "d".repeat(2001)}))
        .await;
    assert_field_error(&r, "description");
    let path = format!("/api/agents/{}", id_of(&agent));
    assert_field_error(&patch(&app, &path, &u.key, json!({"name": "n".repeat(201)})).await, "name");
    assert_eq!(patch(&app, &path, &u.key, json!({"name": "n".repeat(200)})).await.status, StatusCode::OK);

    let r = patch(&app, &path, &u.key, json!({"system_prompt": "p".repeat(100_000)})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_field_error(
        &patch(&app, &path, &u.key, json!({"system_prompt": "p".repeat(100_001)})).await,
        "system_prompt",
    );
    assert_field_error(&patch(&app, &path, &u.key, json!({"sandbox_mode": "shared"})).await, "sandbox_mode");
    let r = patch(&app, &path, &u.key, json!({"environment_id": "not-a-uuid"})).await;
    assert_field_error(&r, "environment_id");
}

async fn session_config_bounds(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let base = |config: Value| json!({"name": "a", "runtime": "claude", "session_config": config});
    let sixteen: serde_json::Map<String, Value> = (0..16).map(|i| (format!("opt.{i}"), json!(true))).collect();
    let agent = create(&app, &u.key, base(Value::Object(sixteen.clone()))).await;
    assert_eq!(agent["session_config"], Value::Object(sixteen.clone()));
    let mut seventeen = sixteen;
    seventeen.insert("opt.16".into(), json!("x"));
    let r = app.post("/api/agents", &u.key, base(Value::Object(seventeen))).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "session_config_invalid");

    create(&app, &u.key, base(json!({"effort": "x".repeat(200), "fast": false, "a_b:c-d.9": "on"}))).await;
    create(&app, &u.key, base(json!({"i".repeat(64): true}))).await;
    for (config, key) in [
        (json!({"effort": "x".repeat(201)}), "effort"),
        (json!({"effort": ""}), "effort"),
        (json!({"effort": 2}), "effort"),
        (json!({"effort": null}), "effort"),
        (json!({"model": "anthropic/claude-opus-4"}), "model"),
        (json!({"bad key": true}), "bad key"),
        (json!({"i".repeat(65): true}), "iiii"),
    ] {
        let r = app.post("/api/agents", &u.key, base(config)).await;
        assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "session_config_invalid");
        assert!(r.body["message"].as_str().unwrap().contains(key), "the message names {key}: {}", r.text);
    }
    for not_a_map in [json!([]), json!("effort=high"), json!(3)] {
        let r = app.post("/api/agents", &u.key, base(not_a_map)).await;
        assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "session_config_invalid");
    }

    let path = format!("/api/agents/{}", id_of(&agent));
    let r = patch(&app, &path, &u.key, json!({"session_config": {"model": "x"}})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "session_config_invalid");
    let r = patch(&app, &path, &u.key, json!({"session_config": null})).await;
    assert_eq!(r.body["data"]["session_config"], Value::Null, "{}", r.text);
}

async fn permission_policy_bounds(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let base = |policy: Value| json!({"name": "a", "runtime": "codex", "permission_policy": policy});
    let policy =
        json!({"default": "ask", "execute": "auto_deny", "read": "auto_allow", "Edit file": "ask", "ask_timeout": 1});
    let agent = create(&app, &u.key, base(policy.clone())).await;
    assert_eq!(agent["permission_policy"], policy);
    create(&app, &u.key, base(json!({"ask_timeout": 31_536_000}))).await;
    create(&app, &u.key, base(json!({}))).await;
    for bad in [
        json!({"ask_timeout": 0}),
        json!({"ask_timeout": 31_536_001}),
        json!({"ask_timeout": 1.5}),
        json!({"ask_timeout": "60"}),
        json!({"edit": "allow"}),
        json!({"edit": null}),
        json!({"": "ask"}),
        json!(["ask"]),
        json!("ask"),
    ] {
        let r = app.post("/api/agents", &u.key, base(bad.clone())).await;
        assert_field_error(&r, "permission_policy");
    }
    let path = format!("/api/agents/{}", id_of(&agent));
    assert_field_error(
        &patch(&app, &path, &u.key, json!({"permission_policy": {"ask_timeout": 0}})).await,
        "permission_policy",
    );
    let r = patch(&app, &path, &u.key, json!({"permission_policy": null})).await;
    assert_eq!(r.body["data"]["permission_policy"], Value::Null);
}

async fn acp_needs_a_command(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    assert_field_error(&app.post("/api/agents", &u.key, json!({"name": "a", "runtime": "acp"})).await, "command");
    let r = app.post("/api/agents", &u.key, json!({"name": "a", "runtime": "acp", "command": null})).await;
    assert_field_error(&r, "command");
    let r = app.post("/api/agents", &u.key, json!({"name": "a", "runtime": "acp", "command": []})).await;
    assert_field_error(&r, "command");
    let r = app.post("/api/agents", &u.key, json!({"name": "a", "runtime": "acp", "command": ["agent", ""]})).await;
    assert_field_error(&r, "command[1]");
    let acp = create(&app, &u.key, json!({"name": "a", "runtime": "acp", "command": ["my-agent", "--acp"]})).await;
    assert_eq!(acp["command"], json!(["my-agent", "--acp"]));
    assert_field_error(
        &patch(&app, &format!("/api/agents/{}", id_of(&acp)), &u.key, json!({"command": null})).await,
        "command",
    );

    // Another runtime may override its command, and the merged agent is checked whole.
    let claude = create(&app, &u.key, json!({"name": "c", "runtime": "claude", "command": ["claude-acp"]})).await;
    let plain = create(&app, &u.key, json!({"name": "p", "runtime": "claude"})).await;
    let path = format!("/api/agents/{}", id_of(&plain));
    assert_field_error(&patch(&app, &path, &u.key, json!({"runtime": "acp"})).await, "command");
    let r = patch(&app, &path, &u.key, json!({"runtime": "acp", "command": ["x"]})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["runtime"], "acp");
    assert_eq!(claude["command"], json!(["claude-acp"]));
}

async fn models_must_suit_the_runtime(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    for (runtime, model) in [
        ("claude", "anthropic/claude-sonnet-4-5"),
        ("codex", "openai/gpt-5-codex"),
        ("gemini", "google/gemini-2.5-pro"),
        ("opencode", "anthropic/claude-sonnet-4-5"),
        ("opencode", "openrouter/qwen/qwen3-coder"),
    ] {
        let agent = create(&app, &u.key, json!({"name": "m", "runtime": runtime, "model": model})).await;
        assert_eq!(agent["model"], model);
    }
    for body in [
        json!({"name": "m", "runtime": "claude", "model": "openai/gpt-5"}),
        json!({"name": "m", "runtime": "codex", "model": "anthropic/claude"}),
        json!({"name": "m", "runtime": "gemini", "model": "openai/gpt-5"}),
        json!({"name": "m", "runtime": "acp", "command": ["x"], "model": "anthropic/claude"}),
        json!({"name": "m", "runtime": "opencode", "model": "gpt-5"}),
        json!({"name": "m", "runtime": "opencode", "model": "openai/"}),
        json!({"name": "m", "runtime": "opencode", "model": "/gpt-5"}),
        json!({"name": "m", "runtime": "opencode", "model": ""}),
    ] {
        let r = app.post("/api/agents", &u.key, body.clone()).await;
        assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "model_invalid");
    }

    let agent = create(&app, &u.key, json!({"name": "m", "runtime": "claude", "model": "anthropic/claude"})).await;
    let path = format!("/api/agents/{}", id_of(&agent));
    let r = patch(&app, &path, &u.key, json!({"runtime": "codex"})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "model_invalid");
    let r = patch(&app, &path, &u.key, json!({"runtime": "codex", "model": "openai/gpt-5"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let r = patch(&app, &path, &u.key, json!({"model": null})).await;
    assert_eq!(r.body["data"]["model"], Value::Null);
}

async fn other_accounts_records_are_404(b: Backend) {
    let app = spawn(b).await;
    let alice = app.user().await;
    let bob = app.user().await;
    let agent = create(&app, &alice.key, json!({"name": "alice's", "runtime": "claude"})).await;
    let path = format!("/api/agents/{}", id_of(&agent));

    assert_error(&app.get(&path, &bob.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&patch(&app, &path, &bob.key, json!({"name": "mine"})).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.get(&format!("{path}/versions"), &bob.key).await, StatusCode::NOT_FOUND, "not_found");
    let r = app.post(&format!("{path}/rollback"), &bob.key, json!({"version": 1})).await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.delete(&path, &bob.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_eq!(app.get("/api/agents", &bob.key).await.body["data"], json!([]));
    assert_eq!(app.get(&path, &alice.key).await.body["data"]["name"], "alice's", "untouched");

    // Environments, vaults and credential sets named by an agent must be the caller's.
    for (field, table) in [
        ("environment_id", "environments"),
        ("vault_id", "vaults"),
        ("inference_credential_id", "inference_credential_sets"),
    ] {
        let bobs = insert_owned(&app, table, &bob.id).await;
        let own = insert_owned(&app, table, &alice.id).await;
        let r = app.post("/api/agents", &alice.key, json!({"name": "a", "runtime": "claude", field: bobs})).await;
        assert_error(&r, StatusCode::NOT_FOUND, "not_found");
        let r =
            app.post("/api/agents", &alice.key, json!({"name": "a", "runtime": "claude", field: Uuid::now_v7()})).await;
        assert_error(&r, StatusCode::NOT_FOUND, "not_found");
        assert_error(&patch(&app, &path, &alice.key, json!({field: bobs})).await, StatusCode::NOT_FOUND, "not_found");
        let r = patch(&app, &path, &alice.key, json!({field: own})).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        assert_eq!(r.body["data"][field], own);
        let with_own = create(&app, &alice.key, json!({"name": "a", "runtime": "claude", field: own})).await;
        assert_eq!(with_own[field], own);
    }
}

async fn versions_and_rollback(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let v1 = create(
        &app,
        &u.key,
        json!({"name": "bot", "runtime": "claude", "description": "first", "model": "anthropic/claude-opus-4",
               "session_config": {"effort": "high"}, "metadata": {"team": "a"}}),
    )
    .await;
    let id = id_of(&v1);
    let path = format!("/api/agents/{id}");
    let v2 = patch(&app, &path, &u.key, json!({"description": "second", "metadata": {"team": "b"}})).await;
    assert_eq!(v2.body["data"]["version"], 2);
    let v3 = patch(&app, &path, &u.key, json!({"model": null, "sandbox_mode": "persistent", "name": "bot 3"})).await;
    assert_eq!(v3.body["data"]["version"], 3);

    let r = app.get(&format!("{path}/versions"), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let versions = r.body["data"].as_array().unwrap();
    assert_eq!(versions.iter().map(|v| v["version"].as_i64().unwrap()).collect::<Vec<_>>(), [3, 2, 1], "newest first");
    assert_eq!(versions[2]["agent"], v1, "each version holds the whole agent as it was");
    assert_eq!(versions[1]["agent"], v2.body["data"]);
    assert_eq!(versions[0]["agent"], v3.body["data"]);
    assert!(versions.iter().all(|v| v["inserted_at"].is_string()));

    let r = app.post(&format!("{path}/rollback"), &u.key, json!({"version": 1})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let v4 = &r.body["data"];
    assert_eq!(v4["version"], 4);
    assert_eq!(fields(v4), fields(&v1), "the new version equals version 1");
    assert_eq!(app.get(&path, &u.key).await.body["data"], *v4);
    let versions = app.get(&format!("{path}/versions"), &u.key).await.body["data"].clone();
    assert_eq!(versions.as_array().unwrap().len(), 4);
    assert_eq!(versions[0]["agent"], *v4);
    assert_eq!(versions[1]["agent"], v3.body["data"], "history is kept");

    for unknown in [0, 5, 99, -1] {
        let r = app.post(&format!("{path}/rollback"), &u.key, json!({"version": unknown})).await;
        assert_error(&r, StatusCode::NOT_FOUND, "not_found");
    }
    assert_field_error(&app.post(&format!("{path}/rollback"), &u.key, json!({})).await, "version");
    assert_field_error(&app.post(&format!("{path}/rollback"), &u.key, json!({"version": "one"})).await, "version");
    let r = app.post(&format!("/api/agents/{}/rollback", Uuid::now_v7()), &u.key, json!({"version": 1})).await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");
    assert_eq!(app.get(&path, &u.key).await.body["data"]["version"], 4, "refused rollbacks write nothing");
    assert!(audit_actions(&app, &u.key).await.iter().any(|a| a == "agent.rolled_back"));
}

async fn a_patch_that_changes_nothing_writes_no_version(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let agent = create(
        &app,
        &u.key,
        json!({"name": "same", "runtime": "codex", "model": "openai/gpt-5", "allowed_vault_ids": [], "metadata": {"k": 1}}),
    )
    .await;
    let path = format!("/api/agents/{}", id_of(&agent));
    for body in [
        json!({}),
        json!({"name": "same"}),
        json!({"name": " same "}),
        json!({"model": "openai/gpt-5", "allowed_vault_ids": [], "metadata": {"k": 1}, "description": null}),
        json!({"sandbox_mode": "ephemeral", "skills": [], "mcp_servers": null}),
    ] {
        let r = patch(&app, &path, &u.key, body.clone()).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        assert_eq!(r.body["data"], agent, "{body} changes nothing");
    }
    let versions = app.get(&format!("{path}/versions"), &u.key).await.body["data"].clone();
    assert_eq!(versions.as_array().unwrap().len(), 1);
    assert!(!audit_actions(&app, &u.key).await.iter().any(|a| a == "agent.updated"));
    let r = patch(&app, &path, &u.key, json!({"metadata": {"k": 2}})).await;
    assert_eq!(r.body["data"]["version"], 2);
}

async fn allowed_lists_round_trip_null_empty_and_absent(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let (e, v, c) = (Uuid::now_v7().to_string(), Uuid::now_v7().to_string(), Uuid::now_v7().to_string());
    let agent = create(
        &app,
        &u.key,
        json!({"name": "a", "runtime": "claude", "allowed_environment_ids": null, "allowed_vault_ids": [],
               "allowed_inference_credential_ids": [c.clone(), c.clone()]}),
    )
    .await;
    assert_eq!(agent["allowed_environment_ids"], Value::Null);
    assert_eq!(agent["allowed_vault_ids"], json!([]));
    assert_eq!(agent["allowed_inference_credential_ids"], json!([c.clone(), c.clone()]), "kept as sent");
    let absent = create(&app, &u.key, json!({"name": "b", "runtime": "claude"})).await;
    assert_eq!(absent["allowed_vault_ids"], Value::Null, "absent reads null");

    let path = format!("/api/agents/{}", id_of(&agent));
    let r = app.get(&path, &u.key).await;
    assert_eq!(r.body["data"], agent);
    let r = patch(&app, &path, &u.key, json!({"allowed_environment_ids": [e.clone()]})).await;
    assert_eq!(r.body["data"]["allowed_environment_ids"], json!([e]));
    assert_eq!(r.body["data"]["allowed_vault_ids"], json!([]), "absent keeps []");
    let r =
        patch(&app, &path, &u.key, json!({"allowed_vault_ids": null, "allowed_inference_credential_ids": []})).await;
    assert_eq!(r.body["data"]["allowed_vault_ids"], Value::Null);
    assert_eq!(r.body["data"]["allowed_inference_credential_ids"], json!([]));
    let r = patch(&app, &path, &u.key, json!({"allowed_vault_ids": [v.clone()]})).await;
    assert_eq!(r.body["data"]["allowed_vault_ids"], json!([v]));
    assert_eq!(r.body["data"]["version"], 4);
    let r = app.get(&path, &u.key).await;
    assert_eq!(r.body["data"]["allowed_inference_credential_ids"], json!([]));
    assert_eq!(r.body["data"]["allowed_environment_ids"], json!([e]));
    let r = patch(&app, &path, &u.key, json!({"allowed_vault_ids": ["not-a-uuid"]})).await;
    assert_field_error(&r, "allowed_vault_ids[0]");
}

async fn free_form_fields_round_trip(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let body = json!({
        "name": "full", "runtime": "opencode", "description": "everything", "command": ["opencode", "acp"],
        "model": "openai/gpt-5", "system_prompt": "Be brief.", "sandbox_mode": "persistent",
        "execution_limits": {"max_turn_seconds": 600},
        "mcp_servers": [{"name": "docs", "url": "https://mcp.example.com"}],
        "skills": ["review", {"name": "deploy"}], "metadata": {"owner": "ops", "n": [1, 2]}
    });
    let agent = create(&app, &u.key, body.clone()).await;
    for (k, v) in body.as_object().unwrap() {
        assert_eq!(&agent[k], v, "{k} round-trips");
    }
    assert_eq!(app.get(&format!("/api/agents/{}", id_of(&agent)), &u.key).await.body["data"], agent);
    let path = format!("/api/agents/{}", id_of(&agent));
    let r = patch(
        &app,
        &path,
        &u.key,
        json!({"execution_limits": null, "mcp_servers": null, "skills": null, "metadata": null, "sandbox_mode": null,
               "command": null, "system_prompt": null}),
    )
    .await;
    let d = &r.body["data"];
    assert_eq!(d["execution_limits"], Value::Null);
    assert_eq!(
        (d["mcp_servers"].clone(), d["skills"].clone(), d["metadata"].clone()),
        (json!([]), json!([]), json!({}))
    );
    assert_eq!(d["sandbox_mode"], "ephemeral", "null restores the default");
    assert_eq!((d["command"].clone(), d["system_prompt"].clone()), (Value::Null, Value::Null));
    for (field, bad) in
        [("mcp_servers", json!([1])), ("metadata", json!([])), ("execution_limits", json!(5)), ("skills", json!({}))]
    {
        let r = patch(&app, &path, &u.key, json!({field: bad})).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{field}: {}", r.text);
        assert!(r.body["errors"].as_object().unwrap().keys().any(|k| k.starts_with(field)), "{}", r.text);
    }

    // A restricted key manages agents too (configuration routes need no full scope).
    let r = app.post("/api/keys", &u.key, json!({"name": "narrow", "scope": "restricted"})).await;
    let narrow = r.body["data"]["api_key"].as_str().unwrap().to_owned();
    create(&app, &narrow, json!({"name": "by restricted key", "runtime": "claude"})).await;
}
