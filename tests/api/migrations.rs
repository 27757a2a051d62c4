//! Migration history across the move of extension tables out of core's
//! migrations (docs/extensions.md): a database migrated before the move keeps
//! its rows and starts on the new history.

use reqwest::StatusCode;
use serde_json::json;

use crate::both;
use crate::common::{Backend, spawn};

both!(a_database_from_before_the_move_keeps_its_rows);

/// sha384 of core's first migration before the support table left it, per dialect.
fn old_checksum(b: Backend) -> Vec<u8> {
    let hex = match b {
        Backend::Sqlite => {
            "023ae3a659b5353edefc367c9bd0badd838fd936c42374d29e95f22f0d68fc0e873be7035fa9cec895a5ed2a49fc8024"
        }
        Backend::Postgres => {
            "d0cfd1ea9b3ccafb81735759ac1f97bf1270e1fd2681f215a9e17d50bd12a64d144e3347588ee7524a25eded7437504b"
        }
    };
    hex::decode(hex).unwrap()
}

async fn a_database_from_before_the_move_keeps_its_rows(b: Backend) {
    let mut app = spawn(b).await;
    let u = app.user().await;
    let r = app.post("/api/webhooks", &u.key, json!({"url": "https://hooks.example.com/in"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let r = app.post("/api/support/reports", &u.key, json!({"category": "idea", "message": "dark mode"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);

    // Rewrite the history as the previous release left it: core's migration 1 with its old
    // text, core's migration 5 creating the webhook tables, no extension histories.
    let pool = app.state().db.pool.clone();
    let now: Vec<u8> =
        sqlx::query_scalar("SELECT checksum FROM _sqlx_migrations WHERE version = 1").fetch_one(&pool).await.unwrap();
    sqlx::query("UPDATE _sqlx_migrations SET checksum = $1 WHERE version = 1")
        .bind(old_checksum(b))
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, installed_on, success, checksum, execution_time) \
         SELECT 5, 'webhooks', installed_on, success, checksum, execution_time FROM _sqlx_migrations WHERE version = 4",
    )
    .execute(&pool)
    .await
    .unwrap();
    for table in ["_sqlx_migrations_webhooks", "_sqlx_migrations_support"] {
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP TABLE {table}"))).execute(&pool).await.unwrap();
    }

    app.restart().await;
    let pool = app.state().db.pool.clone();
    let checksum: Vec<u8> =
        sqlx::query_scalar("SELECT checksum FROM _sqlx_migrations WHERE version = 1").fetch_one(&pool).await.unwrap();
    assert_eq!(checksum, now, "the old text's checksum is replaced by the new one");
    for table in ["_sqlx_migrations_webhooks", "_sqlx_migrations_support"] {
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(n, 1, "{table} records the extension's migration");
    }
    assert_eq!(app.get("/api/webhooks", &u.key).await.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(app.get("/api/support/reports", &u.key).await.body["data"].as_array().unwrap().len(), 1);

    // Any other checksum is still refused.
    sqlx::query("UPDATE _sqlx_migrations SET checksum = $1 WHERE version = 2")
        .bind(vec![0u8; 48])
        .execute(&pool)
        .await
        .unwrap();
    let err = acs::core::extension::migrate(&app.state().db).await.unwrap_err().to_string();
    assert!(err.contains('2'), "{err}");
}
