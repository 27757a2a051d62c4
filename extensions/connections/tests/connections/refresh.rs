//! Tokens kept fresh: the worker refreshes before expiry at the real
//! provider; a grant revoked at the provider turns the connection `revoked`
//! and the binding source gives nothing.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::both;
use crate::common::*;

both!(
    the_worker_refreshes_before_expiry,
    a_revoked_grant_revokes_the_connection,
    the_source_refreshes_on_demand,
    replicas_never_spend_a_refresh_token_twice,
    a_token_without_refresh_expires
);

async fn connection(app: &TestApp, u: &User) -> Value {
    app.get("/api/connections", &u.key).await.body["data"][0].clone()
}

async fn the_worker_refreshes_before_expiry(b: Backend) {
    // Tokens live 70 s (longer than the minute under which the binding
    // source refreshes by itself); the worker refreshes those expiring within 65 s.
    let c = connected(b, 70, &[("connections.refresh_before_seconds", json!(65))]).await;
    let (app, u) = (&c.app, &c.user);
    let first = connection(app, u).await;
    let before = source_value(app, &u.id, &c.connection_id).await.unwrap().value;
    let mut refreshed = Value::Null;
    for _ in 0..80 {
        let now = connection(app, u).await;
        if now["last_refreshed_at"].is_string() {
            refreshed = now;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(refreshed.is_object(), "refreshed within 20 s: {first}");
    assert_eq!(refreshed["status"], "active");
    assert!(refreshed["expires_at"].as_str().unwrap() > first["expires_at"].as_str().unwrap());
    assert!(c.idp.stats().await["refreshes"].as_u64().unwrap() >= 1);
    let after = source_value(app, &u.id, &c.connection_id).await.unwrap().value;
    assert_ne!(after, before, "a new access token");
    assert!(c.idp.token_active(&after).await);
    // Tokens never in an answer, refreshed or not.
    assert!(!app.get("/api/connections", &u.key).await.text.contains(&after));
}

async fn a_revoked_grant_revokes_the_connection(b: Backend) {
    let c = connected(b, 70, &[("connections.refresh_before_seconds", json!(65))]).await;
    let (app, u) = (&c.app, &c.user);
    // The person disconnects the app at the provider: the next refresh answers invalid_grant.
    c.idp.revoke_grants().await;
    let mut status = Value::Null;
    for _ in 0..80 {
        status = connection(app, u).await["status"].clone();
        if status == "revoked" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(status, "revoked");
    assert!(source_value(app, &u.id, &c.connection_id).await.is_none());
    // The row stays for its owner to see and delete.
    assert_eq!(
        app.delete(&format!("/api/connections/{}", c.connection_id), &u.key).await.status,
        StatusCode::NO_CONTENT
    );
}

async fn the_source_refreshes_on_demand(b: Backend) {
    // Tokens live 50 s, under the source's minute: every read refreshes
    // first. The worker is slowed so that it is the source that does.
    let c = connected(
        b,
        50,
        &[("connections.refresh_before_seconds", json!(0)), ("connections.poll_seconds", json!(3600))],
    )
    .await;
    let (app, u) = (&c.app, &c.user);
    let before = c.idp.stats().await["refreshes"].as_u64().unwrap();
    let v = source_value(app, &u.id, &c.connection_id).await.expect("a refreshed token");
    assert!(c.idp.stats().await["refreshes"].as_u64().unwrap() > before);
    assert!(c.idp.token_active(&v.value).await);
    assert!(connection(app, u).await["last_refreshed_at"].is_string());
    // Revoked at the provider: the source's refresh fails, and it gives nothing.
    c.idp.revoke_grants().await;
    assert!(source_value(app, &u.id, &c.connection_id).await.is_none());
    assert_eq!(connection(app, u).await["status"], "revoked");
}

async fn replicas_never_spend_a_refresh_token_twice(b: Backend) {
    // Tokens live 50 s, under the binding source's minute, so every read
    // refreshes; both replicas read at once, again and again. The provider
    // rotates refresh tokens and takes a reused one for theft, revoking the
    // grant: the connection staying active shows each was spent once.
    let c = connected(
        b,
        50,
        &[("connections.refresh_before_seconds", json!(0)), ("connections.poll_seconds", json!(3600))],
    )
    .await;
    let (app, u) = (&c.app, &c.user);
    let replica = app.replica().await;
    let (account, id): (uuid::Uuid, uuid::Uuid) = (u.id.parse().unwrap(), c.connection_id.parse().unwrap());
    let ask = |state: acs_core::AppState| async move {
        let source = state.extensions.binding_sources.iter().find(|s| s.key() == "connection_id").unwrap().clone();
        source.value(&state, account, id).await.unwrap()
    };
    for _ in 0..15 {
        let (a, b) = tokio::join!(ask(app.state().clone()), ask(replica.state.clone()));
        assert!(a.is_some() && b.is_some(), "both replicas have a token");
    }
    let refreshes = c.idp.stats().await["refreshes"].as_u64().unwrap();
    assert!(refreshes >= 10, "the sources kept refreshing: {refreshes}");
    assert_eq!(connection(app, u).await["status"], "active");
    let v = source_value(app, &u.id, &c.connection_id).await.unwrap();
    assert!(c.idp.token_active(&v.value).await);
    replica.state.shutdown.cancel();
}

async fn a_token_without_refresh_expires(b: Backend) {
    let app = app(b).await;
    let idp =
        Idp::start_with(&format!("{}/connections/idp/callback", app.base), 2, json!({"no_refresh_tokens": true})).await;
    let u = app.user().await;
    discovered_provider(&app, &u, "idp", &idp.issuer).await;
    let mut browser = signed_in(&app, &u).await;
    let page = connect(&app, &mut browser, "idp").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    let id = connection(&app, &u).await["id"].as_str().unwrap().to_owned();
    let mut status = Value::Null;
    for _ in 0..60 {
        status = connection(&app, &u).await["status"].clone();
        if status == "expired" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(status, "expired");
    assert!(source_value(&app, &u.id, &id).await.is_none());
    // Signing in again makes it active, under the same id.
    let page = connect(&app, &mut browser, "idp").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    let now = connection(&app, &u).await;
    assert_eq!((now["id"].as_str(), now["status"].as_str()), (Some(id.as_str()), Some("active")));
}
