//! The admin extension (DESIGN 9.4): who is an operator, and what one does
//! to accounts, credits, comps, OAuth clients and flags.
#![cfg(feature = "admin")]

use std::process::Command;

use acs_testkit::{Backend, TestApp, User, assert_error, assert_refused, spawn_with};
use reqwest::StatusCode;
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
    let mut c = Command::new(env!("CARGO_BIN_EXE_acs"));
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("ACS_")) {
        c.env_remove(k);
    }
    c.envs(app.config_env()).arg("admin").arg("key").args(args);
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
    assert_eq!(admin, Some(json!({"name": "admin", "enabled": true})), "{}", flags.text);
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

acs_testkit::both!(
    operators_are_listed_accounts_or_hold_operator_keys,
    operators_search_comp_and_grant,
    a_suspended_account_is_refused_and_its_turn_interrupted,
    the_flag_off_closes_the_admin_routes,
);
