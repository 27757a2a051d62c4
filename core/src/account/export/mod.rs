//! Account exports (DESIGN 9.3): asked for over the API, written by a
//! background worker into the database as ordered chunks (so any replica
//! serves the download), streamed out, and swept once expired.

pub mod content;
pub mod writer;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Serialize;
use sqlx::Row;
use sqlx::any::AnyRow;
use time::OffsetDateTime;
use tokio::sync::Notify;
use utoipa::ToSchema;
use uuid::Uuid;

use self::writer::{DbChunks, LEASE_MICROS, Lost, Writer};
use crate::audit::{self, Actor};
use crate::auth::Principal;
use crate::boxed::BoxError;
use crate::db::{Backend, RowExt};
use crate::error::{ApiError, ApiResult};
use crate::http::{Data, Path, ok};
use crate::state::AppState;
use crate::time_fmt::{from_micros, now_micros};

/// An export row stays listed this long after it expired (its document is gone already).
const KEEP_EXPIRED_MICROS: i64 = 7 * 24 * 3600 * 1_000_000;
/// How often the worker looks for work another replica asked for, and sweeps.
const POLL: Duration = Duration::from_secs(1);
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// `pending` until the worker wrote it; then `completed` or `failed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExportStatus {
    Pending,
    Completed,
    Failed,
}

impl ExportStatus {
    fn parse(s: &str) -> ExportStatus {
        match s {
            "completed" => ExportStatus::Completed,
            "failed" => ExportStatus::Failed,
            _ => ExportStatus::Pending,
        }
    }
}

/// An export of the account's data; the document is fetched from its download.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Export {
    pub id: Uuid,
    pub status: ExportStatus,
    /// Uncompressed size of the document; null until completed.
    pub byte_size: Option<i64>,
    /// Completed and unexpired: the only state the download serves.
    pub downloadable: bool,
    pub error: Option<String>,
    /// When the download stops being served; null while pending.
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

const COLUMNS: &str = "id, status, byte_size, error, expires_at, created_at, updated_at";

fn from_row(r: &AnyRow, now: i64) -> Result<Export, sqlx::Error> {
    let status = ExportStatus::parse(&r.try_get::<String, _>("status")?);
    let expires_at: Option<i64> = r.try_get("expires_at")?;
    Ok(Export {
        id: r.uuid("id")?,
        status,
        byte_size: r.try_get("byte_size")?,
        downloadable: downloadable(status, expires_at, now),
        error: r.try_get("error")?,
        expires_at: expires_at.map(from_micros),
        inserted_at: from_micros(r.try_get("created_at")?),
        updated_at: from_micros(r.try_get("updated_at")?),
    })
}

/// Whether the download serves the document now.
pub fn downloadable(status: ExportStatus, expires_at: Option<i64>, now: i64) -> bool {
    status == ExportStatus::Completed && expires_at.is_some_and(|e| e > now)
}

/// What the download answers for an export in this state (spec 2.8, DESIGN 9.3).
pub fn download_refusal(status: ExportStatus, expires_at: Option<i64>, now: i64) -> Option<ApiError> {
    match status {
        ExportStatus::Completed if downloadable(status, expires_at, now) => None,
        ExportStatus::Completed => {
            Some(ApiError::new(StatusCode::GONE, "export_expired", "The export expired; ask for a new one."))
        }
        ExportStatus::Pending | ExportStatus::Failed => Some(ApiError::new(
            StatusCode::NOT_FOUND,
            "export_not_ready",
            "The export is not ready: it is still being written, or it failed.",
        )),
    }
}

/// The worker's doorbell on this server.
#[derive(Default)]
struct Doorbell(Notify);

fn wake(state: &AppState) {
    state.get_or_put(Doorbell::default).0.notify_one();
}

async fn find(state: &AppState, account_id: Uuid, id: Uuid) -> ApiResult<Export> {
    let sql = format!("SELECT {COLUMNS} FROM account_exports WHERE id = $1 AND account_id = $2");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(id.to_string())
        .bind(account_id.to_string())
        .fetch_optional(&state.db.pool)
        .await?
        .ok_or_else(|| ApiError::not_found("Export"))?;
    Ok(from_row(&row, now_micros())?)
}

/// Asks for an export of the account's data; a worker writes it (poll the export, then download it).
#[utoipa::path(post, path = "/api/account/exports", operation_id = "createExport", tag = "account",
    responses((status = 202, description = "Accepted; `pending` until written", body = Data<Export>)))]
async fn create(State(state): State<AppState>, p: Principal) -> ApiResult<(StatusCode, Data<Export>)> {
    p.require_full()?;
    let id = Uuid::now_v7();
    let now = now_micros();
    let mut tx = state.db.begin().await?;
    sqlx::query(
        "INSERT INTO account_exports (id, account_id, status, created_at, updated_at) VALUES ($1, $2, 'pending', $3, $3)",
    )
    .bind(id.to_string())
    .bind(p.account_id.to_string())
    .bind(now)
    .execute(&mut *tx)
    .await?;
    audit::record(&mut *tx, &Actor::key(&p), "account.export_requested", Some(("export", id))).await?;
    // Read back inside the transaction: once it commits, a worker may finish
    // a small export before this answer is written, and the answer is the
    // export as requested.
    let sql = format!("SELECT {COLUMNS} FROM account_exports WHERE id = $1");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id.to_string()).fetch_one(&mut *tx).await?;
    let export = from_row(&row, now)?;
    tx.commit().await?;
    wake(&state);
    Ok((StatusCode::ACCEPTED, ok(export)))
}

/// Lists the account's exports, newest first.
#[utoipa::path(get, path = "/api/account/exports", operation_id = "listExports", tag = "account",
    responses((status = 200, description = "The account's exports", body = Data<Vec<Export>>)))]
async fn list(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<Export>>> {
    p.require_full()?;
    let sql = format!(
        "SELECT {COLUMNS} FROM account_exports WHERE account_id = $1 ORDER BY created_at DESC, id DESC LIMIT 100"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(p.account_id.to_string()).fetch_all(&state.db.pool).await?;
    let now = now_micros();
    Ok(ok(rows.iter().map(|r| from_row(r, now)).collect::<Result<_, _>>()?))
}

/// Reads one export.
#[utoipa::path(get, path = "/api/account/exports/{id}", operation_id = "getExport", tag = "account",
    params(("id" = Uuid, Path)),
    responses((status = 200, description = "The export", body = Data<Export>),
        (status = 404, description = "No such export", body = crate::error::ErrorBody)))]
async fn get_one(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<Data<Export>> {
    p.require_full()?;
    Ok(ok(find(&state, p.account_id, id).await?))
}

/// Downloads the export's document (JSON), streamed.
#[utoipa::path(get, path = "/api/account/exports/{id}/download", operation_id = "downloadExport", tag = "account",
    params(("id" = Uuid, Path)),
    responses((status = 200, description = "The document", content_type = "application/json", body = Object),
        (status = 404, description = "`not_found`, or `export_not_ready` while pending or failed", body = crate::error::ErrorBody),
        (status = 410, description = "`export_expired`", body = crate::error::ErrorBody)))]
async fn download(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<Response> {
    p.require_full()?;
    let export = find(&state, p.account_id, id).await?;
    let now = now_micros();
    let expires = export.expires_at.map(crate::time_fmt::to_micros);
    if let Some(refusal) = download_refusal(export.status, expires, now) {
        return Err(refusal);
    }
    // One chunk in memory at a time, read as the client takes them.
    let chunks = futures::stream::try_unfold((state.clone(), 0i64), move |(state, seq)| async move {
        let row = sqlx::query("SELECT data FROM account_export_chunks WHERE export_id = $1 AND seq = $2")
            .bind(id.to_string())
            .bind(seq)
            .fetch_optional(&state.db.pool)
            .await?;
        Ok::<_, sqlx::Error>(match row {
            Some(r) => Some((Bytes::from(r.try_get::<Vec<u8>, _>("data")?), (state, seq + 1))),
            None => None,
        })
    });
    let mut res = Body::from_stream(chunks).into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(size) = export.byte_size {
        h.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
    }
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"acs-export-{id}.json\"")) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(res)
}

pub fn router() -> utoipa_axum::router::OpenApiRouter<AppState> {
    use utoipa_axum::routes;
    utoipa_axum::router::OpenApiRouter::new()
        .routes(routes!(create, list))
        .routes(routes!(get_one))
        .routes(routes!(download))
}

/// A claimed export: which, whose, and the token fencing what the worker writes.
struct Job {
    id: Uuid,
    account_id: Uuid,
    claim: String,
}

/// Claims the oldest pending export nobody holds (or whose holder's lease ran out). On
/// PostgreSQL rows another replica is claiming are skipped; SQLite's single writer makes the
/// statement exclusive.
async fn claim(state: &AppState) -> Result<Option<Job>, sqlx::Error> {
    let now = now_micros();
    let token = Uuid::new_v4().to_string();
    let lock = if state.db.backend == Backend::Postgres { "FOR UPDATE SKIP LOCKED" } else { "" };
    let sql = format!(
        "UPDATE account_exports SET claim = $1, lease_until = $2 WHERE id IN (\
         SELECT id FROM account_exports WHERE status = 'pending' AND (lease_until IS NULL OR lease_until < $3) \
         ORDER BY created_at LIMIT 1 {lock})"
    );
    let claimed = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(token.clone())
        .bind(now + LEASE_MICROS)
        .bind(now)
        .execute(&state.db.pool)
        .await?;
    if claimed.rows_affected() == 0 {
        return Ok(None);
    }
    let row = sqlx::query("SELECT id, account_id FROM account_exports WHERE claim = $1")
        .bind(token.clone())
        .fetch_optional(&state.db.pool)
        .await?;
    row.map(|r| Ok(Job { id: r.uuid("id")?, account_id: r.uuid("account_id")?, claim: token })).transpose()
}

/// Writes a claimed export and records how it ended.
async fn run(state: &AppState, job: &Job) -> Result<(), BoxError> {
    // A holder that died may have left chunks: the document starts over.
    sqlx::query("DELETE FROM account_export_chunks WHERE export_id = $1")
        .bind(job.id.to_string())
        .execute(&state.db.pool)
        .await?;
    let mut w = Writer::new(DbChunks { state: state.clone(), export_id: job.id, claim: job.claim.clone() });
    let written = match content::write(state, job.account_id, &mut w).await {
        Ok(()) => w.finish().await,
        Err(e) => Err(e),
    };
    let now = now_micros();
    let expires = now + i64::try_from(state.config().exports.ttl_hours).unwrap_or(24) * 3600 * 1_000_000;
    match written {
        Ok(size) => {
            let done = sqlx::query(
                "UPDATE account_exports SET status = 'completed', byte_size = $1, expires_at = $2, claim = NULL, \
                 lease_until = NULL, updated_at = $3 WHERE id = $4 AND claim = $5 AND status = 'pending'",
            )
            .bind(i64::try_from(size).unwrap_or(i64::MAX))
            .bind(expires)
            .bind(now)
            .bind(job.id.to_string())
            .bind(job.claim.clone())
            .execute(&state.db.pool)
            .await?;
            if done.rows_affected() == 0 {
                return Err(Lost.into());
            }
            Ok(())
        }
        Err(e) if e.is::<Lost>() => Err(e),
        Err(e) => {
            tracing::error!(export = %job.id, "export failed: {e}");
            let mut tx = state.db.begin().await?;
            let failed = sqlx::query(
                "UPDATE account_exports SET status = 'failed', error = $1, expires_at = $2, claim = NULL, \
                 lease_until = NULL, updated_at = $3 WHERE id = $4 AND claim = $5 AND status = 'pending'",
            )
            .bind("The export could not be written; ask for a new one.")
            .bind(expires)
            .bind(now)
            .bind(job.id.to_string())
            .bind(job.claim.clone())
            .execute(&mut *tx)
            .await?;
            if failed.rows_affected() == 1 {
                sqlx::query("DELETE FROM account_export_chunks WHERE export_id = $1")
                    .bind(job.id.to_string())
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            Ok(())
        }
    }
}

/// Removes expired documents (the row stays, answering 410, for a week), then old rows.
pub async fn sweep(state: &AppState) -> Result<(), sqlx::Error> {
    let now = now_micros();
    sqlx::query(
        "DELETE FROM account_export_chunks WHERE export_id IN \
         (SELECT id FROM account_exports WHERE expires_at IS NOT NULL AND expires_at <= $1)",
    )
    .bind(now)
    .execute(&state.db.pool)
    .await?;
    sqlx::query("DELETE FROM account_exports WHERE expires_at IS NOT NULL AND expires_at <= $1")
        .bind(now - KEEP_EXPIRED_MICROS)
        .execute(&state.db.pool)
        .await?;
    Ok(())
}

/// Writes exports as they are asked for (this server's doorbell, or a look every second for
/// those other replicas took), sweeps expired ones, and finishes deletions cut short.
pub async fn worker(state: AppState) {
    let bell: Arc<Doorbell> = state.get_or_put(Doorbell::default);
    let mut last_sweep: Option<tokio::time::Instant> = None;
    loop {
        if last_sweep.is_none_or(|t| t.elapsed() >= SWEEP_EVERY) {
            if let Err(e) = sweep(&state).await {
                tracing::warn!("export sweep: {e}");
            }
            if let Err(e) = super::delete::finish_stale(&state).await {
                tracing::warn!("finishing account deletions: {e}");
            }
            last_sweep = Some(tokio::time::Instant::now());
        }
        loop {
            if state.shutdown.is_cancelled() {
                return;
            }
            match claim(&state).await {
                Ok(Some(job)) => {
                    if let Err(e) = run(&state, &job).await {
                        tracing::warn!(export = %job.id, "export not finished: {e}");
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!("claiming an export: {e}");
                    break;
                }
            }
        }
        tokio::select! {
            _ = state.shutdown.cancelled() => return,
            _ = bell.0.notified() => {}
            _ = tokio::time::sleep(POLL) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_completed_unexpired_export_downloads() {
        let now = 1_000;
        assert!(download_refusal(ExportStatus::Completed, Some(now + 1), now).is_none());
        let gone = download_refusal(ExportStatus::Completed, Some(now), now).unwrap();
        assert_eq!((gone.status, gone.body()["error"].as_str()), (StatusCode::GONE, Some("export_expired")));
        for status in [ExportStatus::Pending, ExportStatus::Failed] {
            let r = download_refusal(status, None, now).unwrap();
            assert_eq!((r.status, r.body()["error"].as_str()), (StatusCode::NOT_FOUND, Some("export_not_ready")));
            assert!(!downloadable(status, Some(now + 1), now));
        }
    }
}
