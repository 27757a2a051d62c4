use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::both;
use crate::common::{Backend, assert_error, spawn, spawn_with};

both!(health_probes, readiness_fails_when_the_database_is_gone, audit_paging, catalog, metrics_when_enabled);

async fn health_probes(b: Backend) {
    let app = spawn(b).await;
    let r = app.request(Method::GET, "/api/health/ready", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body, json!({"status": "ok", "checks": {"database": "ok"}}));
    let r = app.request(Method::GET, "/api/health/live", None, None).await;
    assert_eq!(r.body["status"], "ok");
    // Every answer carries a request id, also found in the server's log lines.
    let again = app.request(Method::GET, "/api/health/live", None, None).await;
    let (a, b) = (&r.headers["x-request-id"], &again.headers["x-request-id"]);
    assert!(!a.is_empty() && a != b, "{a:?} {b:?}");
    // A caller's own id is kept.
    let own = app
        .http
        .get(format!("{}/api/health/live", app.base))
        .header("x-request-id", "trace-me-1")
        .send()
        .await
        .unwrap();
    assert_eq!(own.headers()["x-request-id"], "trace-me-1");
}

async fn readiness_fails_when_the_database_is_gone(b: Backend) {
    let app = spawn(b).await;
    match b {
        Backend::Sqlite => {
            let path = app.db_url.trim_start_matches("sqlite://").to_owned();
            // Overwritten in place, never shortened: the server maps `-shm`, and a
            // mapped file cut short kills the whole test process with SIGBUS.
            for suffix in ["", "-wal", "-shm"] {
                use std::io::Write;
                let garbage = b"this is not a database, not at all. ".repeat(2000);
                if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(format!("{path}{suffix}")) {
                    f.write_all(&garbage).unwrap();
                }
            }
        }
        Backend::Postgres => {
            use sqlx::Connection;
            let name = app.db_url.rsplit('/').next().unwrap().to_owned();
            let base =
                std::env::var("ACS_TEST_POSTGRES").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into());
            let mut admin = sqlx::PgConnection::connect(&format!("{base}/test")).await.unwrap();
            sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE {name} WITH (FORCE)")))
                .execute(&mut admin)
                .await
                .unwrap();
        }
    }
    let r = app.request(Method::GET, "/api/health/ready", None, None).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.text);
    assert_eq!(r.body, json!({"status": "error", "checks": {"database": "error"}}));
}

async fn audit_paging(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    for i in 0..5 {
        app.post("/api/keys", &u.key, json!({"name": format!("k{i}")})).await;
    }
    // registered, login, 5 key creations = 7 records.
    let r = app.get("/api/audit?limit=3", &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let page = r.body["data"].as_array().unwrap();
    assert_eq!(page.len(), 3);
    assert_eq!(page[0]["action"], "api_key.created");
    assert_eq!(page[0]["actor"]["type"], "api_key");
    assert_eq!(page[0]["ip"], "127.0.0.1");
    assert_eq!(r.body["meta"]["has_more"], true);
    let mut seen = page.len();
    let mut cursor = r.body["meta"]["next_cursor"].as_i64().unwrap();
    loop {
        let r = app.get(&format!("/api/audit?limit=3&before={cursor}"), &u.key).await;
        let page = r.body["data"].as_array().unwrap();
        seen += page.len();
        if !r.body["meta"]["has_more"].as_bool().unwrap() {
            assert_eq!(page.last().unwrap()["action"], "account.registered");
            break;
        }
        cursor = r.body["meta"]["next_cursor"].as_i64().unwrap();
    }
    assert_eq!(seen, 7);
    for bad in ["limit=0", "limit=501", "limit=x", "before=abc"] {
        let r = app.get(&format!("/api/audit?{bad}"), &u.key).await;
        assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    }
    assert_eq!(app.get("/api/audit?limit=500", &u.key).await.status, StatusCode::OK);
    let r = app.get("/api/audit?before=1", &u.key).await;
    assert_eq!(r.body["data"].as_array().unwrap().len(), 0);
    assert_eq!(r.body["meta"]["next_cursor"], serde_json::Value::Null);
}

async fn catalog(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let r = app.get("/api/catalog", &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let d = &r.body["data"];
    // `acp` and the named runtimes installed (tests/api/runtimes.rs installs some).
    assert_eq!(d["runtimes"][0], "acp");
    assert_eq!(d["sandbox_providers"], json!({"enabled": ["local"], "default": "local"}));
    assert_eq!(d["sandbox_api_access"], json!(["owner", "none"]));
    assert!(d["first_request"]["curl"].as_str().unwrap().contains("/api/conversations"));
    let r = app.request(Method::GET, "/api/catalog", None, None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

async fn metrics_when_enabled(b: Backend) {
    let off = spawn(b).await;
    assert_eq!(off.http.get(format!("{}/metrics", off.base)).send().await.unwrap().status(), StatusCode::NOT_FOUND);

    let app = spawn_with(b, &[("metrics.enabled", json!(true))]).await;
    let u = app.user().await;
    app.get("/api/auth/me", &u.key).await;
    let text = app.http.get(format!("{}/metrics", app.base)).send().await.unwrap().text().await.unwrap();
    assert!(text.contains("acs_http_requests_total{method=\"GET\",route=\"/api/auth/me\",status=\"200\"} 1"), "{text}");
    assert!(text.contains("acs_http_request_duration_seconds_bucket{method=\"POST\",route=\"/api/auth/login\",status=\"201\",le=\"+Inf\"} 1"), "{text}");
}
