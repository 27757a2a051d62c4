//! Connection providers: validation, uniqueness, secrets never shown,
//! discovery against a real provider, and the flag's gate.

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::Row;

use crate::both;
use crate::common::*;

both!(
    providers_are_managed_and_their_secret_never_shown,
    validation_and_unique_slug,
    http_providers_need_the_operator_switch,
    discovery_fills_the_endpoints,
    discovery_refuses_a_document_of_another_issuer,
    the_flag_gates_changes_and_keeps_reads_open,
    me_fields_follow_the_flag_and_the_key
);

fn manual(slug: &str) -> Value {
    json!({
        "slug": slug, "name": "Manual", "authorization_endpoint": "https://id.example/authorize",
        "token_endpoint": "https://id.example/token", "client_id": "cid", "client_secret": "very secret value",
        "scopes": ["read", "write"], "hosts": ["api.example.com", "*.example.org"],
    })
}

async fn providers_are_managed_and_their_secret_never_shown(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let r = app.post("/api/connection-providers", &u.key, manual("manual")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let p = &r.body["data"];
    assert_eq!(p["slug"], "manual");
    assert_eq!(p["token_endpoint_auth_method"], "client_secret_basic");
    assert_eq!(p["hosts"], json!(["api.example.com", "*.example.org"]));
    assert!(!r.text.contains("very secret value"));
    assert!(p.get("client_secret").is_none());
    let id = p["id"].as_str().unwrap().to_owned();

    // Sealed at rest: the stored value is not the secret.
    let sealed: String = sqlx::query("SELECT sealed_client_secret FROM connection_providers WHERE id = $1")
        .bind(&id)
        .fetch_one(&app.state().db.pool)
        .await
        .unwrap()
        .get(0);
    assert!(sealed.starts_with("v1:") && !sealed.contains("very secret"), "{sealed}");

    let r = app
        .request(
            reqwest::Method::PATCH,
            &format!("/api/connection-providers/{id}"),
            Some(&u.key),
            Some(json!({"name": "Renamed", "client_secret": "another secret", "token_endpoint_auth_method": "client_secret_post"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["name"], "Renamed");
    assert_eq!(r.body["data"]["token_endpoint_auth_method"], "client_secret_post");
    assert!(!r.text.contains("another secret"));

    let list = app.get("/api/connection-providers", &u.key).await;
    assert_eq!(list.body["data"].as_array().unwrap().len(), 1);
    assert!(!list.text.contains("secret\""));
    let links = app.get("/api/connections/providers", &u.key).await;
    assert_eq!(
        links.body["data"],
        json!([{"slug": "manual", "name": "Renamed", "start_url": format!("{}/connections/manual/start", app.base)}])
    );

    // Another account sees none of it.
    let other = app.user().await;
    assert_eq!(app.get("/api/connection-providers", &other.key).await.body["data"], json!([]));
    assert_error(
        &app.get(&format!("/api/connection-providers/{id}"), &other.key).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );

    assert_eq!(app.delete(&format!("/api/connection-providers/{id}"), &u.key).await.status, StatusCode::NO_CONTENT);
    assert_eq!(app.get("/api/connection-providers", &u.key).await.body["data"], json!([]));
}

async fn validation_and_unique_slug(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let r = app
        .post(
            "/api/connection-providers",
            &u.key,
            json!({"slug": "Bad Slug", "name": " ", "client_id": "", "client_secret": "",
                   "token_endpoint_auth_method": "private_key_jwt",
                   "scopes": ["has space"], "hosts": ["https://x.com/path"]}),
        )
        .await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    for field in
        ["slug", "name", "issuer", "client_id", "client_secret", "scopes", "hosts", "token_endpoint_auth_method"]
    {
        assert!(r.body["errors"][field].is_array(), "{field}: {}", r.text);
    }
    let mut no_hosts = manual("a");
    no_hosts["hosts"] = json!([]);
    let r = app.post("/api/connection-providers", &u.key, no_hosts).await;
    assert!(r.body["errors"]["hosts"].is_array(), "{}", r.text);

    assert_eq!(app.post("/api/connection-providers", &u.key, manual("same")).await.status, StatusCode::CREATED);
    assert_error(
        &app.post("/api/connection-providers", &u.key, manual("same")).await,
        StatusCode::CONFLICT,
        "connection_provider_slug_taken",
    );
    // Another account may use the slug.
    let other = app.user().await;
    assert_eq!(app.post("/api/connection-providers", &other.key, manual("same")).await.status, StatusCode::CREATED);
    // A rename onto a taken slug is refused too.
    let r = app.post("/api/connection-providers", &u.key, manual("second")).await;
    let id = r.body["data"]["id"].as_str().unwrap();
    let r = app
        .request(
            reqwest::Method::PATCH,
            &format!("/api/connection-providers/{id}"),
            Some(&u.key),
            Some(json!({"slug": "same"})),
        )
        .await;
    assert_error(&r, StatusCode::CONFLICT, "connection_provider_slug_taken");

    // Managing providers needs a full-scope key.
    let r = app.post("/api/keys", &u.key, json!({"name": "narrow", "scope": "restricted"})).await;
    let narrow = r.body["data"]["api_key"].as_str().unwrap().to_owned();
    assert_eq!(app.post("/api/connection-providers", &narrow, manual("n")).await.status, StatusCode::FORBIDDEN);
}

async fn http_providers_need_the_operator_switch(b: Backend) {
    let app = spawn_with(b, &[("features.connections", json!(true))]).await;
    let u = app.user().await;
    let r = app
        .post(
            "/api/connection-providers",
            &u.key,
            json!({"slug": "plain", "name": "Plain", "issuer": "http://127.0.0.1:9/", "client_id": "c",
                   "client_secret": "s", "hosts": ["api.example.com"]}),
        )
        .await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert_eq!(r.body["errors"]["issuer"], json!(["must be https"]));
}

async fn discovery_fills_the_endpoints(b: Backend) {
    let app = app(b).await;
    let idp = Idp::start(&format!("{}/connections/idp/callback", app.base), 3600).await;
    let u = app.user().await;
    let r = app
        .post(
            "/api/connection-providers",
            &u.key,
            json!({"slug": "idp", "name": "IdP", "issuer": idp.issuer, "client_id": CLIENT_ID,
                   "client_secret": CLIENT_SECRET, "scopes": ["openid"], "hosts": ["api.idp.test"]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert!(r.body["data"]["token_endpoint"].is_null());
    let id = r.body["data"]["id"].as_str().unwrap();
    let r = app.post(&format!("/api/connection-providers/{id}/discover"), &u.key, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let p = &r.body["data"];
    assert_eq!(p["authorization_endpoint"], format!("{}/auth", idp.issuer));
    assert_eq!(p["token_endpoint"], format!("{}/token", idp.issuer));
    assert_eq!(p["revocation_endpoint"], format!("{}/token/revocation", idp.issuer));
    assert_eq!(p["token_endpoint_auth_method"], "client_secret_basic");

    // A provider without an issuer has nothing to discover.
    let r = app.post("/api/connection-providers", &u.key, manual("manual")).await;
    let manual_id = r.body["data"]["id"].as_str().unwrap();
    let r = app.post(&format!("/api/connection-providers/{manual_id}/discover"), &u.key, json!({})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
}

async fn discovery_refuses_a_document_of_another_issuer(b: Backend) {
    let app = app(b).await;
    let idp = Idp::start(&format!("{}/connections/idp/callback", app.base), 3600).await;
    let u = app.user().await;
    // The provider's documents name `http://127.0.0.1:PORT`, not this address under it.
    let r = app
        .post(
            "/api/connection-providers",
            &u.key,
            json!({"slug": "idp", "name": "IdP", "issuer": format!("{}/", idp.issuer), "client_id": CLIENT_ID,
                   "client_secret": CLIENT_SECRET, "hosts": ["api.idp.test"]}),
        )
        .await;
    let id = r.body["data"]["id"].as_str().unwrap();
    let r = app.post(&format!("/api/connection-providers/{id}/discover"), &u.key, json!({})).await;
    assert_error(&r, StatusCode::BAD_GATEWAY, "connection_provider_unavailable");
    assert!(r.body["message"].as_str().unwrap().contains("names the issuer"), "{}", r.text);
    let p = app.get(&format!("/api/connection-providers/{id}"), &u.key).await;
    assert!(p.body["data"]["token_endpoint"].is_null(), "nothing was filled");

    // Nobody there at all.
    let r = app
        .post(
            "/api/connection-providers",
            &u.key,
            json!({"slug": "gone", "name": "Gone", "issuer": "http://127.0.0.1:9", "client_id": "c",
                   "client_secret": "s", "hosts": ["api.idp.test"]}),
        )
        .await;
    let id = r.body["data"]["id"].as_str().unwrap();
    let r = app.post(&format!("/api/connection-providers/{id}/discover"), &u.key, json!({})).await;
    assert_error(&r, StatusCode::BAD_GATEWAY, "connection_provider_unavailable");
}

async fn the_flag_gates_changes_and_keeps_reads_open(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let r = app.post("/api/connection-providers", &u.key, manual("kept")).await;
    let id = r.body["data"]["id"].as_str().unwrap().to_owned();

    set_flag(&app, false).await;
    let off = |r: &Resp| assert_error(r, StatusCode::NOT_FOUND, "connections_not_enabled");
    off(&app.post("/api/connection-providers", &u.key, manual("new")).await);
    off(&app
        .request(
            reqwest::Method::PATCH,
            &format!("/api/connection-providers/{id}"),
            Some(&u.key),
            Some(json!({"name": "x"})),
        )
        .await);
    off(&app.post(&format!("/api/connection-providers/{id}/discover"), &u.key, json!({})).await);
    // The browser flow is gated too.
    let mut browser = signed_in(&app, &u).await;
    let r = browser.get("/connections/kept/start").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.text);

    // Reads and deletes stay open.
    assert_eq!(app.get("/api/connection-providers", &u.key).await.body["data"][0]["slug"], "kept");
    assert_eq!(app.get(&format!("/api/connection-providers/{id}"), &u.key).await.status, StatusCode::OK);
    assert_eq!(app.get("/api/connections/providers", &u.key).await.status, StatusCode::OK);
    assert_eq!(app.get("/api/connections", &u.key).await.status, StatusCode::OK);
    assert_eq!(app.delete(&format!("/api/connection-providers/{id}"), &u.key).await.status, StatusCode::NO_CONTENT);

    set_flag(&app, true).await;
    assert_eq!(app.post("/api/connection-providers", &u.key, manual("new")).await.status, StatusCode::CREATED);
}

async fn me_fields_follow_the_flag_and_the_key(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let me = app.get("/api/auth/me", &u.key).await;
    assert_eq!(me.body["data"]["connections_enabled"], true, "{}", me.text);
    assert_eq!(me.body["data"]["connections_manageable"], true);
    let r = app.post("/api/keys", &u.key, json!({"name": "narrow", "scope": "restricted"})).await;
    let narrow = r.body["data"]["api_key"].as_str().unwrap().to_owned();
    let me = app.get("/api/auth/me", &narrow).await;
    assert_eq!(me.body["data"]["connections_enabled"], true);
    assert_eq!(me.body["data"]["connections_manageable"], false);
    set_flag(&app, false).await;
    let me = app.get("/api/auth/me", &u.key).await;
    assert_eq!(me.body["data"]["connections_enabled"], false);
    assert_eq!(me.body["data"]["connections_manageable"], false);
}
