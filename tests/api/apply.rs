//! Bulk apply (`POST /api/apply`, spec 4.5): six kinds in order, names
//! resolved against the manifest first, unchanged on a second apply, a
//! changed field updated, one document's error leaving the rest applied, a
//! dry run that writes nothing, and the full-scope rule for webhooks.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::both;
use crate::common::{Backend, TestApp, User, assert_error, spawn};

both!(
    a_manifest_of_six_kinds_applies_in_order_then_is_unchanged,
    a_changed_field_updates_and_an_error_stays_in_its_document,
    a_dry_run_writes_nothing,
    a_manifest_with_a_webhook_needs_a_full_scope_key,
);

fn manifest() -> Value {
    // Out of order on purpose: kinds apply Environment, Vault, Agent, Teammate, Schedule, Webhook.
    json!([
        {"kind": "Webhook", "spec": {"url": "https://hooks.example.com/acs", "event_types": ["conversation.turn.*"]}},
        {"kind": "Schedule", "name": "nightly", "spec": {"agent": "reviewer", "cron": "0 3 * * *", "prompt": "say: nightly"}},
        {"kind": "Teammate", "name": "reviewer", "spec": {"environment": "py", "vault": "keys"}},
        {"kind": "Agent", "name": "reviewer", "spec": {"runtime": "acp", "command": ["/bin/true"],
            "environment": "py", "vault": "keys", "system_prompt": "Review."}},
        {"kind": "Vault", "name": "keys", "spec": {"description": "tokens", "secrets": {"TOKEN": "tok-5a4b3c2d1e"}}},
        {"kind": "Environment", "name": "py", "spec": {"setup_script": "true", "env_vars": {"A": "1"}}},
    ])
}

async fn apply(app: &TestApp, key: &str, docs: Value, dry_run: bool) -> (StatusCode, Value) {
    let path = if dry_run { "/api/apply?dry_run=true" } else { "/api/apply" };
    let r = app.post(path, key, json!({"documents": docs})).await;
    (r.status, r.body)
}

/// (kind, name, result) of each row.
fn results(body: &Value) -> Vec<(String, String, String)> {
    let rows = body["data"].as_array().unwrap().iter();
    rows.map(|r| {
        let s = |k: &str| r[k].as_str().unwrap_or("").to_owned();
        (s("kind"), s("name"), s("result"))
    })
    .collect()
}

fn row(kind: &str, name: &str, result: &str) -> (String, String, String) {
    (kind.into(), name.into(), result.into())
}

async fn a_manifest_of_six_kinds_applies_in_order_then_is_unchanged(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let (status, body) = apply(&app, &u.key, manifest(), false).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        results(&body),
        [
            row("Environment", "py", "created"),
            row("Vault", "keys", "created"),
            row("Vault", "keys/secrets/TOKEN", "upserted"),
            row("Agent", "reviewer", "created"),
            row("Teammate", "reviewer", "created"),
            row("Schedule", "nightly", "created"),
            row("Webhook", "", "created"),
        ]
    );
    let secret = body["data"][6]["signing_secret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_"), "the signing secret, once");
    assert!(!body.to_string().contains("tok-5a4b3c2d1e"), "secret values are never answered");
    // Names resolved against the manifest: the agent is bound to the environment and vault it made.
    let env = body["data"][0]["id"].as_str().unwrap();
    let agent = app.get(&format!("/api/agents/{}", body["data"][3]["id"].as_str().unwrap()), &u.key).await;
    assert_eq!(agent.body["data"]["environment_id"], env);
    assert_eq!(agent.body["data"]["vault_id"], body["data"][1]["id"]);
    let team = app.get("/api/team", &u.key).await;
    assert_eq!(team.body["data"][0]["environment_id"], env);
    // The writes were the API's own, audited with actor and address.
    let audit = app.get("/api/audit?limit=50", &u.key).await;
    let actions: Vec<&str> =
        audit.body["data"].as_array().unwrap().iter().filter_map(|e| e["action"].as_str()).collect();
    for a in ["team.member.added", "team.schedule.created", "webhook_endpoint.created"] {
        assert!(actions.contains(&a), "{a} in {actions:?}");
    }

    // Again: nothing changes; inline secrets are written again.
    let (_, again) = apply(&app, &u.key, manifest(), false).await;
    let got = results(&again);
    assert_eq!(got.iter().filter(|r| r.2 == "unchanged").count(), 6, "{got:?}");
    assert_eq!(got[2], row("Vault", "keys/secrets/TOKEN", "upserted"));
    assert!(again["data"][6].get("signing_secret").is_none(), "shown once");
    assert_eq!(app.get("/api/webhooks", &u.key).await.body["data"].as_array().unwrap().len(), 1);
}

async fn a_changed_field_updates_and_an_error_stays_in_its_document(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    apply(&app, &u.key, manifest(), false).await;
    let mut docs = manifest();
    docs[3]["spec"]["system_prompt"] = json!("Review carefully.");
    docs[4]["spec"]["colour"] = json!("blue");
    docs.as_array_mut().unwrap().push(json!({"kind": "Agent", "name": "lost", "spec": {"runtime": "acp",
        "command": ["/bin/true"], "environment": "nowhere"}}));
    docs.as_array_mut().unwrap().push(json!({"kind": "Gadget", "name": "x", "spec": {}}));
    let (status, body) = apply(&app, &u.key, docs, false).await;
    assert_eq!(status, StatusCode::OK);
    let got = results(&body);
    assert!(got.contains(&row("Agent", "reviewer", "updated")), "{got:?}");
    assert!(got.contains(&row("Vault", "keys", "error")), "{got:?}");
    assert!(got.contains(&row("Agent", "lost", "error")));
    assert!(got.contains(&row("Gadget", "x", "error")));
    assert!(got.contains(&row("Environment", "py", "unchanged")));
    let errors: Vec<&str> = body["data"].as_array().unwrap().iter().filter_map(|r| r["error"].as_str()).collect();
    assert!(errors.iter().any(|e| e.contains("colour")), "{errors:?}");
    assert!(errors.iter().any(|e| e.contains("no environment named \"nowhere\"")), "{errors:?}");
    // The failed vault document wrote nothing; the agent's change is in.
    let vaults = app.get("/api/vaults", &u.key).await;
    assert_eq!(vaults.body["data"][0]["description"], "tokens");
    let agents = app.get("/api/agents", &u.key).await;
    let reviewer = agents.body["data"].as_array().unwrap().iter().find(|a| a["name"] == "reviewer").unwrap();
    assert_eq!(reviewer["system_prompt"], "Review carefully.");
    assert_eq!(reviewer["version"], 2);
    // A validation refusal of the API comes back in its words, in that document only.
    let (_, body) = apply(
        &app,
        &u.key,
        json!([{"kind": "Schedule", "name": "bad", "spec": {"agent": "reviewer",
        "cron": "every day", "prompt": "x"}}]),
        false,
    )
    .await;
    assert_eq!(results(&body), [row("Schedule", "bad", "error")]);
    assert!(body["data"][0]["error"].as_str().unwrap().contains("cron"), "{body}");
}

async fn a_dry_run_writes_nothing(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let (status, body) = apply(&app, &u.key, manifest(), true).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let got = results(&body);
    assert_eq!(got.iter().filter(|r| r.2 == "created").count(), 6, "{got:?}");
    assert!(
        body["data"].as_array().unwrap().iter().all(|r| r.get("id").is_none() && r.get("signing_secret").is_none())
    );
    for list in ["/api/environments", "/api/vaults", "/api/agents", "/api/team", "/api/webhooks"] {
        assert_eq!(app.get(list, &u.key).await.body["data"], json!([]), "{list}");
    }
    // After a real apply, a dry run of a change reports it and leaves it undone.
    apply(&app, &u.key, manifest(), false).await;
    let mut docs = manifest();
    docs[5]["spec"]["setup_script"] = json!("echo changed");
    let (_, body) = apply(&app, &u.key, docs, true).await;
    assert!(results(&body).contains(&row("Environment", "py", "updated")));
    let envs = app.get("/api/environments", &u.key).await;
    assert_eq!(envs.body["data"][0]["setup_script"], "true");
}

async fn restricted(app: &TestApp, u: &User) -> String {
    let r = app.post("/api/keys", &u.key, json!({"name": "r", "scope": "restricted"})).await;
    r.body["data"]["api_key"].as_str().unwrap().to_owned()
}

async fn a_manifest_with_a_webhook_needs_a_full_scope_key(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let key = restricted(&app, &u).await;
    let r = app.post("/api/apply", &key, json!({"documents": manifest()})).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    assert_eq!(r.body["reason"], "insufficient_scope");
    assert_eq!(app.get("/api/environments", &u.key).await.body["data"], json!([]), "refused before any write");
    // Without the webhook, a restricted key may apply the rest.
    let docs: Vec<Value> = manifest().as_array().unwrap().iter().filter(|d| d["kind"] != "Webhook").cloned().collect();
    let (status, body) = apply(&app, &key, json!(docs), false).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let r = app.post("/api/apply", &u.key, json!({"documents": []})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    // At most 1000 documents: the 1000th is read (here an unknown kind, refused in its row), the 1001st is not.
    let many = |n: usize| json!({"documents": vec![json!({"kind": "Gadget", "name": "g"}); n]});
    let r = app.post("/api/apply", &u.key, many(1000)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1000);
    let r = app.post("/api/apply", &u.key, many(1001)).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    let r = app.post("/api/apply", &u.key, json!({"documents": [{"kind": "Vault", "name": "v", "extra": 1}]})).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
}
