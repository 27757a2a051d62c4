//! Link attempts through every state of spec 3.1, against the fake vendor.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use sqlx::Row;

use crate::both;
use crate::common::*;

both!(
    a_sign_in_links_a_subscription,
    a_cancelled_sign_in_that_finishes_stores_nothing,
    a_refusal_at_the_vendor_fails_the_attempt,
    an_attempt_expires,
    a_vendor_down_is_auth_unreachable,
    slow_down_lengthens_the_interval,
    a_reconnect_keeps_the_old_token_until_the_new_one_is_stored,
    a_reconnect_after_a_disconnect_is_stale,
    a_vendor_account_links_once,
    a_name_taken_meanwhile_fails_the_link,
    a_deleted_subscription_fails_its_reconnect,
    turning_linking_off_fails_open_links,
    a_suspended_owner_is_ineligible,
    the_grant_limit_is_checked_again_at_completion,
    an_unknown_or_unreadable_device_code_fails_the_attempt
);

async fn a_sign_in_links_a_subscription(b: Backend) {
    let (vendor, app) = setup(b).await;
    let u = app.user().await;
    let a = start(&app, &u, json!({"name": "Personal"})).await;
    assert_eq!(a["kind"], "link");
    assert_eq!(a["name"], "Personal");
    assert!(a["grant_id"].is_null());
    assert_eq!(a["state"], "pending");
    assert!(a["user_code"].as_str().is_some_and(|c| !c.is_empty()), "{a}");
    assert_eq!(a["verification_url"], format!("{}/device", vendor.issuer));
    assert_eq!(a["poll_interval"], 1);
    assert_eq!(a["auth_unreachable"], false);
    assert!(a["expires_at"].is_string() && a["inserted_at"].is_string() && a["updated_at"].is_string());
    assert!(a["result_grant_id"].is_null() && a["failure"].is_null());
    let id = a["id"].as_str().unwrap();

    // Listed while pending, with its code.
    let r = app.get(&format!("{BASE}/attempts"), &u.key).await;
    assert_eq!(r.body["data"][0]["id"], id, "{}", r.text);
    assert_eq!(r.body["data"][0]["user_code"], a["user_code"]);
    // Still pending before the person approves.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(read_attempt(&app, &u, id).await["state"], "pending");

    vendor.approve(a["user_code"].as_str().unwrap(), "alice").await;
    let done = wait_state(&app, &u, id, "completed").await;
    assert!(done["user_code"].is_null(), "{done}");
    assert!(done["failure"].is_null());
    let grant_id = done["result_grant_id"].as_str().unwrap().to_owned();

    let l = list(&app, &u).await;
    assert_eq!(l["count"], 1);
    assert_eq!(l["limit"], 5);
    assert_eq!(l["linking_enabled"], true);
    let s = &l["data"][0];
    assert_eq!(s["id"], grant_id.as_str());
    assert_eq!(s["name"], "Personal");
    assert_eq!(s["status"], "active");
    assert_eq!(s["account_email"], "alice@vendor.test");
    assert_eq!(s["plan"], "plus");
    assert!(s["exhausted_until"].is_null() && s["last_used_at"].is_null());
    assert!(s["inserted_at"].is_string() && s["updated_at"].is_string());
    let r = app.get(&format!("{BASE}/attempts"), &u.key).await;
    assert_eq!(r.body["data"], json!([]));

    // The grant source: summary, hosts, the token attached, its use recorded.
    let source = grants(&app);
    let summary = source.grant(app.state(), u.id.parse().unwrap(), grant_id.parse().unwrap()).await.unwrap().unwrap();
    assert_eq!((summary.name.as_str(), summary.status.as_str()), ("Personal", "active"));
    assert_eq!(source.hosts(app.state()), vec!["api.vendor.test".to_owned(), "*.vendor.test".to_owned()]);
    assert_eq!(usable(&app, &u, &grant_id).await, acs_core::extension::GrantUse::Usable);
    let value = attach(&app, &u, &grant_id).await.expect("a token");
    let token = value.strip_prefix("Bearer ").expect("a bearer token");
    assert!(subscription(&app, &u, &grant_id).await["last_used_at"].is_string());
    // Another account knows nothing of it.
    let other = app.user().await;
    assert!(source.grant(app.state(), other.id.parse().unwrap(), grant_id.parse().unwrap()).await.unwrap().is_none());
    assert_eq!(
        usable(&app, &other, &grant_id).await,
        acs_core::extension::GrantUse::Unusable { reason: "not_found", until: None }
    );
    assert!(attach(&app, &other, &grant_id).await.is_none());

    // Never in an answer; sealed at rest.
    for path in [BASE.to_owned(), format!("{BASE}/attempts/{id}"), "/api/auth/me".to_owned()] {
        let r = app.get(&path, &u.key).await;
        assert!(!r.text.contains(token), "{path} shows the token");
    }
    let row = sqlx::query("SELECT sealed_access_token, sealed_refresh_token FROM openai_subscriptions WHERE id = $1")
        .bind(&grant_id)
        .fetch_one(&app.state().db.pool)
        .await
        .unwrap();
    let (access, refresh): (String, String) = (row.get(0), row.get(1));
    assert!(access.starts_with("v1:") && !access.contains(token));
    assert!(refresh.starts_with("v1:"));
    let me = app.get("/api/auth/me", &u.key).await;
    assert_eq!(me.body["data"]["openai_subscriptions_enabled"], true, "{}", me.text);
}

async fn a_cancelled_sign_in_that_finishes_stores_nothing(b: Backend) {
    let (vendor, app) = setup(b).await;
    let u = app.user().await;
    let a = start(&app, &u, json!({"name": "Later"})).await;
    let id = a["id"].as_str().unwrap();
    let r = app.delete(&format!("{BASE}/attempts/{id}"), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["state"], "cancelled");
    assert!(r.body["data"]["user_code"].is_null());
    let r = app.delete(&format!("{BASE}/attempts/{id}"), &u.key).await;
    assert_error(&r, StatusCode::CONFLICT, "openai_link_attempt_not_pending");
    assert_eq!(r.body["state"], "cancelled");
    // The person still approves at the vendor: nothing is stored, the state never changes.
    vendor.approve(a["user_code"].as_str().unwrap(), "alice").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(read_attempt(&app, &u, id).await["state"], "cancelled");
    assert_eq!(list(&app, &u).await["count"], 0);
    // Another account's attempt is unknown.
    let other = app.user().await;
    assert_error(&app.get(&format!("{BASE}/attempts/{id}"), &other.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.delete(&format!("{BASE}/attempts/{id}"), &other.key).await, StatusCode::NOT_FOUND, "not_found");
}

async fn a_refusal_at_the_vendor_fails_the_attempt(b: Backend) {
    let (vendor, app) = setup(b).await;
    let u = app.user().await;
    let a = start(&app, &u, json!({"name": "No"})).await;
    vendor.deny(a["user_code"].as_str().unwrap()).await;
    let done = wait_state(&app, &u, a["id"].as_str().unwrap(), "failed").await;
    assert_eq!(done["failure"]["reason"], "authorization_failed", "{done}");
    assert!(done["user_code"].is_null());
    assert_eq!(list(&app, &u).await["count"], 0);
}

async fn an_attempt_expires(b: Backend) {
    let (_vendor, app) = setup_with(b, 3600, &[("subscriptions.openai.attempt_ttl_seconds", json!(2))]).await;
    let u = app.user().await;
    let a = start(&app, &u, json!({"name": "Slow"})).await;
    let id = a["id"].as_str().unwrap();
    let done = wait_state(&app, &u, id, "expired").await;
    assert!(done["user_code"].is_null() && done["failure"].is_null());
    let r = app.delete(&format!("{BASE}/attempts/{id}"), &u.key).await;
    assert_error(&r, StatusCode::CONFLICT, "openai_link_attempt_not_pending");
    assert_eq!(r.body["state"], "expired");
    // Written so by the poller too, and it stays so.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let state: String = sqlx::query_scalar("SELECT state FROM openai_link_attempts WHERE id = $1")
        .bind(id)
        .fetch_one(&app.state().db.pool)
        .await
        .unwrap();
    assert_eq!(state, "expired");
}

async fn a_vendor_down_is_auth_unreachable(b: Backend) {
    let (vendor, app) = setup(b).await;
    let u = app.user().await;
    let a = start(&app, &u, json!({"name": "Flaky"})).await;
    let id = a["id"].as_str().unwrap();
    vendor.outage(true).await;
    // No attempt starts while the vendor cannot give a code.
    let r = app.post(&format!("{BASE}/attempts"), &u.key, json!({"name": "Other"})).await;
    assert_error(&r, StatusCode::BAD_GATEWAY, "openai_auth_unreachable");
    let down = wait_attempt(&app, &u, id, |a| a["auth_unreachable"] == true).await;
    assert_eq!(down["state"], "pending");
    vendor.outage(false).await;
    wait_attempt(&app, &u, id, |a| a["auth_unreachable"] == false).await;
    vendor.approve(a["user_code"].as_str().unwrap(), "alice").await;
    wait_state(&app, &u, id, "completed").await;
    assert_eq!(list(&app, &u).await["count"], 1);
}

async fn a_reconnect_keeps_the_old_token_until_the_new_one_is_stored(b: Backend) {
    let (vendor, app) = setup(b).await;
    let u = app.user().await;
    let s = link(&app, &vendor, &u, "Work", "alice").await;
    let gid = s["id"].as_str().unwrap();
    let old = attach(&app, &u, gid).await.unwrap();
    let a = start(&app, &u, json!({"grant_id": gid})).await;
    assert_eq!(a["kind"], "reconnect");
    assert!(a["name"].is_null());
    assert_eq!(a["grant_id"], gid);
    // While the sign-in is under way the old token is still the one in use.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(attach(&app, &u, gid).await.unwrap(), old);
    vendor.approve(a["user_code"].as_str().unwrap(), "alice").await;
    let done = wait_state(&app, &u, a["id"].as_str().unwrap(), "completed").await;
    assert_eq!(done["result_grant_id"], gid);
    let new = attach(&app, &u, gid).await.unwrap();
    assert_ne!(new, old);
    let l = list(&app, &u).await;
    assert_eq!(l["count"], 1);
    assert_eq!(l["data"][0]["status"], "active");
    assert_eq!(l["data"][0]["name"], "Work");
}

async fn a_reconnect_after_a_disconnect_is_stale(b: Backend) {
    let (vendor, app) = setup(b).await;
    let u = app.user().await;
    let s = link(&app, &vendor, &u, "Work", "alice").await;
    let gid = s["id"].as_str().unwrap();
    let a = start(&app, &u, json!({"grant_id": gid})).await;
    let r = app.post(&format!("{BASE}/{gid}/disconnect"), &u.key, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    vendor.approve(a["user_code"].as_str().unwrap(), "alice").await;
    let done = wait_state(&app, &u, a["id"].as_str().unwrap(), "failed").await;
    assert_eq!(done["failure"]["reason"], "stale_grant", "{done}");
    assert_eq!(done["failure"]["grant_id"], gid);
    assert!(done["result_grant_id"].is_null());
    // What is there is left alone.
    assert_eq!(subscription(&app, &u, gid).await["status"], "disconnected");
    assert!(attach(&app, &u, gid).await.is_none());
}

async fn a_vendor_account_links_once(b: Backend) {
    let (vendor, app) = setup(b).await;
    let u = app.user().await;
    let s = link(&app, &vendor, &u, "First", "alice").await;
    let a = start(&app, &u, json!({"name": "Second"})).await;
    vendor.approve(a["user_code"].as_str().unwrap(), "alice").await;
    let done = wait_state(&app, &u, a["id"].as_str().unwrap(), "failed").await;
    assert_eq!(done["failure"]["reason"], "account_already_linked", "{done}");
    assert_eq!(done["failure"]["grant_id"], s["id"]);
    assert_eq!(done["failure"]["grant"], json!({"id": s["id"], "name": "First"}));
    assert_eq!(list(&app, &u).await["count"], 1);
    // Another person's vendor account links fine.
    link(&app, &vendor, &u, "Second", "bob").await;
}

async fn a_name_taken_meanwhile_fails_the_link(b: Backend) {
    let (vendor, app) = setup(b).await;
    let u = app.user().await;
    let s = link(&app, &vendor, &u, "First", "alice").await;
    // A name in use is refused at the start.
    let r = app.post(&format!("{BASE}/attempts"), &u.key, json!({"name": "First"})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    let a = start(&app, &u, json!({"name": "Second"})).await;
    let r = patch(&app, &format!("{BASE}/{}", s["id"].as_str().unwrap()), &u.key, json!({"name": "Second"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    vendor.approve(a["user_code"].as_str().unwrap(), "bob").await;
    let done = wait_state(&app, &u, a["id"].as_str().unwrap(), "failed").await;
    assert_eq!(done["failure"]["reason"], "name_taken", "{done}");
}

async fn a_deleted_subscription_fails_its_reconnect(b: Backend) {
    let (vendor, app) = setup(b).await;
    let u = app.user().await;
    let s = link(&app, &vendor, &u, "Gone", "alice").await;
    let gid = s["id"].as_str().unwrap();
    app.post(&format!("{BASE}/{gid}/disconnect"), &u.key, json!({})).await;
    let a = start(&app, &u, json!({"grant_id": gid})).await;
    let r = app.delete(&format!("{BASE}/{gid}"), &u.key).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    vendor.approve(a["user_code"].as_str().unwrap(), "alice").await;
    let done = wait_state(&app, &u, a["id"].as_str().unwrap(), "failed").await;
    assert_eq!(done["failure"]["reason"], "grant_not_found", "{done}");
    assert_eq!(list(&app, &u).await["count"], 0);
}

async fn turning_linking_off_fails_open_links(b: Backend) {
    let (vendor, app) = setup(b).await;
    let u = app.user().await;
    let s = link(&app, &vendor, &u, "Kept", "alice").await;
    let new = start(&app, &u, json!({"name": "New"})).await;
    let re = start(&app, &u, json!({"grant_id": s["id"]})).await;
    set_flag(&app, "openai_subscriptions", false).await;
    let done = wait_state(&app, &u, new["id"].as_str().unwrap(), "failed").await;
    assert_eq!(done["failure"]["reason"], "linking_disabled", "{done}");
    // A reconnect needs only the broker: it goes on and completes.
    assert_eq!(read_attempt(&app, &u, re["id"].as_str().unwrap()).await["state"], "pending");
    vendor.approve(re["user_code"].as_str().unwrap(), "alice").await;
    wait_state(&app, &u, re["id"].as_str().unwrap(), "completed").await;
    vendor.approve(new["user_code"].as_str().unwrap(), "bob").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(read_attempt(&app, &u, new["id"].as_str().unwrap()).await["state"], "failed");
    assert_eq!(list(&app, &u).await["count"], 1);
}

async fn a_suspended_owner_is_ineligible(b: Backend) {
    let (vendor, app) = setup(b).await;
    let u = app.user().await;
    let s = link(&app, &vendor, &u, "Mine", "alice").await;
    let a = start(&app, &u, json!({"name": "More"})).await;
    exec(&app, "INSERT INTO account_suspensions (account_id, suspended_at) VALUES ($1, 1)", &[&u.id]).await;
    vendor.approve(a["user_code"].as_str().unwrap(), "bob").await;
    // The key is refused now; the attempt is read in the database.
    let mut reason = None;
    for _ in 0..100 {
        let row = sqlx::query("SELECT state, failure_reason FROM openai_link_attempts WHERE id = $1")
            .bind(a["id"].as_str().unwrap())
            .fetch_one(&app.state().db.pool)
            .await
            .unwrap();
        if row.get::<String, _>(0) != "pending" {
            reason = row.get::<Option<String>, _>(1);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(reason.as_deref(), Some("owner_ineligible"));
    assert_eq!(
        usable(&app, &u, s["id"].as_str().unwrap()).await,
        acs_core::extension::GrantUse::Unusable { reason: "owner_ineligible", until: None }
    );
}

async fn the_grant_limit_is_checked_again_at_completion(b: Backend) {
    let (vendor, app) = setup_with(b, 3600, &[("subscriptions.openai.max_grants", json!(1))]).await;
    let u = app.user().await;
    let first = start(&app, &u, json!({"name": "One"})).await;
    let second = start(&app, &u, json!({"name": "Two"})).await;
    vendor.approve(first["user_code"].as_str().unwrap(), "alice").await;
    wait_state(&app, &u, first["id"].as_str().unwrap(), "completed").await;
    vendor.approve(second["user_code"].as_str().unwrap(), "bob").await;
    let done = wait_state(&app, &u, second["id"].as_str().unwrap(), "failed").await;
    assert_eq!(done["failure"]["reason"], "grant_limit_reached", "{done}");
    let l = list(&app, &u).await;
    assert_eq!((l["count"].clone(), l["limit"].clone()), (json!(1), json!(1)));
}

async fn an_unknown_or_unreadable_device_code_fails_the_attempt(b: Backend) {
    let (_vendor, app) = setup(b).await;
    let u = app.user().await;
    // A device code the vendor never issued: it answers invalid_grant.
    let a = start(&app, &u, json!({"name": "Unknown"})).await;
    let id = a["id"].as_str().unwrap();
    let state = app.state();
    let aad = format!("openai_link_attempt {id} device_code");
    let sealed = state.crypto.encrypt(&state.db, u.id.parse().unwrap(), &aad, "not-a-device-code").await.unwrap();
    exec(&app, "UPDATE openai_link_attempts SET sealed_device_code = $1 WHERE id = $2", &[&sealed, id]).await;
    let done = wait_state(&app, &u, id, "failed").await;
    assert_eq!(done["failure"]["reason"], "invalid_sign_in", "{done}");

    // A sealed value that does not open (sealed for another row): acs failed.
    let b2 = start(&app, &u, json!({"name": "Broken"})).await;
    let id2 = b2["id"].as_str().unwrap();
    exec(&app, "UPDATE openai_link_attempts SET sealed_device_code = $1 WHERE id = $2", &[&sealed, id2]).await;
    let done = wait_state(&app, &u, id2, "failed").await;
    assert_eq!(done["failure"]["reason"], "internal_error", "{done}");
    assert_eq!(list(&app, &u).await["count"], 0);
}

async fn slow_down_lengthens_the_interval(b: Backend) {
    let (vendor, app) = setup(b).await;
    let u = app.user().await;
    let a = start(&app, &u, json!({"name": "Patient"})).await;
    let id = a["id"].as_str().unwrap();
    assert_eq!(a["poll_interval"], 1);
    vendor.slow_down(1).await;
    let slowed = wait_attempt(&app, &u, id, |a| a["poll_interval"] == 6).await;
    assert_eq!(slowed["state"], "pending");
    vendor.approve(a["user_code"].as_str().unwrap(), "alice").await;
    wait_state(&app, &u, id, "completed").await;
}
