//! The sign-in limits at their boundaries, the gating by the flag and the
//! broker, and what a create body must hold.

use reqwest::StatusCode;
use serde_json::json;

use crate::both;
use crate::common::*;

both!(
    three_open_attempts_per_account,
    one_open_attempt_per_subscription,
    ten_starts_per_hour_cancelled_ones_counting,
    the_grant_limit_refuses_a_new_link,
    linking_needs_the_flag_and_the_broker,
    a_create_body_names_exactly_one_target,
    every_route_needs_a_full_scope_key,
    the_routes_are_documented
);

async fn three_open_attempts_per_account(b: Backend) {
    let (_vendor, app) = setup(b).await;
    let u = app.user().await;
    let mut ids = vec![];
    for n in 0..3 {
        ids.push(start(&app, &u, json!({"name": format!("S{n}")})).await["id"].as_str().unwrap().to_owned());
    }
    let r = app.post(&format!("{BASE}/attempts"), &u.key, json!({"name": "S3"})).await;
    assert_error(&r, StatusCode::CONFLICT, "openai_link_attempts_exceeded");
    assert_eq!((r.body["count"].clone(), r.body["limit"].clone()), (json!(3), json!(3)));
    let r = app.get(&format!("{BASE}/attempts"), &u.key).await;
    assert_eq!(r.body["data"].as_array().unwrap().len(), 3);
    // Another account has its own three.
    let other = app.user().await;
    start(&app, &other, json!({"name": "Mine"})).await;
    let r = app.delete(&format!("{BASE}/attempts/{}", ids[0]), &u.key).await;
    assert_eq!(r.status, StatusCode::OK);
    start(&app, &u, json!({"name": "S3"})).await;
}

async fn one_open_attempt_per_subscription(b: Backend) {
    let (vendor, app) = setup(b).await;
    let u = app.user().await;
    let s = link(&app, &vendor, &u, "Work", "alice").await;
    let a = start(&app, &u, json!({"grant_id": s["id"]})).await;
    let r = app.post(&format!("{BASE}/attempts"), &u.key, json!({"grant_id": s["id"]})).await;
    assert_error(&r, StatusCode::CONFLICT, "openai_link_attempt_pending");
    assert_eq!(r.body["attempt_id"], a["id"]);
    // A new link is another matter.
    start(&app, &u, json!({"name": "Other"})).await;
}

async fn ten_starts_per_hour_cancelled_ones_counting(b: Backend) {
    let (_vendor, app) = setup(b).await;
    let u = app.user().await;
    for n in 0..10 {
        let a = start(&app, &u, json!({"name": format!("S{n}")})).await;
        let r = app.delete(&format!("{BASE}/attempts/{}", a["id"].as_str().unwrap()), &u.key).await;
        assert_eq!(r.status, StatusCode::OK);
    }
    let r = app.post(&format!("{BASE}/attempts"), &u.key, json!({"name": "S10"})).await;
    assert_error(&r, StatusCode::TOO_MANY_REQUESTS, "openai_link_attempts_rate_limited");
    assert_eq!(r.body["limit"], 10);
    let wait = r.body["retry_after_seconds"].as_u64().unwrap();
    assert!(wait > 3500 && wait <= 3600, "{}", r.text);
    assert_eq!(r.headers["retry-after"].to_str().unwrap(), wait.to_string());
    // A start older than an hour no longer counts.
    exec(
        &app,
        "UPDATE openai_link_attempts SET created_at = created_at - 3600000000 WHERE account_id = $1 AND name = 'S0'",
        &[&u.id],
    )
    .await;
    start(&app, &u, json!({"name": "S10"})).await;
}

async fn the_grant_limit_refuses_a_new_link(b: Backend) {
    let (vendor, app) = setup_with(b, 3600, &[("subscriptions.openai.max_grants", json!(1))]).await;
    let u = app.user().await;
    let s = link(&app, &vendor, &u, "One", "alice").await;
    app.post(&format!("{BASE}/{}/disconnect", s["id"].as_str().unwrap()), &u.key, json!({})).await;
    // A disconnected subscription still counts.
    let r = app.post(&format!("{BASE}/attempts"), &u.key, json!({"name": "Two"})).await;
    assert_error(&r, StatusCode::CONFLICT, "openai_grant_limit_reached");
    assert_eq!((r.body["count"].clone(), r.body["limit"].clone()), (json!(1), json!(1)));
    // Reconnecting it is not a new subscription.
    start(&app, &u, json!({"grant_id": s["id"]})).await;
}

async fn linking_needs_the_flag_and_the_broker(b: Backend) {
    let (vendor, app) = setup(b).await;
    let u = app.user().await;
    let s = link(&app, &vendor, &u, "Kept", "alice").await;
    let gid = s["id"].as_str().unwrap();

    set_flag(&app, "openai_subscriptions", false).await;
    let r = app.post(&format!("{BASE}/attempts"), &u.key, json!({"name": "New"})).await;
    assert_error(&r, StatusCode::NOT_FOUND, "openai_subscriptions_not_enabled");
    let l = list(&app, &u).await;
    assert_eq!(l["linking_enabled"], false);
    assert_eq!(l["count"], 1);
    assert_eq!(app.get("/api/auth/me", &u.key).await.body["data"]["openai_subscriptions_enabled"], false);
    // Every other route stays open; a reconnect needs only the broker.
    let r = patch(&app, &format!("{BASE}/{gid}"), &u.key, json!({"name": "Renamed"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let a = start(&app, &u, json!({"grant_id": gid})).await;
    assert_eq!(app.get(&format!("{BASE}/attempts"), &u.key).await.body["data"][0]["id"], a["id"]);
    let r = app.delete(&format!("{BASE}/attempts/{}", a["id"].as_str().unwrap()), &u.key).await;
    assert_eq!(r.status, StatusCode::OK);
    // A linked subscription stays usable with the flag off.
    assert_eq!(usable(&app, &u, gid).await, acs_core::extension::GrantUse::Usable);

    set_flag(&app, "openai_subscriptions", true).await;
    set_flag(&app, "brokerage", false).await;
    for body in [json!({"name": "New"}), json!({"grant_id": gid})] {
        let r = app.post(&format!("{BASE}/attempts"), &u.key, body).await;
        assert_error(&r, StatusCode::NOT_FOUND, "openai_subscriptions_not_enabled");
    }
    assert_eq!(list(&app, &u).await["linking_enabled"], false);
    assert_eq!(app.get("/api/auth/me", &u.key).await.body["data"]["openai_subscriptions_enabled"], false);
}

async fn a_create_body_names_exactly_one_target(b: Backend) {
    let (vendor, app) = setup(b).await;
    let u = app.user().await;
    let s = link(&app, &vendor, &u, "Kept", "alice").await;
    let path = format!("{BASE}/attempts");
    for body in [
        json!({}),
        json!({"name": "A", "grant_id": s["id"]}),
        json!({"name": ""}),
        json!({"name": "x".repeat(201)}),
        json!({"name": "A", "other": 1}),
    ] {
        let r = app.post(&path, &u.key, body.clone()).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {}", r.text);
    }
    start(&app, &u, json!({"name": "y".repeat(200)})).await;
    // Another account's subscription is unknown.
    let other = app.user().await;
    let r = app.post(&path, &other.key, json!({"grant_id": s["id"]})).await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");
    let r = app.post(&path, &other.key, json!({"grant_id": uuid::Uuid::new_v4()})).await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");
}

async fn every_route_needs_a_full_scope_key(b: Backend) {
    let (vendor, app) = setup(b).await;
    let u = app.user().await;
    let s = link(&app, &vendor, &u, "Kept", "alice").await;
    let gid = s["id"].as_str().unwrap();
    let a = start(&app, &u, json!({"grant_id": gid})).await;
    let aid = a["id"].as_str().unwrap();
    let r = app.post("/api/keys", &u.key, json!({"name": "narrow", "scope": "restricted"})).await;
    let narrow = r.body["data"]["api_key"].as_str().expect("a restricted key").to_owned();
    use reqwest::Method;
    for (method, path, body) in [
        (Method::GET, BASE.to_owned(), None),
        (Method::PATCH, format!("{BASE}/{gid}"), Some(json!({"name": "X"}))),
        (Method::POST, format!("{BASE}/{gid}/disconnect"), Some(json!({}))),
        (Method::DELETE, format!("{BASE}/{gid}"), None),
        (Method::POST, format!("{BASE}/attempts"), Some(json!({"name": "X"}))),
        (Method::GET, format!("{BASE}/attempts"), None),
        (Method::GET, format!("{BASE}/attempts/{aid}"), None),
        (Method::DELETE, format!("{BASE}/attempts/{aid}"), None),
    ] {
        let r = app.request(method.clone(), &path, Some(&narrow), body).await;
        acs_testkit::assert_refused(&r, StatusCode::FORBIDDEN, "insufficient_scope");
    }
    assert_eq!(read_attempt(&app, &u, aid).await["state"], "pending");
    assert_eq!(subscription(&app, &u, gid).await["status"], "active");
}

async fn the_routes_are_documented(b: Backend) {
    let (_vendor, app) = setup(b).await;
    let r = app.request(reqwest::Method::GET, "/api/docs", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    let doc = &r.body;
    let tags: Vec<&str> = doc["tags"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(tags.contains(&"openai-subscriptions"), "{tags:?}");
    let paths = doc["paths"].as_object().unwrap();
    let mut ops = 0;
    for (path, item) in paths.iter().filter(|(p, _)| p.starts_with(BASE)) {
        for (method, op) in item.as_object().unwrap() {
            ops += 1;
            let id = op["operationId"].as_str().unwrap();
            assert!(id.chars().all(|c| c.is_ascii_alphanumeric()), "{id}");
            assert!(op["summary"].as_str().is_some_and(|s| !s.is_empty()), "{method} {path} has a summary");
            assert_eq!(op["tags"], json!(["openai-subscriptions"]), "{method} {path}");
            let responses = op["responses"].as_object().unwrap();
            for status in ["401", "403", "406", "429"] {
                assert!(responses.contains_key(status), "{method} {path} documents {status}");
            }
            if op.get("requestBody").is_some() {
                for status in ["413", "415", "422"] {
                    assert!(responses.contains_key(status), "{method} {path} documents {status}");
                }
            }
            for (status, response) in responses {
                assert!(response["description"].as_str().is_some_and(|d| !d.is_empty()), "{method} {path} {status}");
            }
        }
    }
    assert_eq!(ops, 8, "every route is documented");
    for schema in ["Subscription", "SubscriptionList", "LinkAttempt", "LinkAttemptCreate", "LinkFailure"] {
        assert!(doc["components"]["schemas"][schema].is_object(), "{schema}");
    }
}
