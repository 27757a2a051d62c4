//! The `servers` rows and the owner columns of `sandboxes` and `conversations`.

use uuid::Uuid;

use super::SILENCE;
use crate::db::Db;

/// What a server owns: a machine, or a conversation's running turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owned {
    Machine,
    Turn,
}

impl Owned {
    /// The table and the statuses in which a row is owned by a server.
    fn table(self) -> (&'static str, &'static str) {
        match self {
            Owned::Machine => ("sandboxes", "'pending', 'starting', 'ready'"),
            Owned::Turn => ("conversations", "'running'"),
        }
    }
}

/// Servers seen at or after this time are alive.
fn alive_since(now: i64) -> i64 {
    now - i64::try_from(SILENCE.as_micros()).unwrap_or(i64::MAX)
}

/// Records a running server: its process `pid` in `pid_scope` ([`super::pid_scope`]).
pub async fn register(db: &Db, server: Uuid, now: i64, pid_scope: &str, pid: i64) -> Result<(), sqlx::Error> {
    sqlx::query("INSERT INTO servers (id, started_at, seen_at, pid_scope, pid) VALUES ($1, $2, $2, $3, $4)")
        .bind(server.to_string())
        .bind(now)
        .bind(pid_scope)
        .bind(pid)
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// The other servers whose process ids are in `pid_scope`, with their pid.
pub async fn neighbours(db: &Db, server: Uuid, pid_scope: &str) -> Result<Vec<(Uuid, i64)>, sqlx::Error> {
    let rows: Vec<(String, i64)> = sqlx::query_as("SELECT id, pid FROM servers WHERE pid_scope = $1 AND id <> $2")
        .bind(pid_scope)
        .bind(server.to_string())
        .fetch_all(&db.pool)
        .await?;
    Ok(rows.into_iter().filter_map(|(id, pid)| Some((id.parse().ok()?, pid))).collect())
}

/// Every server seen within the silence, with where its pid means something and its pid.
pub async fn recent(db: &Db, now: i64) -> Result<Vec<(Uuid, String, i64)>, sqlx::Error> {
    let rows: Vec<(String, String, i64)> =
        sqlx::query_as("SELECT id, COALESCE(pid_scope, ''), COALESCE(pid, 0) FROM servers WHERE seen_at >= $1")
            .bind(alive_since(now))
            .fetch_all(&db.pool)
            .await?;
    Ok(rows.into_iter().filter_map(|(id, scope, pid)| Some((id.parse().ok()?, scope, pid))).collect())
}

/// Removes a gone server's row.
pub async fn forget(db: &Db, server: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM servers WHERE id = $1").bind(server.to_string()).execute(&db.pool).await?;
    Ok(())
}

/// Refreshes the server's row; false when it is missing (something removed it).
pub async fn beat(db: &Db, server: Uuid, now: i64) -> Result<bool, sqlx::Error> {
    let done = sqlx::query("UPDATE servers SET seen_at = $2 WHERE id = $1")
        .bind(server.to_string())
        .bind(now)
        .execute(&db.pool)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Removes the server's row at a clean stop, and the rows of servers gone for an hour.
pub async fn deregister(db: &Db, server: Uuid, now: i64) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM servers WHERE id = $1 OR seen_at < $2")
        .bind(server.to_string())
        .bind(alive_since(now) - 3_600_000_000)
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// Rows of `kind` whose owner is not alive at `now`, with the owner they name ("" for none).
pub async fn orphans(db: &Db, kind: Owned, now: i64) -> Result<Vec<(Uuid, String)>, sqlx::Error> {
    let (table, statuses) = kind.table();
    let sql = format!(
        "SELECT id, COALESCE(server_id, '') FROM {table} WHERE status IN ({statuses}) \
         AND (server_id IS NULL OR server_id NOT IN (SELECT id FROM servers WHERE seen_at >= $1)) ORDER BY id"
    );
    let rows: Vec<(String, String)> =
        sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(alive_since(now)).fetch_all(&db.pool).await?;
    Ok(rows.into_iter().filter_map(|(id, from)| Some((id.parse().ok()?, from))).collect())
}

/// Takes a row over from `from` (its owner as `orphans` read it): true for
/// the one server that did.
pub async fn adopt(db: &Db, kind: Owned, id: Uuid, from: &str, server: Uuid) -> Result<bool, sqlx::Error> {
    let (table, statuses) = kind.table();
    let sql = format!(
        "UPDATE {table} SET server_id = $3 WHERE id = $1 AND status IN ({statuses}) AND COALESCE(server_id, '') = $2"
    );
    let done = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(id.to_string())
        .bind(from)
        .bind(server.to_string())
        .execute(&db.pool)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// The owner of a row, when it is owned and its owner alive.
pub async fn live_owner(db: &Db, kind: Owned, id: Uuid, now: i64) -> Result<Option<Uuid>, sqlx::Error> {
    let (table, statuses) = kind.table();
    let sql = format!(
        "SELECT t.server_id FROM {table} t JOIN servers s ON s.id = t.server_id \
         WHERE t.id = $1 AND t.status IN ({statuses}) AND s.seen_at >= $2"
    );
    let owner: Option<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .bind(id.to_string())
        .bind(alive_since(now))
        .fetch_optional(&db.pool)
        .await?;
    Ok(owner.and_then(|o| o.parse().ok()))
}

/// The rows of `kind` that `server` owns (their status one of `kind`'s).
pub async fn owned_by(db: &Db, kind: Owned, server: Uuid) -> Result<Vec<Uuid>, sqlx::Error> {
    let (table, statuses) = kind.table();
    let sql = format!("SELECT id FROM {table} WHERE server_id = $1 AND status IN ({statuses})");
    let ids: Vec<String> =
        sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(server.to_string()).fetch_all(&db.pool).await?;
    Ok(ids.into_iter().filter_map(|id| id.parse().ok()).collect())
}

/// Makes `server` a machine's owner (in the transaction that starts or wakes it).
pub async fn own_machine<'e>(
    ex: impl sqlx::Executor<'e, Database = sqlx::Any>,
    id: Uuid,
    server: Uuid,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE sandboxes SET server_id = $2 WHERE id = $1")
        .bind(id.to_string())
        .bind(server.to_string())
        .execute(ex)
        .await?;
    Ok(())
}
