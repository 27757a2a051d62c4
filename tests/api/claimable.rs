//! Claimable principals (DESIGN 9.3, spec 4.3, docs/claimable.md): opened by
//! an application with an idempotency key, given model credentials by their
//! owner, claimed by a person; and migration 12, which let an account lack
//! an email and a password.

use std::collections::BTreeMap;

use acs::core::credentials::credential_value;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::Row;
use uuid::Uuid;

use crate::both;
use crate::common::{Backend, Resp, TestApp, User, assert_error, assert_refused, into_resp, spawn};

both!(
    create_and_repeat_return_one_principal_with_fresh_keys,
    idempotency_key_is_required_and_bounded,
    a_lost_response_is_reconciled_and_concurrent_repeats_open_one,
    a_principal_has_no_email_and_no_password,
    owner_writes_credentials_encrypted_and_never_shown,
    claim_hands_the_principal_over_with_its_resources,
    claim_refusals,
    restricted_keys_are_refused,
    owned_unclaimed_lists_the_owners_open_principals,
    deleting_the_application_deletes_its_unclaimed_principals,
    migration_12_keeps_every_row_and_column,
);

const SECRET: &str = "sk-ant-claimable-secret-value-9876543210";

async fn create(app: &TestApp, key: &str, idempotency_key: Option<&str>) -> Resp {
    let mut req = app.http.post(format!("{}/api/claimable-users", app.base)).bearer_auth(key);
    if let Some(k) = idempotency_key {
        req = req.header("Idempotency-Key", k);
    }
    into_resp(req.send().await.expect("request sent")).await
}

/// Opens a principal and returns `data`.
async fn open(app: &TestApp, key: &str, idempotency_key: &str) -> Value {
    let r = create(app, key, Some(idempotency_key)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"].clone()
}

fn s(v: &Value) -> String {
    v.as_str().unwrap_or_else(|| panic!("a string: {v}")).to_owned()
}

async fn put(app: &TestApp, key: &str, path: &str, body: Value) -> Resp {
    app.request(Method::PUT, path, Some(key), Some(body)).await
}

fn credential_path(grant: &str, provider: &str) -> String {
    format!("/api/claimable-users/{grant}/inference-credentials/{provider}")
}

#[track_caller]
fn assert_field_error(r: &Resp, field: &str) {
    assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert!(r.body["errors"][field].is_array(), "{}", r.text);
}

async fn create_and_repeat_return_one_principal_with_fresh_keys(b: Backend) {
    let app = spawn(b).await;
    let owner = app.user().await;
    let first = open(&app, &owner.key, "signup-42").await;
    assert_eq!(first["claimed"], false);
    let grant = s(&first["id"]);
    let account = s(&first["account_id"]);
    assert_ne!(grant, account, "the claim grant id is not the tenant id");
    assert_ne!(account, owner.id);
    let key1 = s(&first["api_key"]);
    assert!(key1.starts_with("acs_"));
    assert_eq!(first.as_object().unwrap().len(), 4, "{first}");

    let again = create(&app, &owner.key, Some("signup-42")).await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.text);
    assert_eq!(again.body["data"]["id"], first["id"]);
    assert_eq!(again.body["data"]["account_id"], first["account_id"]);
    assert_eq!(again.body["data"]["claimed"], false);
    let key2 = s(&again.body["data"]["api_key"]);
    assert_ne!(key1, key2, "a repeat mints a fresh key");

    // Both keys act as the principal with full scope.
    for key in [&key1, &key2] {
        let me = app.get("/api/auth/me", key).await;
        assert_eq!(me.status, StatusCode::OK, "{}", me.text);
        assert_eq!(me.body["data"]["user_id"], first["account_id"]);
        assert_eq!(me.body["data"]["key"]["scope"], "full");
        assert_eq!(app.get("/api/keys", key).await.status, StatusCode::OK);
    }

    // Another idempotency key opens another principal; another application's
    // same key is its own.
    let other = open(&app, &owner.key, "signup-43").await;
    assert_ne!(other["account_id"], first["account_id"]);
    let second_app = app.user().await;
    let theirs = open(&app, &second_app.key, "signup-42").await;
    assert_ne!(theirs["id"], first["id"]);

    // The application's audit log records the create and the repeat.
    let audit = app.get("/api/audit", &owner.key).await.body["data"].clone();
    let actions: Vec<String> = audit.as_array().unwrap().iter().map(|e| s(&e["action"])).collect();
    assert!(actions.contains(&"claimable_user.created".to_owned()), "{actions:?}");
    assert!(actions.contains(&"claimable_user.key_issued".to_owned()), "{actions:?}");
}

async fn idempotency_key_is_required_and_bounded(b: Backend) {
    let app = spawn(b).await;
    let owner = app.user().await;
    for bad in [None, Some(""), Some("   "), Some(&*"k".repeat(201))] {
        let r = create(&app, &owner.key, bad).await;
        assert_field_error(&r, "Idempotency-Key");
    }
    let exactly = "k".repeat(200);
    open(&app, &owner.key, &exactly).await;
    assert_eq!(create(&app, &owner.key, Some(&exactly)).await.status, StatusCode::OK);
    open(&app, &owner.key, "x").await;
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM claim_grants WHERE application_id = $1")
        .bind(owner.id.clone())
        .fetch_one(&app.state().db.pool)
        .await
        .unwrap();
    assert_eq!(n, 2, "refused creates open nothing");
}

async fn a_lost_response_is_reconciled_and_concurrent_repeats_open_one(b: Backend) {
    let app = spawn(b).await;
    let owner = app.user().await;
    // The client gives up before reading the answer: the principal exists anyway.
    let sent = app
        .http
        .post(format!("{}/api/claimable-users", app.base))
        .bearer_auth(&owner.key)
        .header("Idempotency-Key", "lost-1")
        .send()
        .await
        .unwrap();
    drop(sent);
    let retry = create(&app, &owner.key, Some("lost-1")).await;
    assert_eq!(retry.status, StatusCode::OK, "the retry finds the principal: {}", retry.text);
    let key = s(&retry.body["data"]["api_key"]);
    assert_eq!(app.get("/api/auth/me", &key).await.body["data"]["user_id"], retry.body["data"]["account_id"]);

    // Concurrent repeats of a first create open one principal between them.
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (http, base, key) = (app.http.clone(), app.base.clone(), owner.key.clone());
        tasks.spawn(async move {
            let res = http
                .post(format!("{base}/api/claimable-users"))
                .bearer_auth(key)
                .header("Idempotency-Key", "race")
                .send()
                .await
                .unwrap();
            into_resp(res).await
        });
    }
    let mut statuses = BTreeMap::new();
    let mut accounts = Vec::new();
    while let Some(r) = tasks.join_next().await {
        let r = r.unwrap();
        *statuses.entry(r.status.as_u16()).or_insert(0) += 1;
        accounts.push(s(&r.body["data"]["account_id"]));
    }
    assert_eq!(statuses, BTreeMap::from([(200, 7), (201, 1)]), "{statuses:?}");
    accounts.dedup();
    assert_eq!(accounts.len(), 1, "{accounts:?}");
    let pool = &app.state().db.pool;
    let grants: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM claim_grants WHERE idempotency_key = 'race'")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(grants, 1);
    let principals: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM accounts WHERE email IS NULL").fetch_one(pool).await.unwrap();
    assert_eq!(principals, 2, "lost-1 and race; losers left no account behind");
}

async fn a_principal_has_no_email_and_no_password(b: Backend) {
    let app = spawn(b).await;
    let owner = app.user().await;
    let p = open(&app, &owner.key, "who").await;
    let key = s(&p["api_key"]);
    let me = app.get("/api/auth/me", &key).await;
    assert_eq!(me.status, StatusCode::OK, "{}", me.text);
    assert_eq!(me.body["data"]["email"], Value::Null);
    assert_eq!(me.body["data"]["email_verified"], false);
    assert_eq!(me.body["data"]["pending_email"], Value::Null);
    // Twice: the second answer comes from the account cache.
    assert_eq!(app.get("/api/auth/me", &key).await.body["data"]["email"], Value::Null);
    // A person's identity is unchanged.
    assert_eq!(app.get("/api/auth/me", &owner.key).await.body["data"]["email"], owner.email.as_str());

    // No password matches a principal, nor does an empty email find one.
    for (email, password) in [("", ""), ("", "correct horse battery"), ("null", "")] {
        assert_error(&app.login(email, password).await, StatusCode::UNAUTHORIZED, "invalid_credentials");
    }
    let r = app
        .post("/api/account/password", &key, json!({"current_password": "", "new_password": "a new password"}))
        .await;
    assert_field_error(&r, "current_password");
    let r = app.post("/api/account/email", &key, json!({"new_email": "p@example.com", "current_password": "x"})).await;
    assert_field_error(&r, "current_password");
    assert_error(&app.post("/api/auth/verify-email/resend", &key, json!({})).await, StatusCode::CONFLICT, "no_email");
}

async fn raw_ciphertexts(app: &TestApp, account: &str) -> Vec<String> {
    sqlx::query("SELECT ciphertext FROM inference_credentials WHERE account_id = $1")
        .bind(account.to_owned())
        .fetch_all(&app.state().db.pool)
        .await
        .unwrap()
        .iter()
        .map(|r| r.try_get::<String, _>("ciphertext").unwrap())
        .collect()
}

async fn owner_writes_credentials_encrypted_and_never_shown(b: Backend) {
    let app = spawn(b).await;
    let owner = app.user().await;
    let p = open(&app, &owner.key, "creds").await;
    let (grant, account, pkey) = (s(&p["id"]), s(&p["account_id"]), s(&p["api_key"]));

    let r = put(&app, &owner.key, &credential_path(&grant, "anthropic_api_key"), json!({"value": SECRET})).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    assert!(r.text.is_empty());

    // The principal's default set holds it; no answer carries the value.
    let statuses = app.get("/api/account/inference-credentials", &pkey).await;
    assert_eq!(statuses.body["data"][0], json!({"provider": "anthropic_api_key", "set": true}), "{}", statuses.text);
    let sets = app.get("/api/account/inference-credential-sets", &pkey).await;
    assert_eq!(sets.body["data"][0]["name"], "Default");
    assert_eq!(sets.body["data"][0]["is_default"], true);
    for text in [&statuses.text, &sets.text, &app.get("/api/audit", &pkey).await.text] {
        assert!(!text.contains(SECRET), "{text}");
    }
    // The owner's own credentials are untouched.
    assert!(app.get("/api/account/inference-credentials", &owner.key).await.body["data"][0]["set"] == false);

    // Stored sealed under the principal's data key.
    let raw = raw_ciphertexts(&app, &account).await;
    assert_eq!(raw.len(), 1);
    assert!(!raw[0].contains(SECRET) && !raw[0].contains("claimable-secret"), "{}", raw[0]);
    let set_id: Uuid = s(&sets.body["data"][0]["id"]).parse().unwrap();
    let account_id: Uuid = account.parse().unwrap();
    let value = credential_value(app.state(), account_id, set_id, "anthropic_api_key").await.unwrap();
    assert_eq!(value.as_deref(), Some(SECRET));
    let owner_id: Uuid = owner.id.parse().unwrap();
    assert!(credential_value(app.state(), owner_id, set_id, "anthropic_api_key").await.unwrap().is_none());

    // A second write replaces it.
    let r = put(&app, &owner.key, &credential_path(&grant, "anthropic_api_key"), json!({"value": "sk-2"})).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    assert_eq!(raw_ciphertexts(&app, &account).await.len(), 1);

    // The account route's refusals.
    let r = put(&app, &owner.key, &credential_path(&grant, "mistral_api_key"), json!({"value": "x"})).await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");
    for empty in ["", "  "] {
        let r = put(&app, &owner.key, &credential_path(&grant, "openai_api_key"), json!({"value": empty})).await;
        assert_field_error(&r, "value");
    }
    let r = put(&app, &owner.key, &credential_path(&grant, "openai_api_key"), json!({})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    let r =
        put(&app, &owner.key, &credential_path(&grant, "openai_api_key"), json!({"value": "x".repeat(16 * 1024 + 1)}))
            .await;
    assert_field_error(&r, "value");

    // Only the owner, and only by the grant id.
    let stranger = app.user().await;
    for (key, path) in [
        (&stranger.key, credential_path(&grant, "openai_api_key")),
        (&pkey, credential_path(&grant, "openai_api_key")),
        (&owner.key, credential_path(&account, "openai_api_key")),
        (&owner.key, credential_path(&Uuid::new_v4().to_string(), "openai_api_key")),
        (&owner.key, credential_path("not-a-uuid", "openai_api_key")),
    ] {
        assert_error(&put(&app, key, &path, json!({"value": "x"})).await, StatusCode::NOT_FOUND, "not_found");
        assert_error(&app.delete(&path, key).await, StatusCode::NOT_FOUND, "not_found");
    }

    // Clearing: 204, then 404 as on the account route.
    let path = credential_path(&grant, "anthropic_api_key");
    assert_eq!(app.delete(&path, &owner.key).await.status, StatusCode::NO_CONTENT);
    assert_error(&app.delete(&path, &owner.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(
        &app.delete(&credential_path(&grant, "mistral_api_key"), &owner.key).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    let statuses = app.get("/api/account/inference-credentials", &pkey).await;
    assert!(statuses.body["data"].as_array().unwrap().iter().all(|s| s["set"] == false), "{}", statuses.text);
    assert!(raw_ciphertexts(&app, &account).await.is_empty());

    // The principal's log names the writes, done by the owner's key.
    let audit = app.get("/api/audit", &pkey).await.body["data"].clone();
    let actions: Vec<String> = audit.as_array().unwrap().iter().map(|e| s(&e["action"])).collect();
    for action in ["inference_credential.set", "inference_credential.deleted", "inference_credential_set.created"] {
        assert!(actions.contains(&action.to_owned()), "{actions:?}");
    }
}

async fn claim(app: &TestApp, key: &str, grant: &str) -> Resp {
    app.post(&format!("/api/claimable-users/{grant}/claim"), key, json!({})).await
}

async fn claim_hands_the_principal_over_with_its_resources(b: Backend) {
    let app = spawn(b).await;
    let application = app.user().await;
    let p = open(&app, &application.key, "to-claim").await;
    let (grant, account, key1) = (s(&p["id"]), s(&p["account_id"]), s(&p["api_key"]));
    let key2 = s(&create(&app, &application.key, Some("to-claim")).await.body["data"]["api_key"]);
    // Resources made as the principal before the claim, and a key made through its key.
    let agent = app.post("/api/agents", &key1, json!({"name": "helper", "runtime": "claude"})).await;
    assert_eq!(agent.status, StatusCode::CREATED, "{}", agent.text);
    let agent_id = s(&agent.body["data"]["id"]);
    let extra = app.post("/api/keys", &key2, json!({"name": "made by the app"})).await;
    assert_eq!(extra.status, StatusCode::CREATED, "{}", extra.text);
    let extra = s(&extra.body["data"]["api_key"]);
    let restricted = app.post("/api/keys", &key2, json!({"name": "r", "scope": "restricted"})).await;
    let restricted = s(&restricted.body["data"]["api_key"]);
    let r = put(&app, &application.key, &credential_path(&grant, "openai_api_key"), json!({"value": SECRET})).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    // Warm the key cache: revocation must reach cached keys too.
    for k in [&key1, &key2, &extra, &restricted] {
        assert_eq!(app.get("/api/auth/me", k).await.status, StatusCode::OK);
    }

    let person = app.user().await;
    let r = claim(&app, &person.key, &grant).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["account_id"], account.as_str());
    assert_eq!(r.body["data"].as_object().unwrap().len(), 2, "{}", r.text);
    let claimed_key = s(&r.body["data"]["api_key"]);

    // Same tenant, same resources, read with the claimer's new key.
    let me = app.get("/api/auth/me", &claimed_key).await;
    assert_eq!(me.body["data"]["user_id"], account.as_str());
    assert_eq!(me.body["data"]["key"]["scope"], "full");
    let read = app.get(&format!("/api/agents/{agent_id}"), &claimed_key).await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.text);
    assert_eq!(read.body["data"]["name"], "helper");
    let statuses = app.get("/api/account/inference-credentials", &claimed_key).await;
    assert_eq!(statuses.body["data"][2], json!({"provider": "openai_api_key", "set": true}));

    // Every key the application held for the principal is dead at once.
    for k in [&key1, &key2, &extra, &restricted] {
        assert_refused(&app.get("/api/auth/me", k).await, StatusCode::UNAUTHORIZED, "api_key_invalid");
    }
    let keys = app.get("/api/keys", &claimed_key).await.body["data"].clone();
    assert_eq!(keys.as_array().unwrap().len(), 1, "{keys}");
    assert_eq!(keys[0]["name"], "claimed");

    // The application no longer sees the grant.
    let path = credential_path(&grant, "openai_api_key");
    assert_error(&put(&app, &application.key, &path, json!({"value": "x"})).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.delete(&path, &application.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&claim(&app, &application.key, &grant).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&create(&app, &application.key, Some("to-claim")).await, StatusCode::CONFLICT, "already_claimed");

    // The claimer is the owner now, with its own key.
    let r = put(&app, &person.key, &credential_path(&grant, "gemini_api_key"), json!({"value": "g-1"})).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    assert_eq!(app.delete(&path, &person.key).await.status, StatusCode::NO_CONTENT);

    // Claiming twice; a third account sees nothing.
    assert_error(&claim(&app, &person.key, &grant).await, StatusCode::CONFLICT, "already_claimed");
    let third = app.user().await;
    assert_error(&claim(&app, &third.key, &grant).await, StatusCode::NOT_FOUND, "not_found");

    // One audit row each in the claimer's and the principal's logs.
    for key in [&person.key, &claimed_key] {
        let audit = app.get("/api/audit", key).await.body["data"].clone();
        assert!(audit.as_array().unwrap().iter().any(|e| e["action"] == "claimable_user.claimed"), "{audit}");
    }
    // The owner's open principals no longer include it.
    let open = acs::core::claimable::owned_unclaimed(&app.state().db, person.id.parse().unwrap()).await.unwrap();
    assert!(open.is_empty());
}

async fn claim_refusals(b: Backend) {
    let app = spawn(b).await;
    let application = app.user().await;
    let p = open(&app, &application.key, "refusals").await;
    let (grant, pkey) = (s(&p["id"]), s(&p["api_key"]));
    assert_error(&claim(&app, &application.key, &grant).await, StatusCode::CONFLICT, "already_owner");
    // A principal's key neither claims (its own grant or another) nor opens principals.
    assert_error(&claim(&app, &pkey, &grant).await, StatusCode::FORBIDDEN, "principal_not_allowed");
    let other = open(&app, &application.key, "other").await;
    assert_error(&claim(&app, &pkey, &s(&other["id"])).await, StatusCode::FORBIDDEN, "principal_not_allowed");
    assert_error(&create(&app, &pkey, Some("nested")).await, StatusCode::FORBIDDEN, "principal_not_allowed");
    // Unknown and malformed ids, and the tenant id in place of the grant id.
    let person = app.user().await;
    for id in [Uuid::new_v4().to_string(), "nope".to_owned(), s(&p["account_id"])] {
        assert_error(&claim(&app, &person.key, &id).await, StatusCode::NOT_FOUND, "not_found");
    }
    // Nothing changed: the principal is still the application's.
    assert_eq!(app.get("/api/auth/me", &pkey).await.status, StatusCode::OK);
    assert_eq!(claim(&app, &person.key, &grant).await.status, StatusCode::OK);
}

async fn restricted_key(app: &TestApp, u: &User) -> String {
    let r = app.post("/api/keys", &u.key, json!({"name": "r", "scope": "restricted"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    s(&r.body["data"]["api_key"])
}

async fn restricted_keys_are_refused(b: Backend) {
    let app = spawn(b).await;
    let application = app.user().await;
    let p = open(&app, &application.key, "scoped").await;
    let grant = s(&p["id"]);
    let app_restricted = restricted_key(&app, &application).await;
    assert_refused(&create(&app, &app_restricted, Some("k")).await, StatusCode::FORBIDDEN, "insufficient_scope");
    assert_refused(&create(&app, &app_restricted, None).await, StatusCode::FORBIDDEN, "insufficient_scope");
    let path = credential_path(&grant, "openai_api_key");
    assert_refused(
        &put(&app, &app_restricted, &path, json!({"value": "x"})).await,
        StatusCode::FORBIDDEN,
        "insufficient_scope",
    );
    assert_refused(&app.delete(&path, &app_restricted).await, StatusCode::FORBIDDEN, "insufficient_scope");
    let person_restricted = restricted_key(&app, &app.user().await).await;
    assert_refused(&claim(&app, &person_restricted, &grant).await, StatusCode::FORBIDDEN, "insufficient_scope");
    assert_refused(
        &app.request(Method::POST, "/api/claimable-users", None, None).await,
        StatusCode::UNAUTHORIZED,
        "api_key_invalid",
    );
}

async fn owned_unclaimed_lists_the_owners_open_principals(b: Backend) {
    let app = spawn(b).await;
    let application = app.user().await;
    let a = open(&app, &application.key, "a").await;
    let c = open(&app, &application.key, "c").await;
    let person = app.user().await;
    assert_eq!(claim(&app, &person.key, &s(&c["id"])).await.status, StatusCode::OK);
    let owner: Uuid = application.id.parse().unwrap();
    let open = acs::core::claimable::owned_unclaimed(&app.state().db, owner).await.unwrap();
    assert_eq!(open, vec![s(&a["account_id"]).parse::<Uuid>().unwrap()]);
    let nobody = acs::core::claimable::owned_unclaimed(&app.state().db, Uuid::new_v4()).await.unwrap();
    assert!(nobody.is_empty());
}

async fn deleting_the_application_deletes_its_unclaimed_principals(b: Backend) {
    let app = spawn(b).await;
    let application = app.user().await;
    let open_one = open(&app, &application.key, "open").await;
    let claimed = open(&app, &application.key, "claimed").await;
    let person = app.user().await;
    let r = claim(&app, &person.key, &s(&claimed["id"])).await;
    assert_eq!(r.status, StatusCode::OK);
    let claimers_key = s(&r.body["data"]["api_key"]);
    let r = app
        .request(
            reqwest::Method::DELETE,
            "/api/account",
            Some(&application.key),
            Some(serde_json::json!({"confirm": application.email})),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    let gone = s(&open_one["account_id"]);
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM accounts WHERE id = $1")
        .bind(gone)
        .fetch_one(&app.state().db.pool)
        .await
        .unwrap();
    assert_eq!(n, 0, "the unclaimed principal went with its application");
    assert_eq!(app.get("/api/auth/me", &s(&open_one["api_key"])).await.status, StatusCode::UNAUTHORIZED);
    let me = app.get("/api/auth/me", &claimers_key).await;
    assert_eq!(me.status, StatusCode::OK, "a claimed principal is its claimer's: {}", me.text);
    assert_eq!(me.body["data"]["user_id"], claimed["account_id"]);
}

/// Row counts of every table but the migration histories.
async fn row_counts(app: &TestApp, b: Backend) -> BTreeMap<String, i64> {
    let pool = &app.state().db.pool;
    let sql = match b {
        Backend::Sqlite => "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
        Backend::Postgres => {
            "SELECT table_name::text AS name FROM information_schema.tables WHERE table_schema = current_schema() \
             AND table_type = 'BASE TABLE'"
        }
    };
    let names: Vec<String> = sqlx::query_scalar(sql).fetch_all(pool).await.unwrap();
    let mut counts = BTreeMap::new();
    for name in names.into_iter().filter(|n| !n.starts_with("_sqlx_migrations")) {
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {name}")))
            .fetch_one(pool)
            .await
            .unwrap();
        counts.insert(name, n);
    }
    counts
}

async fn account_columns(app: &TestApp, b: Backend) -> Vec<(String, bool)> {
    let pool = &app.state().db.pool;
    match b {
        Backend::Sqlite => {
            sqlx::query("SELECT name, \"notnull\" AS nn FROM pragma_table_info('accounts') ORDER BY cid")
                .fetch_all(pool)
                .await
                .unwrap()
                .iter()
                .map(|r| (r.try_get("name").unwrap(), r.try_get::<i64, _>("nn").unwrap() != 0))
                .collect()
        }
        Backend::Postgres => sqlx::query(
            "SELECT column_name::text AS name, (is_nullable = 'NO')::int AS nn FROM information_schema.columns \
             WHERE table_name = 'accounts' AND table_schema = current_schema() ORDER BY ordinal_position",
        )
        .fetch_all(pool)
        .await
        .unwrap()
        .iter()
        .map(|r| (r.try_get("name").unwrap(), r.try_get::<i32, _>("nn").unwrap() != 0))
        .collect(),
    }
}

/// Migration 12 rebuilds `accounts` on SQLite with foreign keys off: run
/// again over a database full of rows that reference accounts (keys,
/// agents and their versions, environments, vaults, credentials, sessions,
/// a principal and its grant), it keeps every row of every table.
async fn migration_12_keeps_every_row_and_column(b: Backend) {
    let mut app = spawn(b).await;
    let u = app.user().await;
    assert_eq!(
        app.post("/api/agents", &u.key, json!({"name": "a", "runtime": "claude"})).await.status,
        StatusCode::CREATED
    );
    assert_eq!(app.post("/api/environments", &u.key, json!({"name": "e"})).await.status, StatusCode::CREATED);
    let vault = app.post("/api/vaults", &u.key, json!({"name": "v"})).await;
    assert_eq!(vault.status, StatusCode::CREATED, "{}", vault.text);
    let vault_id = s(&vault.body["data"]["id"]);
    let r = put(&app, &u.key, &format!("/api/vaults/{vault_id}/secrets/TOKEN"), json!({"value": "t"})).await;
    assert!(r.status.is_success(), "{}", r.text);
    let r = put(&app, &u.key, "/api/account/inference-credentials/anthropic_api_key", json!({"value": SECRET})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let p = open(&app, &u.key, "migrated").await;
    let r = put(&app, &u.key, &credential_path(&s(&p["id"]), "openai_api_key"), json!({"value": "o"})).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let before = row_counts(&app, b).await;
    for table in ["accounts", "api_keys", "agents", "agent_versions", "vaults", "inference_credentials", "claim_grants"]
    {
        assert!(before[table] > 0, "{table} has rows to keep: {before:?}");
    }
    let columns = account_columns(&app, b).await;
    let nullable: Vec<&str> = columns.iter().filter(|c| !c.1).map(|c| c.0.as_str()).collect();
    assert!(nullable.contains(&"email") && nullable.contains(&"password_hash"), "{columns:?}");

    // Forget that migration 12 ran; the restart runs it again. A database from
    // before it had no index a later migration put on accounts: the admin
    // extension's search index goes too, and is made again after it.
    sqlx::query("DELETE FROM _sqlx_migrations WHERE version = 12").execute(&app.state().db.pool).await.unwrap();
    #[cfg(feature = "admin")]
    for forget in ["DROP INDEX admin_accounts_search", "DELETE FROM _sqlx_migrations_admin WHERE version = 2"] {
        sqlx::query(forget).execute(&app.state().db.pool).await.unwrap();
    }
    app.restart().await;
    let ran: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations WHERE version = 12")
        .fetch_one(&app.state().db.pool)
        .await
        .unwrap();
    assert_eq!(ran, 1);
    assert_eq!(row_counts(&app, b).await, before, "every row survives the rebuild");
    assert_eq!(account_columns(&app, b).await, columns, "every column survives, in order");
    if b == Backend::Sqlite {
        let pool = &app.state().db.pool;
        let dangling: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM pragma_foreign_key_check").fetch_one(pool).await.unwrap();
        assert_eq!(dangling, 0);
        // Foreign keys are on again (the migrator's connection returns to the pool).
        for _ in 0..4 {
            let on: i64 = sqlx::query_scalar("PRAGMA foreign_keys").fetch_one(pool).await.unwrap();
            assert_eq!(on, 1);
        }
    }
    // The data is readable and cascades still work.
    assert_eq!(app.get("/api/agents", &u.key).await.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(app.get("/api/auth/me", &s(&p["api_key"])).await.body["data"]["email"], Value::Null);
    let pool = &app.state().db.pool;
    sqlx::query("DELETE FROM accounts WHERE id = $1").bind(u.id.clone()).execute(pool).await.unwrap();
    let keys: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM api_keys WHERE account_id = $1")
        .bind(u.id.clone())
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(keys, 0, "ON DELETE CASCADE still points at the rebuilt table");
    let grants: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM claim_grants").fetch_one(pool).await.unwrap();
    assert_eq!(grants, 0, "the owner's grant went with it");

    if b == Backend::Sqlite {
        // A later index or column on `accounts` that the rebuild does not
        // know of fails the migration (its guard) instead of being dropped by it.
        sqlx::query("DELETE FROM _sqlx_migrations WHERE version = 12").execute(pool).await.unwrap();
        for change in
            ["CREATE INDEX accounts_later ON accounts(updated_at)", "ALTER TABLE accounts ADD COLUMN later BIGINT"]
        {
            sqlx::query(sqlx::AssertSqlSafe(change)).execute(pool).await.unwrap();
            let err = acs::core::extension::migrate(&app.state().db).await.unwrap_err().to_string();
            assert!(err.contains("CHECK constraint failed"), "{change}: {err}");
            sqlx::query("DROP INDEX IF EXISTS accounts_later").execute(pool).await.unwrap();
        }
        let mut columns = columns.clone();
        columns.push(("later".to_owned(), false));
        assert_eq!(account_columns(&app, b).await, columns);
    }
}
