//! The broker CAs as stored: created on first use, the private key sealed
//! with the master key (`secrets`), rotated by `acs broker rotate-ca`. The
//! newest unretired CA signs for machines started now; a machine keeps the
//! one it started with (`sandboxes.broker_ca_id`) until it stops.

use sqlx::Row;
use uuid::Uuid;

use crate::db::{Db, RowExt};
use crate::egress::broker::ca::{self, Ca};
use crate::time_fmt::now_micros;

#[derive(Debug, thiserror::Error)]
pub enum CaStoreError {
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    #[error("broker CA {0}: its key does not open (was its master key removed?)")]
    Sealed(Uuid),
    #[error(transparent)]
    Ca(#[from] ca::CaError),
}

fn aad(id: Uuid) -> String {
    format!("broker_ca:{id}")
}

/// The id of the CA machines started now trust, created when there is none.
pub async fn current_id(db: &Db, crypto: &crate::secrets::Crypto) -> Result<Uuid, CaStoreError> {
    if let Some(id) = newest(db).await? {
        return Ok(id);
    }
    create(db, crypto).await?;
    // Two replicas may create one each at first start: both then use the newest.
    newest(db).await?.ok_or(CaStoreError::Db(sqlx::Error::RowNotFound))
}

async fn newest(db: &Db) -> Result<Option<Uuid>, sqlx::Error> {
    let row =
        sqlx::query("SELECT id FROM broker_cas WHERE retired_at IS NULL ORDER BY created_at DESC, id DESC LIMIT 1")
            .fetch_optional(&db.pool)
            .await?;
    row.map(|r| r.uuid("id")).transpose()
}

/// Makes a new CA, which machines started from now on trust; older ones are
/// marked retired (machines that started with them keep them).
pub async fn create(db: &Db, crypto: &crate::secrets::Crypto) -> Result<Uuid, CaStoreError> {
    let id = Uuid::now_v7();
    let name = format!("acs broker CA {}", &id.simple().to_string()[..12]);
    let new = ca::generate(&name)?;
    let (master_key_id, sealed) =
        crypto.seal_deployment(&aad(id), new.key_pem.as_bytes()).map_err(|_| CaStoreError::Sealed(id))?;
    let at = now_micros();
    let mut tx = db.begin().await?;
    sqlx::query("UPDATE broker_cas SET retired_at = $1 WHERE retired_at IS NULL").bind(at).execute(&mut *tx).await?;
    sqlx::query(
        "INSERT INTO broker_cas (id, name, cert_pem, master_key_id, key_sealed, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(id.to_string())
    .bind(name)
    .bind(new.cert_pem)
    .bind(master_key_id)
    .bind(sealed)
    .bind(at)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(id)
}

/// A stored CA, ready to issue leaves.
pub async fn load(db: &Db, crypto: &crate::secrets::Crypto, id: Uuid) -> Result<Option<Ca>, CaStoreError> {
    let row = sqlx::query("SELECT name, cert_pem, master_key_id, key_sealed FROM broker_cas WHERE id = $1")
        .bind(id.to_string())
        .fetch_optional(&db.pool)
        .await?;
    let Some(row) = row else { return Ok(None) };
    let (name, cert, master, sealed): (String, String, String, String) =
        (row.try_get("name")?, row.try_get("cert_pem")?, row.try_get("master_key_id")?, row.try_get("key_sealed")?);
    let key = crypto.open_deployment(&master, &aad(id), &sealed).map_err(|_| CaStoreError::Sealed(id))?;
    let key = String::from_utf8(key).map_err(|_| CaStoreError::Sealed(id))?;
    Ok(Some(Ca::load(&name, &cert, &key)?))
}

/// Every CA, newest first: (id, certificate PEM, created_at, retired_at).
pub async fn list(db: &Db) -> Result<Vec<(Uuid, String, i64, Option<i64>)>, sqlx::Error> {
    let rows =
        sqlx::query("SELECT id, cert_pem, created_at, retired_at FROM broker_cas ORDER BY created_at DESC, id DESC")
            .fetch_all(&db.pool)
            .await?;
    rows.iter()
        .map(|r| Ok((r.uuid("id")?, r.try_get("cert_pem")?, r.try_get("created_at")?, r.try_get("retired_at")?)))
        .collect()
}
