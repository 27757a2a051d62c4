//! The admin extension (DESIGN 9.4): who is an operator, and what one does
//! to accounts, credits, comps, OAuth clients and flags.
#![cfg(feature = "admin")]

use std::process::Command;

use acs_testkit::{Backend, TestApp, User, assert_error, assert_refused, spawn_with};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const OPERATOR: &str = "ops@example.com";

async fn app(b: Backend) -> TestApp {
    spawn_with(b, &[("admin.operators", json!(["Ops@Example.com"]))]).await
}

/// The operator account of `admin.operators`, signed in.
async fn operator(app: &TestApp) -> User {
    let password = "correct horse battery";
    let registered = app.register(OPERATOR, password).await;
    assert_eq!(registered.status, StatusCode::CREATED, "{}", registered.text);
    let r = app.login(OPERATOR, password).await;
    User {
        id: registered.body["data"]["user_id"].as_str().unwrap().to_owned(),
        email: OPERATOR.into(),
        password: password.into(),
        key: r.body["data"]["api_key"].as_str().unwrap().to_owned(),
    }
}

/// `acs admin key ...` on the app's database: (exit code, stdout, stderr).
fn admin_cli(app: &TestApp, args: &[&str]) -> (Option<i32>, String, String) {
    acs_admin(app, &[&["key"], args].concat())
}

/// `acs admin ...` on the app's database: (exit code, stdout, stderr).
fn acs_admin(app: &TestApp, args: &[&str]) -> (Option<i32>, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_acs"));
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("ACS_")) {
        c.env_remove(k);
    }
    c.envs(app.config_env()).arg("admin").args(args);
    let out = c.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn operators_are_listed_accounts_or_hold_operator_keys(b: Backend) {
    let app = app(b).await;
    let user = app.user().await;
    let ops = operator(&app).await;

    assert_eq!(
        app.http.get(format!("{}/api/admin/accounts", app.base)).send().await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    assert_refused(&app.get("/api/admin/accounts", &user.key).await, StatusCode::FORBIDDEN, "insufficient_scope");
    assert_eq!(
        app.get("/api/admin/accounts", &ops.key).await.status,
        StatusCode::OK,
        "listed in admin.operators, any case"
    );
    // Only a full-scope key of an operator account acts as the operator.
    let narrow = app.post("/api/keys", &ops.key, json!({"name": "narrow", "scope": "restricted"})).await;
    let narrow = narrow.body["data"]["api_key"].as_str().unwrap().to_owned();
    assert_refused(&app.get("/api/admin/accounts", &narrow).await, StatusCode::FORBIDDEN, "insufficient_scope");

    // An operator key: minted on the database, shown once; no account's key.
    let (code, key, err) = admin_cli(&app, &["create", "--name", "on-call"]);
    assert_eq!(code, Some(0), "{err}");
    let key = key.trim().to_owned();
    assert!(key.starts_with("acs_op_"), "{key}");
    assert!(err.contains("shown only now"), "{err}");
    assert_eq!(app.get("/api/admin/accounts", &key).await.status, StatusCode::OK);
    assert_eq!(app.get("/api/agents", &key).await.status, StatusCode::UNAUTHORIZED, "not an account's key");
    assert_eq!(app.get("/api/auth/me", &key).await.status, StatusCode::UNAUTHORIZED);
    let (_, listing, _) = admin_cli(&app, &["list"]);
    assert!(listing.contains("on-call") && listing.contains("live") && !listing.contains(&key), "{listing}");
    let id = listing.split_whitespace().next().unwrap().to_owned();
    let (code, _, err) = admin_cli(&app, &["revoke", &id]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(app.get("/api/admin/accounts", &key).await.status, StatusCode::UNAUTHORIZED, "revoked");
    let (code, _, err) = admin_cli(&app, &["revoke", &id]);
    assert_eq!(code, Some(1), "a second revoke finds no live key: {err}");
    let (code, _, _) = admin_cli(&app, &["create", "--name", " "]);
    assert_ne!(code, Some(0), "a blank name is refused");
}

async fn operators_search_comp_and_grant(b: Backend) {
    let app = app(b).await;
    let ops = operator(&app).await;
    let users = [app.user().await, app.user().await, app.user().await];

    // Search by part of the email, any case; pages newest first.
    let part = users[1].email[..8].to_uppercase();
    let r = app.get(&format!("/api/admin/accounts?q={part}"), &ops.key).await;
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1, "{}", r.text);
    assert_eq!(r.body["data"][0]["email"], users[1].email.as_str());
    let r = app.get("/api/admin/accounts?q=%25", &ops.key).await;
    assert!(r.body["data"].as_array().unwrap().is_empty(), "% is matched literally: {}", r.text);
    let first = app.get("/api/admin/accounts?limit=2", &ops.key).await;
    assert_eq!(first.body["meta"]["has_more"], true);
    assert_eq!(first.body["data"][0]["email"], users[2].email.as_str(), "newest first");
    let cursor = first.body["meta"]["next_cursor"].as_str().unwrap();
    let second = app.get(&format!("/api/admin/accounts?limit=2&cursor={cursor}"), &ops.key).await;
    assert_eq!(second.body["data"].as_array().unwrap().len(), 2, "{}", second.text);
    assert_eq!(second.body["meta"]["has_more"], false);
    assert!(second.body["meta"]["next_cursor"].is_null());
    for bad in ["0", "101", "x"] {
        let r = app.get(&format!("/api/admin/accounts?limit={bad}"), &ops.key).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "limit={bad}: {}", r.text);
    }
    assert_eq!(app.get("/api/admin/accounts?limit=100", &ops.key).await.status, StatusCode::OK);

    let target = &users[0];
    let path = format!("/api/admin/accounts/{}", target.id);
    let detail = app.get(&path, &ops.key).await;
    assert_eq!(detail.status, StatusCode::OK, "{}", detail.text);
    assert_eq!(detail.body["data"]["email"], target.email.as_str());
    assert_eq!(detail.body["data"]["api_keys"], 1);
    let before = detail.body["data"]["credit_balance"].as_i64().unwrap();

    // A comp, then a grant with its reason: both the operator's, on the ledger and in the account's audit log.
    let r = app.post(&format!("{path}/comp"), &ops.key, json!({"comped": true})).await;
    assert_eq!(r.body["data"]["comped"], true, "{}", r.text);
    let r = app
        .post(&format!("{path}/credits"), &ops.key, json!({"amount": 500, "reason": "goodwill for the outage"}))
        .await;
    assert_eq!(r.body["data"]["credit_balance"], before + 500, "{}", r.text);
    let detail = app.get(&path, &ops.key).await;
    let row = &detail.body["data"]["ledger"][0];
    assert_eq!((row["amount"].as_i64(), row["reason"].as_str()), (Some(500), Some("grant")));
    assert_eq!(row["actor_type"], "operator");
    assert_eq!(row["actor_id"], ops.id.as_str());
    assert_eq!(row["note"], "goodwill for the outage");
    let audit = app.get("/api/audit", &target.key).await;
    let by_operator: Vec<&Value> =
        audit.body["data"].as_array().unwrap().iter().filter(|e| e["actor"]["type"] == "operator").collect();
    let actions: Vec<&str> = by_operator.iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert!(actions.contains(&"credits.comped") && actions.contains(&"credits.granted"), "{}", audit.text);

    // Limits of a grant, at their boundary.
    for (amount, status) in [(0, 422), (1_000_000_001, 422), (-1_000_000_001, 422), (1_000_000_000, 200)] {
        let r = app.post(&format!("{path}/credits"), &ops.key, json!({"amount": amount})).await;
        assert_eq!(r.status.as_u16(), status, "{amount}: {}", r.text);
    }
    let long = "x".repeat(501);
    assert_error(
        &app.post(&format!("{path}/credits"), &ops.key, json!({"amount": 1, "reason": long})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_failed",
    );
    assert_error(
        &app.post(&format!("{path}/credits"), &ops.key, json!({"amount": 1, "actor": "me"})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_failed",
    );
    let nobody = format!("/api/admin/accounts/{}", uuid::Uuid::now_v7());
    assert_eq!(app.get(&nobody, &ops.key).await.status, StatusCode::NOT_FOUND);
    assert_eq!(
        app.post(&format!("{nobody}/comp"), &ops.key, json!({"comped": true})).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.post(&format!("{nobody}/credits"), &ops.key, json!({"amount": 5})).await.status,
        StatusCode::NOT_FOUND
    );

    // Publishing an account's OAuth client.
    let client = app
        .post(
            "/api/oauth/clients",
            &target.key,
            json!({"name": "notes", "redirect_uris": ["https://notes.example/cb"]}),
        )
        .await;
    let client_id = client.body["data"]["id"].as_str().unwrap().to_owned();
    for _ in 0..2 {
        let r = app.post(&format!("/api/admin/oauth-clients/{client_id}/publish"), &ops.key, json!({})).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    }
    let r = app.get(&format!("/api/oauth/clients/{client_id}"), &target.key).await;
    assert!(r.body["data"]["published_at"].is_string(), "{}", r.text);
    let r = app.post(&format!("/api/admin/oauth-clients/{}/publish", uuid::Uuid::now_v7()), &ops.key, json!({})).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);

    let flags = app.get("/api/admin/features", &ops.key).await;
    let admin = flags.body["data"].as_array().unwrap().iter().find(|f| f["name"] == "admin").cloned();
    assert_eq!(
        admin,
        Some(json!({"name": "admin", "enabled": true, "configured": true, "updated_at": null, "updated_by": null})),
        "{}",
        flags.text
    );
}

async fn a_suspended_account_is_refused_and_its_turn_interrupted(b: Backend) {
    use acs_testkit::{SCRIPTED_AGENT, acp_agent, create_conversation, finished_turns, scripted_app};
    let app = scripted_app(b, &[("admin.operators", json!([OPERATOR]))]).await;
    let ops = operator(&app).await;
    let u = app.user().await;
    let agent = acp_agent(&app, &u, SCRIPTED_AGENT, json!({})).await;
    let conv = create_conversation(&app, &u, json!({"agent_id": agent, "prompt": "say: working\nsleep: 30000"})).await;
    let conv_id: uuid::Uuid = conv["id"].as_str().unwrap().parse().unwrap();
    // The agent has the prompt once it said something.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let said: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM events WHERE conversation_id = $1 AND stream = 'stdout' AND kind <> 'stage'",
        )
        .bind(conv_id.to_string())
        .fetch_one(&app.state().db.pool)
        .await
        .unwrap_or(0);
        if said > 0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the agent never answered");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    let path = format!("/api/admin/accounts/{}", u.id);
    let r = app.post(&format!("{path}/suspend"), &ops.key, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert!(r.body["data"]["suspended_at"].is_string());
    assert_error(&app.get("/api/agents", &u.key).await, StatusCode::FORBIDDEN, "account_suspended");
    assert_error(&app.login(&u.email, &u.password).await, StatusCode::FORBIDDEN, "account_suspended");
    let turns = finished_turns(&app, conv_id, 1).await;
    assert_eq!(turns[0].status, "interrupted", "{:?}", turns[0]);
    let again = app.post(&format!("{path}/suspend"), &ops.key, json!({})).await;
    assert_eq!(again.body["data"]["suspended_at"], r.body["data"]["suspended_at"], "suspending again changes nothing");

    // Nothing was deleted: back in, everything is there.
    let r = app.post(&format!("{path}/unsuspend"), &ops.key, json!({})).await;
    assert!(r.body["data"]["suspended_at"].is_null(), "{}", r.text);
    let agents = app.get("/api/agents", &u.key).await;
    assert_eq!(agents.status, StatusCode::OK, "{}", agents.text);
    assert_eq!(agents.body["data"][0]["id"], agent.to_string());
    let audit = app.get("/api/audit", &u.key).await;
    for action in ["account.suspended", "account.unsuspended"] {
        let row = audit.body["data"].as_array().unwrap().iter().find(|e| e["action"] == action).cloned();
        assert_eq!(row.map(|e| e["actor"]["type"].clone()), Some(json!("operator")), "{action}: {}", audit.text);
    }
    let nobody = format!("/api/admin/accounts/{}/suspend", uuid::Uuid::now_v7());
    assert_eq!(app.post(&nobody, &ops.key, json!({})).await.status, StatusCode::NOT_FOUND);
}

async fn the_flag_off_closes_the_admin_routes(b: Backend) {
    let app = spawn_with(b, &[("admin.operators", json!([OPERATOR])), ("features.admin", json!(false))]).await;
    let ops = operator(&app).await;
    assert_error(&app.get("/api/admin/accounts", &ops.key).await, StatusCode::NOT_FOUND, "admin_not_enabled");
}

/// Polls `path` on `base` until it answers `status`; returns how long that took.
async fn until_status(app: &TestApp, base: &str, path: &str, key: &str, status: StatusCode) -> std::time::Duration {
    let started = std::time::Instant::now();
    loop {
        let now = app.request_at(base, Method::GET, path, Some(key), None).await;
        if now.status == status {
            return started.elapsed();
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{path} still {}: {}", now.status, now.text);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

async fn runtime_flags_change_on_every_replica(b: Backend) {
    let app = app(b).await;
    let ops = operator(&app).await;
    let user = app.user().await;
    let replica = app.replica().await;
    let there = format!("http://{}", replica.addr);
    assert_eq!(
        app.request_at(&there, Method::GET, "/api/webhooks", Some(&user.key), None).await.status,
        StatusCode::OK
    );
    let put = |key: String, name: &'static str, body: Value| {
        let app = &app;
        async move { app.request(Method::PUT, &format!("/api/admin/features/{name}"), Some(&key), Some(body)).await }
    };

    // Refusals first: no operator, an unknown flag, a bad body, the admin flag itself.
    let off = json!({"enabled": false});
    assert_refused(&put(user.key.clone(), "webhooks", off.clone()).await, StatusCode::FORBIDDEN, "insufficient_scope");
    assert_eq!(put(ops.key.clone(), "nope", off.clone()).await.status, StatusCode::NOT_FOUND);
    assert_error(
        &put(ops.key.clone(), "webhooks", json!({})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_failed",
    );
    assert_error(
        &put(ops.key.clone(), "admin", off.clone()).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_failed",
    );

    let r = put(ops.key.clone(), "webhooks", off).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["enabled"], false);
    assert_eq!(r.body["data"]["configured"], true);
    assert!(r.body["data"]["updated_by"].as_str().unwrap().starts_with("operator:"), "{}", r.text);
    // At once here; on the other replica within two seconds.
    assert_error(&app.get("/api/webhooks", &user.key).await, StatusCode::NOT_FOUND, "webhooks_not_enabled");
    let waited = until_status(&app, &there, "/api/webhooks", &user.key, StatusCode::NOT_FOUND).await;
    assert!(waited < std::time::Duration::from_secs(2), "the replica followed after {waited:?}");
    let me = app.get("/api/auth/me", &user.key).await;
    assert_eq!(me.status, StatusCode::OK);

    // The command line changes it too, for every replica, and can go back to the configuration.
    let (code, out, err) = acs_admin(&app, &["features", "set", "webhooks", "default"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("webhooks is on"), "{out}");
    until_status(&app, &app.base, "/api/webhooks", &user.key, StatusCode::OK).await;
    until_status(&app, &there, "/api/webhooks", &user.key, StatusCode::OK).await;
    let (_, listing, _) = acs_admin(&app, &["features", "list"]);
    assert!(
        listing.lines().any(|l| l.starts_with("webhooks") && l.contains("on") && l.contains("configuration")),
        "{listing}"
    );
    let (code, _, err) = acs_admin(&app, &["features", "set", "nope", "on"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("no flag is named"), "{err}");

    // Every change is kept, with who made it.
    let changes: Vec<(String, Option<i64>, String)> =
        sqlx::query_as("SELECT name, enabled, actor FROM feature_flag_changes ORDER BY id")
            .fetch_all(&app.state().db.pool)
            .await
            .unwrap();
    assert_eq!(changes.len(), 2, "{changes:?}");
    assert_eq!((changes[0].1, changes[1].1), (Some(0), None));
    assert!(changes[0].2.starts_with("operator:") && changes[1].2 == "cli", "{changes:?}");
    replica.shutdown().await.unwrap();
}

async fn operators_see_the_fleet_and_triage_reports(b: Backend) {
    use acs_testkit::{SCRIPTED_AGENT, acp_agent, create_conversation, finished_turns, scripted_app};
    let app = scripted_app(b, &[("admin.operators", json!([OPERATOR]))]).await;
    let ops = operator(&app).await;
    let u = app.user().await;
    let agent = acp_agent(&app, &u, SCRIPTED_AGENT, json!({})).await;
    let conv = create_conversation(&app, &u, json!({"agent_id": agent, "prompt": "say: hi"})).await;
    finished_turns(&app, conv["id"].as_str().unwrap().parse().unwrap(), 1).await;

    let fleet = app.get("/api/admin/fleet", &ops.key).await;
    assert_eq!(fleet.status, StatusCode::OK, "{}", fleet.text);
    let machines = fleet.body["data"]["machines"].as_array().unwrap();
    assert!(machines.iter().any(|m| m["provider"] == "local" && m["count"].as_i64() >= Some(1)), "{}", fleet.text);
    assert_eq!(fleet.body["data"]["queue"]["depth"], 0);
    let replicas = fleet.body["data"]["replicas"].as_array().unwrap();
    assert!(replicas.iter().any(|r| r["alive"] == true && r["machines"].as_i64() >= Some(1)), "{}", fleet.text);
    assert_refused(&app.get("/api/admin/fleet", &u.key).await, StatusCode::FORBIDDEN, "insufficient_scope");
    // One account's machines and usage.
    let detail = app.get(&format!("/api/admin/accounts/{}", u.id), &ops.key).await;
    assert_eq!(detail.status, StatusCode::OK, "{}", detail.text);
    assert_eq!(detail.body["data"]["usage"]["conversations"], 1, "{}", detail.text);
    assert_eq!(detail.body["data"]["usage"]["conversations_30d"], 1);
    assert!(detail.body["data"]["usage"]["credits_spent_30d"].is_i64(), "{}", detail.text);
    let mine = detail.body["data"]["machines"].as_array().unwrap();
    assert!(mine.iter().any(|m| m["provider"] == "local" && m["count"] == 1), "{}", detail.text);
    let theirs = app.get(&format!("/api/admin/accounts/{}", ops.id), &ops.key).await;
    assert_eq!(theirs.body["data"]["machines"], json!([]), "{}", theirs.text);

    // Reports of every account, newest first, filtered and paged.
    for (category, message) in [("bug", "first"), ("idea", "second"), ("bug", "third")] {
        let r = app.post("/api/support/reports", &u.key, json!({"category": category, "message": message})).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    }
    let page = app.get("/api/admin/support/reports?category=bug&limit=1", &ops.key).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert_eq!(page.body["data"][0]["message"], "third");
    assert_eq!(page.body["data"][0]["account_email"], u.email.as_str());
    assert_eq!(page.body["meta"]["has_more"], true);
    let cursor = page.body["meta"]["next_cursor"].as_str().unwrap();
    let next = app.get(&format!("/api/admin/support/reports?category=bug&limit=1&cursor={cursor}"), &ops.key).await;
    assert_eq!(next.body["data"][0]["message"], "first", "{}", next.text);
    assert_eq!(next.body["meta"]["has_more"], false);
    let new = app.get("/api/admin/support/reports?status=new", &ops.key).await;
    assert_eq!(new.body["data"].as_array().unwrap().len(), 3, "{}", new.text);
    for bad in ["limit=0", "limit=101", "status=lost", "category=rant"] {
        let r = app.get(&format!("/api/admin/support/reports?{bad}"), &ops.key).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {}", r.text);
    }
    assert_refused(&app.get("/api/admin/support/reports", &u.key).await, StatusCode::FORBIDDEN, "insufficient_scope");

    // Only a failed report is sent again.
    let id = new.body["data"][0]["id"].as_str().unwrap().to_owned();
    let retry = format!("/api/admin/support/reports/{id}/retry");
    assert_error(&app.post(&retry, &ops.key, json!({})).await, StatusCode::CONFLICT, "report_not_failed");
    sqlx::query("UPDATE support_reports SET status = 'failed', next_attempt_at = NULL WHERE id = $1")
        .bind(&id)
        .execute(&app.state().db.pool)
        .await
        .unwrap();
    let r = app.post(&retry, &ops.key, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let due: Option<i64> = sqlx::query_scalar("SELECT next_attempt_at FROM support_reports WHERE id = $1")
        .bind(&id)
        .fetch_one(&app.state().db.pool)
        .await
        .unwrap();
    assert!(due.is_some(), "queued for forwarding again");
    let nobody = format!("/api/admin/support/reports/{}/retry", uuid::Uuid::now_v7());
    assert_eq!(app.post(&nobody, &ops.key, json!({})).await.status, StatusCode::NOT_FOUND);
}

async fn the_command_line_searches_and_suspends(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let (code, out, err) = acs_admin(&app, &["accounts", "list", "--q", &u.email.to_uppercase()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(&u.id) && out.lines().count() == 1, "{out}");
    let (code, out, err) = acs_admin(&app, &["accounts", "suspend", &u.email]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("suspended"), "{out}");
    assert!(acs_admin(&app, &["accounts", "suspend", &u.email]).1.contains("already"));
    assert!(acs_admin(&app, &["accounts", "list"]).1.contains("suspended"));
    assert_error(&app.login(&u.email, &u.password).await, StatusCode::FORBIDDEN, "account_suspended");
    let (code, _, err) = acs_admin(&app, &["accounts", "unsuspend", &u.email]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(app.login(&u.email, &u.password).await.status, StatusCode::CREATED, "a session again");
    let (code, _, err) = acs_admin(&app, &["accounts", "suspend", "nobody@example.com"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("no account has the email"), "{err}");
}

acs_testkit::both!(
    runtime_flags_change_on_every_replica,
    operators_see_the_fleet_and_triage_reports,
    the_command_line_searches_and_suspends,
    operators_are_listed_accounts_or_hold_operator_keys,
    operators_search_comp_and_grant,
    a_suspended_account_is_refused_and_its_turn_interrupted,
    the_flag_off_closes_the_admin_routes,
);
