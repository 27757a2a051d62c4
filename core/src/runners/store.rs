//! Queries of the `runners` table.

use sqlx::any::AnyRow;
use sqlx::{Any, Row};
use uuid::Uuid;

use super::Runner;
use crate::db::{Db, RowExt};
use crate::time_fmt::{from_micros, now_micros};

const COLUMNS: &str = "id, account_id, name, hostname, root, connected_at, last_seen_at, created_at";

#[derive(Debug, Clone)]
pub struct RunnerRow {
    pub id: Uuid,
    pub account_id: Uuid,
    pub name: String,
    pub hostname: Option<String>,
    pub root: Option<String>,
    pub connected_at: Option<i64>,
    pub last_seen_at: Option<i64>,
    pub created_at: i64,
}

impl RunnerRow {
    fn from_row(row: &AnyRow) -> Result<RunnerRow, sqlx::Error> {
        Ok(RunnerRow {
            id: row.uuid("id")?,
            account_id: row.uuid("account_id")?,
            name: row.try_get("name")?,
            hostname: row.try_get("hostname")?,
            root: row.try_get("root")?,
            connected_at: row.try_get("connected_at")?,
            last_seen_at: row.try_get("last_seen_at")?,
            created_at: row.try_get("created_at")?,
        })
    }

    pub fn view(self, online: bool) -> Runner {
        Runner {
            id: self.id,
            name: self.name,
            online,
            hostname: self.hostname,
            root: self.root,
            connected_at: self.connected_at.map(from_micros),
            last_seen_at: self.last_seen_at.map(from_micros),
            inserted_at: from_micros(self.created_at),
        }
    }
}

pub async fn insert<'e>(
    ex: impl sqlx::Executor<'e, Database = Any>,
    account_id: Uuid,
    name: &str,
    token_hash: &str,
) -> Result<RunnerRow, sqlx::Error> {
    let row = RunnerRow {
        id: Uuid::now_v7(),
        account_id,
        name: name.to_owned(),
        hostname: None,
        root: None,
        connected_at: None,
        last_seen_at: None,
        created_at: now_micros(),
    };
    sqlx::query("INSERT INTO runners (id, account_id, name, token_hash, created_at) VALUES ($1, $2, $3, $4, $5)")
        .bind(row.id.to_string())
        .bind(account_id.to_string())
        .bind(row.name.clone())
        .bind(token_hash.to_owned())
        .bind(row.created_at)
        .execute(ex)
        .await?;
    Ok(row)
}

pub async fn list(db: &Db, account_id: Uuid) -> Result<Vec<RunnerRow>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM runners WHERE account_id = $1 ORDER BY created_at, id LIMIT 1000"
    ));
    let rows = sqlx::query(sql).bind(account_id.to_string()).fetch_all(&db.pool).await?;
    rows.iter().map(RunnerRow::from_row).collect()
}

pub async fn find<'e>(
    ex: impl sqlx::Executor<'e, Database = Any>,
    account_id: Uuid,
    id: Uuid,
) -> Result<Option<RunnerRow>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM runners WHERE id = $1 AND account_id = $2"));
    let row = sqlx::query(sql).bind(id.to_string()).bind(account_id.to_string()).fetch_optional(ex).await?;
    row.as_ref().map(RunnerRow::from_row).transpose()
}

/// Runners by id, whoever owns them (the sandboxes of one account name only its own).
pub async fn by_ids(db: &Db, ids: &[Uuid]) -> Result<Vec<RunnerRow>, sqlx::Error> {
    let mut out = Vec::new();
    for id in ids {
        let sql = sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM runners WHERE id = $1"));
        if let Some(row) = sqlx::query(sql).bind(id.to_string()).fetch_optional(&db.pool).await? {
            out.push(RunnerRow::from_row(&row)?);
        }
    }
    Ok(out)
}

/// The runner a token belongs to.
pub async fn by_token(db: &Db, token_hash: &str) -> Result<Option<RunnerRow>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM runners WHERE token_hash = $1"));
    let row = sqlx::query(sql).bind(token_hash.to_owned()).fetch_optional(&db.pool).await?;
    row.as_ref().map(RunnerRow::from_row).transpose()
}

pub async fn delete<'e>(
    ex: impl sqlx::Executor<'e, Database = Any>,
    account_id: Uuid,
    id: Uuid,
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM runners WHERE id = $1 AND account_id = $2")
        .bind(id.to_string())
        .bind(account_id.to_string())
        .execute(ex)
        .await?;
    Ok(())
}

/// Sandboxes on the runner that are not terminated.
pub async fn live_machines<'e>(ex: impl sqlx::Executor<'e, Database = Any>, id: Uuid) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT COUNT(*) FROM sandboxes WHERE runner_id = $1 AND status <> 'terminated'")
        .bind(id.to_string())
        .fetch_one(ex)
        .await
}

/// The machines placed on runners that are not terminated: (sandbox, runner).
pub async fn placements(db: &Db) -> Result<Vec<(Uuid, Uuid)>, sqlx::Error> {
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT id, runner_id FROM sandboxes WHERE runner_id IS NOT NULL AND status <> 'terminated'")
            .fetch_all(&db.pool)
            .await?;
    Ok(rows.into_iter().filter_map(|(s, r)| Some((s.parse().ok()?, r.parse().ok()?))).collect())
}

/// What a runner said of itself as it connected.
pub async fn connected(db: &Db, id: Uuid, hostname: &str, root: &str) -> Result<(), sqlx::Error> {
    let now = now_micros();
    sqlx::query("UPDATE runners SET hostname = $2, root = $3, connected_at = $4, last_seen_at = $4 WHERE id = $1")
        .bind(id.to_string())
        .bind(hostname.to_owned())
        .bind(root.to_owned())
        .bind(now)
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// The socket closed (or is still open: `last_seen_at` moves either way).
pub async fn seen(db: &Db, id: Uuid, still_connected: bool) -> Result<(), sqlx::Error> {
    let sql = if still_connected {
        "UPDATE runners SET last_seen_at = $2 WHERE id = $1"
    } else {
        "UPDATE runners SET last_seen_at = $2, connected_at = NULL WHERE id = $1"
    };
    sqlx::query(sql).bind(id.to_string()).bind(now_micros()).execute(&db.pool).await?;
    Ok(())
}
