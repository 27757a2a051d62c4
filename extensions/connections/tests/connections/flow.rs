//! The browser flow against a real provider, end to end: the tokens are
//! stored sealed and never shown; the binding source gives the live access
//! token with the provider's hosts; a bad state and a refusal are pages.

use reqwest::StatusCode;
use serde_json::json;
use sqlx::Row;

use crate::both;
use crate::common::*;

both!(
    a_browser_connects_an_account,
    a_bad_state_is_refused,
    a_refusal_at_the_provider_is_a_page,
    deleting_a_connection_revokes_it_at_the_provider,
    a_provider_without_endpoints_is_a_page,
    account_deletion_removes_everything,
    an_export_lists_connections_without_secrets
);

async fn a_browser_connects_an_account(b: Backend) {
    let c = connected(b, 3600, &[]).await;
    let (app, u) = (&c.app, &c.user);
    let list = app.get("/api/connections", &u.key).await;
    let conn = &list.body["data"][0];
    assert_eq!(list.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(conn["provider"], "idp");
    assert_eq!(conn["status"], "active");
    // The scopes the provider granted (it drops offline_access without a consent prompt).
    assert_eq!(conn["scopes"], json!(["openid"]));
    assert!(conn["expires_at"].is_string(), "{}", list.text);
    assert!(conn["last_refreshed_at"].is_null());
    for never in ["access_token", "refresh_token", "token"] {
        assert!(conn.get(never).is_none(), "{never}: {}", list.text);
    }

    // The binding source hands out the live token with the provider's slug and hosts.
    let v = source_value(app, &u.id, &c.connection_id).await.expect("a value");
    assert_eq!(v.key, "idp");
    assert_eq!(v.hosts, vec!["api.idp.test".to_owned(), "*.idp.test".to_owned()]);
    assert!(c.idp.token_active(&v.value).await, "the provider knows the token");
    // Never in an answer, and sealed at rest.
    for path in ["/api/connections", "/api/connection-providers", "/api/connections/providers", "/api/auth/me"] {
        let r = app.get(path, &u.key).await;
        assert!(!r.text.contains(&v.value), "{path} shows the token");
    }
    let row = sqlx::query("SELECT sealed_access_token, sealed_refresh_token FROM connections WHERE id = $1")
        .bind(&c.connection_id)
        .fetch_one(&app.state().db.pool)
        .await
        .unwrap();
    let (access, refresh): (String, String) = (row.get(0), row.get(1));
    assert!(access.starts_with("v1:") && !access.contains(&v.value));
    assert!(refresh.starts_with("v1:"));

    // Exists for its account only; another account's id is unknown.
    let state = app.state();
    let source = state.extensions.binding_sources.iter().find(|s| s.key() == "connection_id").unwrap();
    assert!(source.exists(state, u.id.parse().unwrap(), c.connection_id.parse().unwrap()).await.unwrap());
    let other = app.user().await;
    assert!(!source.exists(state, other.id.parse().unwrap(), c.connection_id.parse().unwrap()).await.unwrap());
    assert!(source_value(app, &other.id, &c.connection_id).await.is_none());

    // A second sign-in renews the same connection (bindings naming it keep working).
    let mut browser = signed_in(app, u).await;
    let page = connect(app, &mut browser, "idp").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    let list = app.get("/api/connections", &u.key).await;
    assert_eq!(list.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(list.body["data"][0]["id"], c.connection_id.as_str());
    let renewed = source_value(app, &u.id, &c.connection_id).await.unwrap();
    assert_ne!(renewed.value, v.value);

    // With the flag off the source has nothing to give.
    set_flag(app, false).await;
    assert!(source_value(app, &u.id, &c.connection_id).await.is_none());
}

async fn a_bad_state_is_refused(b: Backend) {
    let app = app(b).await;
    let idp = Idp::start(&format!("{}/connections/idp/callback", app.base), 3600).await;
    let u = app.user().await;
    discovered_provider(&app, &u, "idp", &idp.issuer).await;
    let mut browser = signed_in(&app, &u).await;

    // No sign-in under way with this state.
    let r = browser.get("/connections/idp/callback?code=abc&state=forged").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text);
    assert!(r.text.contains("Sign-in expired"), "{}", r.text);

    // A real answer whose state was tampered with.
    let r = browser.get("/connections/idp/start").await;
    let back = through_provider(&app, &acs_testkit::browser::location(&r)).await;
    let mut url = reqwest::Url::parse(&back).unwrap();
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| {
            let v = if k == "state" { format!("{v}x") } else { v.into_owned() };
            (k.into_owned(), v)
        })
        .collect();
    url.query_pairs_mut().clear().extend_pairs(pairs);
    let r = browser.get(&local(&app, url.as_str())).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text);
    // The genuine answer works once; a replay is refused.
    let r = browser.get(&local(&app, &back)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let r = browser.get(&local(&app, &back)).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text);

    // Another person's browser cannot finish someone's sign-in.
    let r = browser.get("/connections/idp/start").await;
    let back = through_provider(&app, &acs_testkit::browser::location(&r)).await;
    let other = app.user().await;
    let mut theirs = signed_in(&app, &other).await;
    let r = theirs.get(&local(&app, &back)).await;
    assert!(r.status == StatusCode::BAD_REQUEST || r.status == StatusCode::NOT_FOUND, "{}", r.text);
    assert_eq!(app.get("/api/connections", &other.key).await.body["data"], json!([]));

    // Without a session the pages send the person to sign in.
    let r = Browser::new(&app).get("/connections/idp/start").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert!(acs_testkit::browser::location(&r).starts_with("/login?next="));
}

async fn a_refusal_at_the_provider_is_a_page(b: Backend) {
    let app = app(b).await;
    let idp = Idp::start(&format!("{}/connections/idp/callback", app.base), 3600).await;
    let u = app.user().await;
    discovered_provider(&app, &u, "idp", &idp.issuer).await;
    let mut browser = signed_in(&app, &u).await;
    let r = browser.get("/connections/idp/start").await;
    let to = reqwest::Url::parse(&acs_testkit::browser::location(&r)).unwrap();
    let state = to.query_pairs().find(|(k, _)| k == "state").unwrap().1.into_owned();
    // The provider answers an error (the person denied access).
    let q = form_urlencoded::Serializer::new(String::new())
        .append_pair("error", "access_denied")
        .append_pair("error_description", "End-User aborted interaction")
        .append_pair("state", &state)
        .finish();
    let r = browser.get(&format!("/connections/idp/callback?{q}")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text);
    assert!(r.text.contains("access_denied"), "{}", r.text);
    assert_eq!(app.get("/api/connections", &u.key).await.body["data"], json!([]));

    // A code the provider never issued: its token endpoint refuses it.
    let r = browser.get("/connections/idp/start").await;
    let to = reqwest::Url::parse(&acs_testkit::browser::location(&r)).unwrap();
    let state = to.query_pairs().find(|(k, _)| k == "state").unwrap().1.into_owned();
    let r = browser.get(&format!("/connections/idp/callback?code=made-up&state={state}")).await;
    assert_eq!(r.status, StatusCode::BAD_GATEWAY, "{}", r.text);
    assert!(r.text.contains("invalid_grant"), "{}", r.text);

    // An answer naming another issuer (RFC 9207) is a mix-up, refused.
    let r = browser.get("/connections/idp/start").await;
    let to = reqwest::Url::parse(&acs_testkit::browser::location(&r)).unwrap();
    let state = to.query_pairs().find(|(k, _)| k == "state").unwrap().1.into_owned();
    let q = form_urlencoded::Serializer::new(String::new())
        .append_pair("code", "x")
        .append_pair("state", &state)
        .append_pair("iss", "https://evil.example")
        .finish();
    let r = browser.get(&format!("/connections/idp/callback?{q}")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text);
    assert!(r.text.contains("evil.example"), "{}", r.text);
    assert_eq!(app.get("/api/connections", &u.key).await.body["data"], json!([]));

    // An unknown provider.
    let r = browser.get("/connections/nope/start").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.text);
}

async fn deleting_a_connection_revokes_it_at_the_provider(b: Backend) {
    let c = connected(b, 3600, &[]).await;
    let (app, u) = (&c.app, &c.user);
    let token = source_value(app, &u.id, &c.connection_id).await.unwrap().value;
    assert!(c.idp.token_active(&token).await);
    let other = app.user().await;
    assert_error(
        &app.delete(&format!("/api/connections/{}", c.connection_id), &other.key).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    let r = app.delete(&format!("/api/connections/{}", c.connection_id), &u.key).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(app.get("/api/connections", &u.key).await.body["data"], json!([]));
    assert!(source_value(app, &u.id, &c.connection_id).await.is_none());
    // Revoking the refresh token ended the grant, its access token with it.
    assert_eq!(c.idp.stats().await["revocations"], 1, "{}", c.idp.stats().await);
    assert!(!c.idp.token_active(&token).await);
}

async fn a_provider_without_endpoints_is_a_page(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let r = app
        .post(
            "/api/connection-providers",
            &u.key,
            json!({"slug": "later", "name": "Later", "issuer": "https://id.example", "client_id": "c",
                   "client_secret": "s", "hosts": ["api.example.com"]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let mut browser = signed_in(&app, &u).await;
    let r = browser.get("/connections/later/start").await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);
    assert!(r.text.contains("discover"), "{}", r.text);
}

async fn account_deletion_removes_everything(b: Backend) {
    let c = connected(b, 3600, &[]).await;
    let (app, u) = (&c.app, &c.user);
    let r = app.request(reqwest::Method::DELETE, "/api/account", Some(&u.key), Some(json!({"confirm": u.email}))).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    for table in ["connections", "connection_providers", "connection_attempts"] {
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
            .fetch_one(&app.state().db.pool)
            .await
            .unwrap();
        assert_eq!(n, 0, "{table}");
    }
}

async fn an_export_lists_connections_without_secrets(b: Backend) {
    let c = connected(b, 3600, &[]).await;
    let (app, u) = (&c.app, &c.user);
    let token = source_value(app, &u.id, &c.connection_id).await.unwrap().value;
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
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
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
    assert_eq!(doc["connection_providers"][0]["slug"], "idp", "{text}");
    assert_eq!(doc["connections"][0]["id"], c.connection_id.as_str());
    assert_eq!(doc["connections"][0]["status"], "active");
    assert!(!text.contains(&token), "no access token");
    assert!(!text.contains(CLIENT_SECRET), "no client secret");
    assert!(!text.contains("sealed"), "no sealed value");
}
