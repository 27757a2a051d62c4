//! The account's lifecycle (DESIGN 9.3; docs/accounts.md): deletion leaves
//! nothing behind (every table searched, the machine gone from the host),
//! exports hold the account without a secret and stream from the database,
//! onboarding, and the avatar at its limits.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::Row;
use uuid::Uuid;

use crate::common::{
    Backend, Resp, SCRIPTED_AGENT, TestApp, User, acp_agent, assert_error, assert_refused, create_conversation,
    finished_turns, scripted_app, turns,
};

crate::both!(
    deletion_leaves_nothing_of_the_account,
    deletion_needs_the_email_and_a_full_key,
    a_deletion_cut_short_is_finished,
    export_holds_the_account_without_secrets,
    export_download_follows_its_state,
    onboarding_keeps_the_first_completion,
    avatar_takes_images_up_to_ten_megabytes,
);

const TEN_MB: usize = 10 * 1024 * 1024;

/// What `populate` made: every id that must vanish with the account, and every secret value.
struct Made {
    ids: Vec<String>,
    secrets: Vec<String>,
    /// The conversation whose turn finished, and its machine.
    idle: (Uuid, Uuid),
}

fn id(r: &Resp) -> String {
    assert!(r.status.is_success(), "{}", r.text);
    r.body["data"]["id"].as_str().unwrap_or_else(|| panic!("no id: {}", r.text)).to_owned()
}

async fn put(app: &TestApp, key: &str, path: &str, body: Value) -> Resp {
    app.request(Method::PUT, path, Some(key), Some(body)).await
}

/// Agents, an environment and a vault with secrets, a restricted key, a credential set with a
/// credential, a webhook, a teammate with a schedule, a conversation with a finished turn.
async fn populate(app: &TestApp, u: &User, tag: &str) -> Made {
    let mut ids = vec![u.id.clone(), u.email.clone()];
    let env_secret = format!("env-secret-{tag}-5a1c9e");
    let vault_secret = format!("vault-secret-{tag}-7f3b21");
    let cred_secret = format!("sk-ant-cred-{tag}-0d4e88");
    let env = id(&app.post("/api/environments", &u.key, json!({"name": format!("env-{tag}")})).await);
    let r = put(app, &u.key, &format!("/api/environments/{env}/secrets/ENV_TOKEN"), json!({"value": env_secret})).await;
    assert!(r.status.is_success(), "{}", r.text);
    let vault = id(&app.post("/api/vaults", &u.key, json!({"name": format!("vault-{tag}")})).await);
    let r = put(app, &u.key, &format!("/api/vaults/{vault}/secrets/VAULT_TOKEN"), json!({"value": vault_secret})).await;
    assert!(r.status.is_success(), "{}", r.text);
    let agent = acp_agent(app, u, SCRIPTED_AGENT, json!({"environment_id": env, "vault_id": vault})).await;
    let path = format!("/api/agents/{agent}");
    let r = app.request(Method::PATCH, &path, Some(&u.key), Some(json!({"description": "v2"}))).await;
    assert!(r.status.is_success(), "{}", r.text);
    let key = app.post("/api/keys", &u.key, json!({"name": "second", "scope": "restricted"})).await;
    let key_value = key.body["data"]["api_key"].as_str().unwrap().to_owned();
    let key_id = key.body["data"]["key"]["id"].as_str().unwrap().to_owned();
    let set = id(&app.post("/api/account/inference-credential-sets", &u.key, json!({"name": "work"})).await);
    let r = put(
        app,
        &u.key,
        &format!("/api/account/inference-credential-sets/{set}/credentials/anthropic_api_key"),
        json!({"value": cred_secret}),
    )
    .await;
    assert!(r.status.is_success(), "{}", r.text);
    let hook = app.post("/api/webhooks", &u.key, json!({"url": format!("https://hooks.example.com/{tag}")})).await;
    let hook_secret = hook.body["data"]["secret"].as_str().unwrap().to_owned();
    let hook_id = id(&hook);
    let oauth = app
        .post(
            "/api/oauth/clients",
            &u.key,
            json!({"name": format!("app {tag}"), "redirect_uris": [format!("https://{tag}.example/cb")]}),
        )
        .await;
    assert_eq!(oauth.status, StatusCode::CREATED, "{}", oauth.text);
    let r = put(app, &u.key, &format!("/api/team/{agent}"), json!({})).await;
    assert!(r.status.is_success(), "{}", r.text);
    let schedule =
        id(&app.post(&format!("/api/team/{agent}/schedules"), &u.key, json!({"cron": "@yearly", "prompt": "p"})).await);
    let c = create_conversation(app, u, json!({"agent_id": agent, "prompt": format!("say: hello {tag}")})).await;
    let conv: Uuid = c["id"].as_str().unwrap().parse().unwrap();
    let t = finished_turns(app, conv, 1).await;
    let sandbox = machine_of(app, conv).await;
    ids.extend([env, vault, agent.to_string(), key_id, set, hook_id, schedule, conv.to_string(), sandbox.to_string()]);
    ids.extend(t.iter().map(|t| t.id.to_string()));
    Made {
        ids,
        secrets: vec![env_secret, vault_secret, cred_secret, hook_secret, key_value, u.key.clone()],
        idle: (conv, sandbox),
    }
}

async fn machine_of(app: &TestApp, conv: Uuid) -> Uuid {
    let c = acs::core::conversations::store::get(&app.state().db, conv).await.unwrap().unwrap();
    c.sandbox_id.expect("the conversation has a machine")
}

/// Every user table of the database.
async fn tables(app: &TestApp) -> Vec<String> {
    let sql = if app.db_url.starts_with("sqlite") {
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
    } else {
        "SELECT CAST(table_name AS TEXT) FROM information_schema.tables WHERE table_schema = current_schema() \
         AND table_type = 'BASE TABLE' ORDER BY table_name"
    };
    sqlx::query_scalar(sql).fetch_all(&app.state().db.pool).await.unwrap()
}

/// Every row of every table as text (binary columns in hex), lower case.
async fn all_rows(app: &TestApp) -> Vec<(String, String)> {
    let pool = &app.state().db.pool;
    let mut out = Vec::new();
    for t in tables(app).await {
        let sql = if app.db_url.starts_with("sqlite") {
            let cols = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT name, type FROM pragma_table_info('{t}')")))
                .fetch_all(pool)
                .await
                .unwrap();
            let parts: Vec<String> = cols
                .iter()
                .map(|c| {
                    let (name, ty): (String, String) = (c.get("name"), c.get("type"));
                    if ty.eq_ignore_ascii_case("BLOB") {
                        format!("COALESCE(hex(\"{name}\"), '')")
                    } else {
                        format!("COALESCE(CAST(\"{name}\" AS TEXT), '')")
                    }
                })
                .collect();
            format!("SELECT {} AS r FROM \"{t}\"", parts.join(" || '|' || "))
        } else {
            format!("SELECT CAST(t AS TEXT) AS r FROM \"{t}\" t")
        };
        for row in sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_all(pool).await.unwrap() {
            out.push((t.clone(), row.get::<String, _>("r").to_lowercase()));
        }
    }
    out
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The rows (table, row) holding any of `needles`, as text or in hex.
async fn rows_holding(app: &TestApp, needles: &[String]) -> Vec<(String, String)> {
    let needles: Vec<(String, String)> = needles.iter().map(|n| (n.to_lowercase(), hex(n))).collect();
    all_rows(app)
        .await
        .into_iter()
        .filter(|(_, row)| needles.iter().any(|(n, h)| row.contains(n) || row.contains(h)))
        .collect()
}

/// How many rows of each table hold the account's id.
async fn counts(app: &TestApp, account_id: &str) -> std::collections::BTreeMap<String, usize> {
    let mut m = std::collections::BTreeMap::new();
    for (t, row) in all_rows(app).await {
        if row.contains(account_id) {
            *m.entry(t).or_default() += 1;
        }
    }
    m
}

/// The processes running now as `uid`.
fn processes_of(uid: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        if let Ok(status) = std::fs::read_to_string(entry.path().join("status"))
            && let Some(line) = status.lines().find(|l| l.starts_with("Uid:"))
            && line.split_whitespace().nth(1).and_then(|u| u.parse().ok()) == Some(uid)
            && !status.lines().any(|l| l.starts_with("State:") && l.contains("zombie"))
        {
            pids.push(pid);
        }
    }
    pids
}

async fn wait_running_turn(app: &TestApp, conv: Uuid) {
    for _ in 0..600 {
        if turns(app, conv).await.iter().any(|t| t.status == "running") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no turn started: {:?}", turns(app, conv).await);
}

async fn deletion_leaves_nothing_of_the_account(b: Backend) {
    let app = scripted_app(b, &[]).await;
    let u = app.user().await;
    let other = app.user().await;
    let mine = populate(&app, &u, "mine").await;
    let theirs = populate(&app, &other, "theirs").await;
    // A running turn on a live machine, an avatar, an export, onboarding: all of it goes.
    let agent = acp_agent(&app, &u, SCRIPTED_AGENT, json!({})).await;
    let c = create_conversation(&app, &u, json!({"agent_id": agent, "prompt": "sleep: 60000"})).await;
    let running: Uuid = c["id"].as_str().unwrap().parse().unwrap();
    wait_running_turn(&app, running).await;
    let machine = machine_of(&app, running).await;
    let layout = app.machine_layout(machine);
    assert!(layout.root.is_dir());
    let uid: u32 = std::fs::read_to_string(layout.owner()).unwrap().trim().parse().unwrap();
    let processes = processes_of(uid);
    assert!(!processes.is_empty(), "the machine runs as its own uid");
    let r = app.request(
        Method::PUT,
        "/api/account/avatar",
        Some(&u.key),
        Some(json!({"data": "aGk=", "media_type": "image/png"})),
    );
    assert_eq!(r.await.status, StatusCode::NO_CONTENT);
    assert_eq!(app.post("/api/account/onboarding", &u.key, json!({})).await.status, StatusCode::OK);
    let export = id(&app.post("/api/account/exports", &u.key, json!({})).await);
    let mut gone = mine.ids.clone();
    gone.extend([agent.to_string(), running.to_string(), machine.to_string(), export]);
    gone.extend(mine.secrets.clone());
    let theirs_before = counts(&app, &other.id).await;
    assert!(!rows_holding(&app, &gone).await.is_empty());

    let r = app.request(Method::DELETE, "/api/account", Some(&u.key), Some(json!({"confirm": u.email}))).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);

    // Nothing of it in any table, by id, by address or by secret value.
    let left = rows_holding(&app, &gone).await;
    assert!(left.is_empty(), "rows left behind: {left:#?}");
    // The machines are gone from the host: disk, mount, supervisor, processes.
    for sandbox in [machine, mine.idle.1] {
        let l = app.machine_layout(sandbox);
        assert!(!l.root.exists(), "{} is still there", l.root.display());
        assert!(!l.mount().exists(), "{} is still there", l.mount().display());
        let svc = acs::core::sandboxes::service::service(app.state()).unwrap();
        assert!(svc.serving(sandbox).supervisor(sandbox).ping().await.is_err());
    }
    // Its processes are gone (the uid itself may already serve another test's new machine).
    let mut left = processes.clone();
    for _ in 0..100 {
        left = processes_of(uid).into_iter().filter(|p| processes.contains(p)).collect();
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(left.is_empty(), "processes of the machine still run: {left:?}");
    // Its keys are refused, its password signs in no more, and the address is free again.
    assert_refused(&app.get("/api/auth/me", &u.key).await, StatusCode::UNAUTHORIZED, "api_key_invalid");
    assert_refused(&app.get("/api/agents", &mine.secrets[4]).await, StatusCode::UNAUTHORIZED, "api_key_invalid");
    assert_eq!(app.login(&u.email, &u.password).await.status, StatusCode::UNAUTHORIZED);
    let mail = confirmation_mail(&app, &u.email).await;
    assert!(mail["subject"].as_str().unwrap().contains("deleted"), "{mail}");
    assert_eq!(app.register(&u.email, &u.password).await.status, StatusCode::CREATED);

    // The other account is untouched: every row of it is still there, its machine too.
    let theirs_after = counts(&app, &other.id).await;
    for (table, n) in &theirs_before {
        assert!(theirs_after.get(table).copied().unwrap_or(0) >= *n, "{table} lost rows of the other account");
    }
    assert!(app.machine_layout(theirs.idle.1).root.is_dir());
    for path in ["/api/agents", "/api/environments", "/api/vaults", "/api/webhooks", "/api/team"] {
        let r = app.get(path, &other.key).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        assert!(!r.body["data"].as_array().unwrap().is_empty(), "{path}: {}", r.text);
    }
    let r = app.get(&format!("/api/conversations/{}", theirs.idle.0), &other.key).await;
    assert_eq!(r.status, StatusCode::OK);
    // Their secrets still open (their data key was not touched).
    let vals = acs::core::vaults::secrets::live_secret_values(
        app.state(),
        other.id.parse().unwrap(),
        theirs.ids[3].parse().unwrap(),
        acs::core::time_fmt::now_micros(),
    )
    .await
    .unwrap();
    assert!(format!("{vals:?}").contains(&theirs.secrets[1]));
}

async fn confirmation_mail(app: &TestApp, to: &str) -> Value {
    for _ in 0..100 {
        let mails: Vec<Value> = std::fs::read_dir(app.dir.join("outbox"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok())
            .filter(|v: &Value| v["to"] == to && v["subject"].as_str().is_some_and(|s| s.contains("deleted")))
            .collect();
        if let Some(m) = mails.into_iter().next() {
            return m;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no confirmation mail to {to}");
}

async fn deletion_needs_the_email_and_a_full_key(b: Backend) {
    let app = crate::common::spawn(b).await;
    let u = app.user().await;
    let del = |key: String, body: Value| {
        let app = &app;
        async move { app.request(Method::DELETE, "/api/account", Some(&key), Some(body)).await }
    };
    for body in [
        json!({}),
        json!({"confirm": ""}),
        json!({"confirm": u.email.to_uppercase()}),
        json!({"confirm": format!("{} ", u.email)}),
    ] {
        let r = del(u.key.clone(), body).await;
        assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
        assert!(r.body["errors"]["confirm"].is_array(), "{}", r.text);
    }
    let restricted =
        app.post("/api/keys", &u.key, json!({"name": "r", "scope": "restricted"})).await.body["data"]["api_key"]
            .as_str()
            .unwrap()
            .to_owned();
    assert_refused(
        &del(restricted.clone(), json!({"confirm": u.email})).await,
        StatusCode::FORBIDDEN,
        "insufficient_scope",
    );
    // Still all there.
    assert_eq!(app.get("/api/auth/me", &u.key).await.status, StatusCode::OK);
    assert_eq!(del(u.key.clone(), json!({"confirm": u.email})).await.status, StatusCode::NO_CONTENT);
    assert_refused(&app.get("/api/auth/me", &restricted).await, StatusCode::UNAUTHORIZED, "api_key_invalid");
    // Deleting what is already gone is done (the rule function others call).
    acs::core::account::delete_account(app.state(), u.id.parse().unwrap()).await.unwrap();
}

async fn a_deletion_cut_short_is_finished(b: Backend) {
    let app = crate::common::spawn(b).await;
    let u = app.user().await;
    let other = app.user().await;
    let now = acs::core::time_fmt::now_micros();
    // Marked nine minutes ago: still in hand; eleven: its server died, the worker finishes it.
    for (who, ago) in [(&other, 9), (&u, 11)] {
        sqlx::query("UPDATE accounts SET deleting_at = $1 WHERE id = $2")
            .bind(now - ago * 60 * 1_000_000)
            .bind(who.id.clone())
            .execute(&app.state().db.pool)
            .await
            .unwrap();
    }
    acs::core::account::delete::finish_stale(app.state()).await.unwrap();
    assert_refused(&app.get("/api/auth/me", &u.key).await, StatusCode::UNAUTHORIZED, "api_key_invalid");
    assert!(rows_holding(&app, std::slice::from_ref(&u.id)).await.is_empty());
    assert_eq!(app.get("/api/auth/me", &other.key).await.status, StatusCode::OK);
}

/// Asks for an export and waits until it settled.
async fn finished_export(app: &TestApp, u: &User) -> Value {
    let r = app.post("/api/account/exports", &u.key, json!({})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(r.body["data"]["status"], "pending");
    assert_eq!(r.body["data"]["downloadable"], false);
    let id = r.body["data"]["id"].as_str().unwrap().to_owned();
    for _ in 0..600 {
        let r = app.get(&format!("/api/account/exports/{id}"), &u.key).await;
        if r.body["data"]["status"] != "pending" {
            return r.body["data"].clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the export stayed pending");
}

async fn download(app: &TestApp, key: &str, id: &str) -> (StatusCode, reqwest::header::HeaderMap, Vec<u8>) {
    let res =
        app.http.get(format!("{}/api/account/exports/{id}/download", app.base)).bearer_auth(key).send().await.unwrap();
    let (status, headers) = (res.status(), res.headers().clone());
    (status, headers, res.bytes().await.unwrap().to_vec())
}

async fn export_holds_the_account_without_secrets(b: Backend) {
    let app = scripted_app(b, &[]).await;
    let u = app.user().await;
    let made = populate(&app, &u, "x").await;
    app.state().features.set("brokerage", true);
    let vault = app.get("/api/vaults", &u.key).await.body["data"][0]["id"].clone();
    let binding = json!({"name": "gh", "host": "api.github.com", "header": "authorization",
        "template": "Bearer {value}", "source": {"vault_id": vault, "key": "VAULT_TOKEN"}});
    assert_eq!(app.post("/api/secret-bindings", &u.key, binding).await.status, StatusCode::CREATED);
    let e = finished_export(&app, &u).await;
    assert_eq!(e["status"], "completed", "{e}");
    assert_eq!(e["downloadable"], true);
    let id = e["id"].as_str().unwrap();
    let (status, headers, bytes) = download(&app, &u.key, id).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(bytes.len() as i64, e["byte_size"].as_i64().unwrap());
    // No secret value, key, credential or webhook signing secret, anywhere in the bytes.
    let text = String::from_utf8(bytes.clone()).unwrap();
    for secret in &made.secrets {
        assert!(!text.contains(secret.as_str()), "the export holds a secret: {secret}");
    }
    for word in ["ciphertext", "key_hash", "password_hash", "wrapped_key"] {
        assert!(!text.contains(word), "{word} in the export");
    }
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(doc["account"]["id"], u.id.as_str());
    assert_eq!(doc["account"]["email"], u.email.as_str());
    // The two keys made, and the machine's callback key; each with its prefix, none with its value.
    let scopes: Vec<&str> = doc["keys"].as_array().unwrap().iter().filter_map(|k| k["scope"].as_str()).collect();
    assert_eq!(scopes.iter().filter(|s| **s != "sandbox").count(), 2, "{scopes:?}");
    assert!(doc["keys"].as_array().unwrap().iter().all(|k| k["prefix"].is_string()));
    assert_eq!(doc["oauth_clients"][0]["redirect_uris"], json!(["https://x.example/cb"]));
    let agent = &doc["agents"][0];
    assert_eq!(agent["runtime"], "acp");
    assert_eq!(agent["versions"].as_array().unwrap().len(), 2, "{agent}");
    assert_eq!(doc["environments"][0]["secrets"][0]["key"], "ENV_TOKEN");
    assert_eq!(doc["vaults"][0]["secrets"][0]["key"], "VAULT_TOKEN");
    let binding = &doc["secret_bindings"][0];
    assert_eq!(
        (&binding["name"], &binding["source_key"], &binding["source_id"]),
        (&json!("gh"), &json!("VAULT_TOKEN"), &vault)
    );
    let sets = doc["inference_credential_sets"].as_array().unwrap();
    assert!(sets.iter().any(|s| s["name"] == "work" && s["providers"] == json!(["anthropic_api_key"])), "{sets:?}");
    assert_eq!(doc["webhooks"][0]["url"], "https://hooks.example.com/x");
    assert_eq!(doc["team"][0]["schedules"][0]["cron"], "@yearly");
    let conv = doc["conversations"].as_array().unwrap().iter().find(|c| c["id"] == made.idle.0.to_string()).unwrap();
    let turn = &conv["turns"][0];
    assert_eq!(turn["status"], "done", "{turn}");
    assert!(turn["inference"].is_object(), "each turn carries its inference: {turn}");
    let events = conv["events"].as_array().unwrap();
    assert!(events.iter().any(|e| e["kind"] == "output" && e["data"].as_str().unwrap().contains("hello x")));
    let actions: Vec<&str> = doc["audit"].as_array().unwrap().iter().filter_map(|a| a["action"].as_str()).collect();
    assert!(actions.contains(&"account.registered") && actions.contains(&"account.export_requested"), "{actions:?}");
    // Listed, and nobody else's.
    let r = app.get("/api/account/exports", &u.key).await;
    assert_eq!(r.body["data"][0]["id"], id);
    let other = app.user().await;
    assert_error(&app.get(&format!("/api/account/exports/{id}"), &other.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_eq!(download(&app, &other.key, id).await.0, StatusCode::NOT_FOUND);
    assert!(app.get("/api/account/exports", &other.key).await.body["data"].as_array().unwrap().is_empty());
    // Full-scope keys only: an export is everything.
    let restricted =
        app.post("/api/keys", &u.key, json!({"name": "r", "scope": "restricted"})).await.body["data"]["api_key"]
            .as_str()
            .unwrap()
            .to_owned();
    let r = app.post("/api/account/exports", &restricted, json!({})).await;
    assert_refused(&r, StatusCode::FORBIDDEN, "insufficient_scope");
}

async fn export_download_follows_its_state(b: Backend) {
    let app = crate::common::spawn_with(b, &[("exports.ttl_hours", json!(2))]).await;
    let u = app.user().await;
    let pool = &app.state().db.pool;
    let now = acs::core::time_fmt::now_micros();
    // Held by a worker (a lease far ahead), so still pending: not ready.
    let held = Uuid::now_v7().to_string();
    sqlx::query(
        "INSERT INTO account_exports (id, account_id, status, claim, lease_until, created_at, updated_at) \
         VALUES ($1, $2, 'pending', 'elsewhere', $3, $4, $4)",
    )
    .bind(held.clone())
    .bind(u.id.clone())
    .bind(now + 3_600_000_000)
    .bind(now)
    .execute(pool)
    .await
    .unwrap();
    let r = app.get(&format!("/api/account/exports/{held}/download"), &u.key).await;
    assert_error(&r, StatusCode::NOT_FOUND, "export_not_ready");
    sqlx::query("UPDATE account_exports SET status = 'failed', error = 'x' WHERE id = $1")
        .bind(held.clone())
        .execute(pool)
        .await
        .unwrap();
    assert_error(
        &app.get(&format!("/api/account/exports/{held}/download"), &u.key).await,
        StatusCode::NOT_FOUND,
        "export_not_ready",
    );

    let e = finished_export(&app, &u).await;
    let id = e["id"].as_str().unwrap().to_owned();
    // Expiry: exports.ttl_hours (2 here; 24 by default) after it completed.
    let expires =
        time::OffsetDateTime::parse(e["expires_at"].as_str().unwrap(), &time::format_description::well_known::Rfc3339)
            .unwrap();
    let left = expires - time::OffsetDateTime::now_utc();
    assert!(left > time::Duration::hours(1) && left <= time::Duration::hours(2), "{left}");
    let (status, _, here) = download(&app, &u.key, &id).await;
    assert_eq!(status, StatusCode::OK);
    // Any replica serves the document: it lives in the database.
    let replica = app.replica().await;
    let res = app
        .http
        .get(format!("http://{}/api/account/exports/{id}/download", replica.addr))
        .bearer_auth(&u.key)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.bytes().await.unwrap().to_vec() == here, "the replica serves the same bytes");
    replica.shutdown().await.unwrap();
    serde_json::from_slice::<Value>(&here).unwrap();
    sqlx::query("UPDATE account_exports SET expires_at = $1 WHERE id = $2")
        .bind(now - 1)
        .bind(id.clone())
        .execute(pool)
        .await
        .unwrap();
    let r = app.get(&format!("/api/account/exports/{id}"), &u.key).await;
    assert_eq!(r.body["data"]["downloadable"], false);
    assert_error(
        &app.get(&format!("/api/account/exports/{id}/download"), &u.key).await,
        StatusCode::GONE,
        "export_expired",
    );
    // The sweep drops the document and keeps the row answering 410.
    acs::core::account::export::sweep(app.state()).await.unwrap();
    let chunks: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM account_export_chunks WHERE export_id = $1")
        .bind(id.clone())
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(chunks, 0);
    assert_error(
        &app.get(&format!("/api/account/exports/{id}/download"), &u.key).await,
        StatusCode::GONE,
        "export_expired",
    );
    assert_error(
        &app.get(&format!("/api/account/exports/{}", Uuid::now_v7()), &u.key).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
}

async fn onboarding_keeps_the_first_completion(b: Backend) {
    let app = crate::common::spawn(b).await;
    let u = app.user().await;
    let r = app.get("/api/account/onboarding", &u.key).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body, json!({"data": {"completed": false, "completed_at": null}}));
    let first = app.post("/api/account/onboarding", &u.key, json!({})).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);
    assert_eq!(first.body["data"]["completed"], true);
    assert!(first.body["data"]["completed_at"].is_string());
    tokio::time::sleep(Duration::from_millis(5)).await;
    let again = app.post("/api/account/onboarding", &u.key, json!({})).await;
    assert_eq!(again.body, first.body);
    assert_eq!(app.get("/api/account/onboarding", &u.key).await.body, first.body);
    let other = app.user().await;
    assert_eq!(app.get("/api/account/onboarding", &other.key).await.body["data"]["completed"], false);
}

async fn put_raw(app: &TestApp, key: &str, content_type: &str, body: Vec<u8>) -> Resp {
    let res = app
        .http
        .put(format!("{}/api/account/avatar", app.base))
        .bearer_auth(key)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    crate::common::into_resp(res).await
}

async fn put_json(app: &TestApp, key: &str, body: Value) -> Resp {
    app.request(Method::PUT, "/api/account/avatar", Some(key), Some(body)).await
}

#[track_caller]
fn refused_on(r: &Resp, field: &str) {
    assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert!(r.body["errors"][field].is_array(), "{}", r.text);
}

async fn avatar_takes_images_up_to_ten_megabytes(b: Backend) {
    use base64::Engine;
    let b64 = |n: usize| base64::engine::general_purpose::STANDARD.encode(vec![0x5au8; n]);
    let app = crate::common::spawn(b).await;
    let u = app.user().await;
    assert_error(&app.get("/api/account/avatar", &u.key).await, StatusCode::NOT_FOUND, "not_found");
    // Raw bytes: exactly 10 MB is taken, one byte more refused.
    let mut image = vec![0x89u8; TEN_MB];
    image[..4].copy_from_slice(b"\x89PNG");
    assert_eq!(put_raw(&app, &u.key, "image/png", image.clone()).await.status, StatusCode::NO_CONTENT);
    let res = app.http.get(format!("{}/api/account/avatar", app.base)).bearer_auth(&u.key).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "image/png");
    assert!(res.bytes().await.unwrap().to_vec() == image, "the same bytes come back");
    refused_on(&put_raw(&app, &u.key, "image/png", vec![1; TEN_MB + 1]).await, "data");
    refused_on(&put_raw(&app, &u.key, "image/png", Vec::new()).await, "data");
    refused_on(&put_raw(&app, &u.key, "image/bmp", vec![1; 10]).await, "media_type");
    assert_error(
        &put_raw(&app, &u.key, "text/plain", vec![1; 10]).await,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
    );
    // JSON: the same limit on the decoded bytes.
    let r = put_json(&app, &u.key, json!({"data": b64(TEN_MB), "media_type": "image/webp"})).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    let res = app.http.get(format!("{}/api/account/avatar", app.base)).bearer_auth(&u.key).send().await.unwrap();
    assert_eq!(res.headers()["content-type"], "image/webp");
    assert_eq!(res.bytes().await.unwrap().len(), TEN_MB);
    refused_on(&put_json(&app, &u.key, json!({"data": b64(TEN_MB + 1), "media_type": "image/webp"})).await, "data");
    refused_on(&put_json(&app, &u.key, json!({"data": "", "media_type": "image/gif"})).await, "data");
    refused_on(&put_json(&app, &u.key, json!({"data": "@@not base64@@", "media_type": "image/gif"})).await, "data");
    refused_on(&put_json(&app, &u.key, json!({"data": "aGk=", "media_type": "image/tiff"})).await, "media_type");
    refused_on(&put_json(&app, &u.key, json!({"media_type": "image/gif"})).await, "data");
    // Another account sees none; removing it is 204 and leaves 404.
    let other = app.user().await;
    assert_error(&app.get("/api/account/avatar", &other.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_eq!(app.delete("/api/account/avatar", &u.key).await.status, StatusCode::NO_CONTENT);
    assert_error(&app.get("/api/account/avatar", &u.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_eq!(app.delete("/api/account/avatar", &u.key).await.status, StatusCode::NO_CONTENT);
}
