//! Secret binding rows: every query scoped to the account.

use sqlx::any::AnyRow;
use sqlx::{Any, Row};
use uuid::Uuid;

use super::model::{Binding, Source};
use crate::db::{Db, RowExt};
use crate::time_fmt::from_micros;

const COLUMNS: &str =
    "id, name, host, header, template, source_kind, source_id, source_key, enabled, created_at, updated_at";

fn from_row(row: &AnyRow) -> Result<Binding, sqlx::Error> {
    let kind: String = row.try_get("source_kind")?;
    let id = row.uuid("source_id")?;
    let key: Option<String> = row.try_get("source_key")?;
    let source = Source::from_parts(&kind, id, key)
        .ok_or_else(|| sqlx::Error::Decode(format!("secret binding source `{kind}`").into()))?;
    Ok(Binding {
        id: row.uuid("id")?,
        name: row.try_get("name")?,
        host: row.try_get("host")?,
        header: row.try_get("header")?,
        template: row.try_get("template")?,
        source,
        enabled: row.flag("enabled")?,
        inserted_at: from_micros(row.try_get("created_at")?),
        updated_at: from_micros(row.try_get("updated_at")?),
    })
}

/// The account's bindings by name.
pub async fn list(db: &Db, account_id: Uuid) -> Result<Vec<Binding>, sqlx::Error> {
    let sql =
        sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM secret_bindings WHERE account_id = $1 ORDER BY name, id"));
    let rows = sqlx::query(sql).bind(account_id.to_string()).fetch_all(&db.pool).await?;
    rows.iter().map(from_row).collect()
}

pub async fn get(db: &Db, account_id: Uuid, id: Uuid) -> Result<Option<Binding>, sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM secret_bindings WHERE id = $1 AND account_id = $2"));
    let row = sqlx::query(sql).bind(id.to_string()).bind(account_id.to_string()).fetch_optional(&db.pool).await?;
    row.as_ref().map(from_row).transpose()
}

/// Binds what a change writes, in the order of [`WRITTEN`].
fn bind_written<'q>(
    q: sqlx::query::Query<'q, Any, sqlx::any::AnyArguments>,
    b: &Binding,
) -> sqlx::query::Query<'q, Any, sqlx::any::AnyArguments> {
    let (kind, id, key) = b.source.parts();
    q.bind(b.name.clone())
        .bind(b.host.clone())
        .bind(b.header.clone())
        .bind(b.template.clone())
        .bind(kind.to_owned())
        .bind(id.to_string())
        .bind(key.map(str::to_owned))
        .bind(i32::from(b.enabled))
        .bind(crate::time_fmt::to_micros(b.updated_at))
}

/// The columns a create or an update writes, as `$1`..`$9`.
const WRITTEN: &str = "name, host, header, template, source_kind, source_id, source_key, enabled, updated_at";

pub async fn insert(
    tx: &mut sqlx::Transaction<'static, Any>,
    account_id: Uuid,
    b: &Binding,
) -> Result<(), sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!(
        "INSERT INTO secret_bindings ({WRITTEN}, id, account_id, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
    ));
    bind_written(sqlx::query(sql), b)
        .bind(b.id.to_string())
        .bind(account_id.to_string())
        .bind(crate::time_fmt::to_micros(b.inserted_at))
        .execute(&mut **tx)
        .await?;
    Ok(())
}

pub async fn update(
    tx: &mut sqlx::Transaction<'static, Any>,
    account_id: Uuid,
    b: &Binding,
) -> Result<(), sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!(
        "UPDATE secret_bindings SET ({WRITTEN}) = ($1, $2, $3, $4, $5, $6, $7, $8, $9) WHERE id = $10 AND account_id = $11"
    ));
    bind_written(sqlx::query(sql), b).bind(b.id.to_string()).bind(account_id.to_string()).execute(&mut **tx).await?;
    Ok(())
}

pub async fn delete(tx: &mut sqlx::Transaction<'static, Any>, account_id: Uuid, id: Uuid) -> Result<bool, sqlx::Error> {
    let done = sqlx::query("DELETE FROM secret_bindings WHERE id = $1 AND account_id = $2")
        .bind(id.to_string())
        .bind(account_id.to_string())
        .execute(&mut **tx)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// Whether a name is taken by another binding of the account.
pub async fn name_taken(db: &Db, account_id: Uuid, name: &str, except: Option<Uuid>) -> Result<bool, sqlx::Error> {
    let row = sqlx::query("SELECT id FROM secret_bindings WHERE account_id = $1 AND name = $2")
        .bind(account_id.to_string())
        .bind(name.to_owned())
        .fetch_optional(&db.pool)
        .await?;
    Ok(match row {
        Some(r) => Some(r.uuid("id")?) != except,
        None => false,
    })
}
