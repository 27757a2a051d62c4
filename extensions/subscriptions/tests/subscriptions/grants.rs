//! A linked subscription: rename, disconnect, delete (and the credential
//! sets naming it), exhaustion through `GrantSource::usable`, refresh through
//! `attach`, revocation, the idle renewal, export and account deletion.

use std::time::Duration;

use acs_core::extension::GrantUse;
use reqwest::StatusCode;
use serde_json::json;

use crate::both;
use crate::common::*;

both!(
    rename_disconnect_and_delete,
    exhaustion_is_checked_with_the_vendor,
    attach_refreshes_and_a_refused_refresh_revokes,
    idle_subscriptions_are_renewed,
    an_export_lists_subscriptions_without_tokens
);

async fn rename_disconnect_and_delete(b: Backend) {
    let (vendor, app) = setup(b).await;
    let u = app.user().await;
    let s = link(&app, &vendor, &u, "Work", "alice").await;
    let gid = s["id"].as_str().unwrap();
    let path = format!("{BASE}/{gid}");

    let r = patch(&app, &path, &u.key, json!({"name": "  Team  "})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["name"], "Team");
    let r = patch(&app, &path, &u.key, json!({"name": ""})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    link(&app, &vendor, &u, "Other", "bob").await;
    let r = patch(&app, &path, &u.key, json!({"name": "Other"})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");

    // Only a disconnected subscription may go.
    let r = app.delete(&path, &u.key).await;
    assert_error(&r, StatusCode::CONFLICT, "openai_grant_not_disconnected");
    let r = app.post(&format!("{path}/disconnect"), &u.key, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["status"], "disconnected");
    let tokens: (Option<String>, Option<String>) =
        sqlx::query_as("SELECT sealed_access_token, sealed_refresh_token FROM openai_subscriptions WHERE id = $1")
            .bind(gid)
            .fetch_one(&app.state().db.pool)
            .await
            .unwrap();
    assert_eq!(tokens, (None, None), "tokens forgotten");
    assert!(attach(&app, &u, gid).await.is_none());
    assert_eq!(usable(&app, &u, gid).await, GrantUse::Unusable { reason: "disconnected", until: None });
    let l = list(&app, &u).await;
    assert_eq!(l["count"], 2, "a disconnected subscription is still held");

    // A credential set naming it keeps it (core's API writes this column).
    let set = uuid::Uuid::new_v4().to_string();
    exec(
        &app,
        "INSERT INTO inference_credential_sets (id, account_id, name, is_default, openai_grant_id, revision, \
         created_at, updated_at) VALUES ($1, $2, $3, 0, $4, 1, 1, 1)",
        &[&set, &u.id, "Codex", gid],
    )
    .await;
    let r = app.delete(&path, &u.key).await;
    assert_error(&r, StatusCode::CONFLICT, "openai_grant_named_by_sets");
    assert_eq!(r.body["sets"], json!(["Codex"]));

    // Another account's id is unknown everywhere.
    let other = app.user().await;
    assert_error(&patch(&app, &path, &other.key, json!({"name": "X"})).await, StatusCode::NOT_FOUND, "not_found");
    let r = app.post(&format!("{path}/disconnect"), &other.key, json!({})).await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.delete(&path, &other.key).await, StatusCode::NOT_FOUND, "not_found");

    exec(&app, "UPDATE inference_credential_sets SET openai_grant_id = NULL WHERE id = $1", &[&set]).await;
    let r = app.delete(&path, &u.key).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    assert_eq!(list(&app, &u).await["count"], 1);
    assert_eq!(usable(&app, &u, gid).await, GrantUse::Unusable { reason: "not_found", until: None });
}

async fn exhaustion_is_checked_with_the_vendor(b: Backend) {
    let (vendor, app) = setup(b).await;
    let u = app.user().await;
    let s = link(&app, &vendor, &u, "Work", "alice").await;
    let gid = s["id"].as_str().unwrap();
    let calls = |v: serde_json::Value| v["usage_calls"].as_u64().unwrap();

    assert_eq!(usable(&app, &u, gid).await, GrantUse::Usable);
    let stats = vendor.stats().await;
    assert_eq!(calls(stats.clone()), 1);
    // The check sent the subscription's own token.
    let token = attach(&app, &u, gid).await.unwrap();
    assert_eq!(format!("Bearer {}", stats["last_usage_token"].as_str().unwrap()), token);

    let resets = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let resets = resets.replace_nanosecond(0).unwrap();
    let resets_text = resets.format(&time::format_description::well_known::Rfc3339).unwrap();
    vendor.set_usage(json!({"exhausted": true, "resets_at": resets_text})).await;
    // At most one check per 5 minutes: the vendor is not asked again yet.
    assert_eq!(usable(&app, &u, gid).await, GrantUse::Usable);
    assert_eq!(calls(vendor.stats().await), 1);

    let past = "UPDATE openai_subscriptions SET usage_checked_at = usage_checked_at - 301000000 WHERE id = $1";
    exec(&app, past, &[gid]).await;
    assert_eq!(usable(&app, &u, gid).await, GrantUse::Unusable { reason: "exhausted", until: Some(resets) });
    assert_eq!(calls(vendor.stats().await), 2);
    assert_eq!(subscription(&app, &u, gid).await["exhausted_until"], resets_text.as_str());
    // Recorded: no need to ask while it lasts.
    assert_eq!(usable(&app, &u, gid).await, GrantUse::Unusable { reason: "exhausted", until: Some(resets) });
    assert_eq!(calls(vendor.stats().await), 2);

    // Past the reset it is usable again (the vendor says so when next asked).
    vendor.set_usage(json!({"exhausted": false})).await;
    exec(&app, "UPDATE openai_subscriptions SET exhausted_until = 1 WHERE id = $1", &[gid]).await;
    exec(&app, past, &[gid]).await;
    assert_eq!(usable(&app, &u, gid).await, GrantUse::Usable);
    assert!(subscription(&app, &u, gid).await["exhausted_until"].is_null());

    // A failed check leaves it usable.
    vendor.set_usage(json!({"status": 500, "exhausted": true})).await;
    exec(&app, past, &[gid]).await;
    assert_eq!(usable(&app, &u, gid).await, GrantUse::Usable);
    assert_eq!(calls(vendor.stats().await), 4);
}

async fn attach_refreshes_and_a_refused_refresh_revokes(b: Backend) {
    // Tokens live 30 s: less than the minute attach wants, so each attach refreshes.
    let (vendor, app) = setup_with(b, 30, &[]).await;
    let u = app.user().await;
    let s = link(&app, &vendor, &u, "Work", "alice").await;
    let gid = s["id"].as_str().unwrap();
    let before = vendor.stats().await["refreshes"].as_u64().unwrap();
    let first = attach(&app, &u, gid).await.expect("a refreshed token");
    assert_eq!(vendor.stats().await["refreshes"].as_u64().unwrap(), before + 1);
    let second = attach(&app, &u, gid).await.expect("a refreshed token");
    assert_ne!(first, second);
    assert_eq!(vendor.stats().await["refreshes"].as_u64().unwrap(), before + 2);

    vendor.revoke_grants().await;
    assert!(attach(&app, &u, gid).await.is_none());
    assert_eq!(subscription(&app, &u, gid).await["status"], "revoked");
    assert_eq!(usable(&app, &u, gid).await, GrantUse::Unusable { reason: "revoked", until: None });
    let summary = grants(&app).grant(app.state(), u.id.parse().unwrap(), gid.parse().unwrap()).await.unwrap().unwrap();
    assert_eq!(summary.status, "revoked");
    // A reconnect brings it back.
    let a = start(&app, &u, json!({"grant_id": gid})).await;
    vendor.approve(a["user_code"].as_str().unwrap(), "alice").await;
    wait_state(&app, &u, a["id"].as_str().unwrap(), "completed").await;
    assert_eq!(subscription(&app, &u, gid).await["status"], "active");
    assert!(attach(&app, &u, gid).await.is_some());
}

async fn idle_subscriptions_are_renewed(b: Backend) {
    let extra = [
        ("subscriptions.openai.renew_every_seconds", json!(1)),
        ("subscriptions.openai.idle_renew_seconds", json!(86_400)),
    ];
    let (vendor, app) = setup_with(b, 3600, &extra).await;
    let u = app.user().await;
    let s = link(&app, &vendor, &u, "Idle", "alice").await;
    let gid = s["id"].as_str().unwrap();
    let used = link(&app, &vendor, &u, "Used", "bob").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(vendor.stats().await["refreshes"], 0, "nothing is idle yet");
    // Seven days unused (and unrefreshed): the job renews it; the one used lately is left.
    let week = 7 * 86_400 * 1_000_000_i64;
    exec(
        &app,
        &format!("UPDATE openai_subscriptions SET updated_at = updated_at - {week}, created_at = created_at - {week} WHERE id = $1"),
        &[gid],
    )
    .await;
    exec(
        &app,
        &format!("UPDATE openai_subscriptions SET updated_at = updated_at - {week} WHERE id = $1"),
        &[used["id"].as_str().unwrap()],
    )
    .await;
    attach(&app, &u, used["id"].as_str().unwrap()).await.unwrap();
    for _ in 0..50 {
        if vendor.stats().await["refreshes"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(vendor.stats().await["refreshes"], 1, "only the idle one, once");
    assert_eq!(subscription(&app, &u, gid).await["status"], "active");
}

async fn an_export_lists_subscriptions_without_tokens(b: Backend) {
    let (vendor, app) = setup(b).await;
    let u = app.user().await;
    let s = link(&app, &vendor, &u, "Work", "alice").await;
    let token = attach(&app, &u, s["id"].as_str().unwrap()).await.unwrap();
    let token = token.strip_prefix("Bearer ").unwrap().to_owned();
    let r = app.post("/api/account/exports", &u.key, json!({})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let id = r.body["data"]["id"].as_str().unwrap().to_owned();
    let mut done = false;
    for _ in 0..600 {
        let r = app.get(&format!("/api/account/exports/{id}"), &u.key).await;
        if r.body["data"]["status"] != "pending" {
            assert_eq!(r.body["data"]["status"], "completed", "{}", r.text);
            done = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(done, "the export finished");
    let res = app
        .http
        .get(format!("{}/api/account/exports/{id}/download", app.base))
        .bearer_auth(&u.key)
        .send()
        .await
        .unwrap();
    let text = res.text().await.unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["openai_subscriptions"][0]["id"], s["id"], "{text}");
    assert_eq!(doc["openai_subscriptions"][0]["name"], "Work");
    assert!(!text.contains(&token), "no access token");
    assert!(!text.contains("sealed") && !text.contains("v1:"), "no sealed value");

    // Account deletion removes the rows.
    let r = app.request(reqwest::Method::DELETE, "/api/account", Some(&u.key), Some(json!({"confirm": u.email}))).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    for table in ["openai_subscriptions", "openai_link_attempts"] {
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
            .fetch_one(&app.state().db.pool)
            .await
            .unwrap();
        assert_eq!(n, 0, "{table}");
    }
}
