//! `/api/admin/support/reports`: every account's reports as an operator
//! triages them (DESIGN 9.4), newest first, with whose they are and how
//! forwarding went; a report whose forwarding gave up is sent again on
//! request. An operator route group: the admin extension's gate says who an
//! operator is.

use acs_platform::auth::Operator;
use acs_platform::db::RowExt;
use acs_platform::http::{Data, Path, Query, ok};
use acs_platform::time_fmt::now_micros;
use acs_platform::{ApiError, ApiResult, AppState};
use axum::extract::State;
use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::any::AnyRow;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::reports::{COLUMNS, Category, ReportStatus, SupportReport, from_row};

const MAX_PAGE: i64 = 100;

/// A report with what an operator needs to act on it.
#[derive(Debug, Serialize, ToSchema)]
pub struct AdminSupportReport {
    #[serde(flatten)]
    pub report: SupportReport,
    pub account_id: Uuid,
    pub account_email: String,
    /// Forwarding attempts made so far.
    pub attempts: i64,
}

/// One page of reports, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct AdminSupportReportPage {
    pub data: Vec<AdminSupportReport>,
    pub meta: AdminSupportPageMeta,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AdminSupportPageMeta {
    pub limit: i64,
    pub has_more: bool,
    /// Pass as `cursor` for the next page; null on the last.
    pub next_cursor: Option<Uuid>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AdminSupportQuery {
    /// Only reports in this state.
    #[param(value_type = Option<ReportStatus>)]
    pub status: Option<ReportStatus>,
    pub category: Option<Category>,
    /// `meta.next_cursor` of the previous page.
    pub cursor: Option<Uuid>,
    /// 1 to 100 (default 50).
    pub limit: Option<i64>,
}

/// Beside the report's own columns: forwarding attempts and whose it is.
const ADMIN_COLUMNS: &str = "attempts, account_id, (SELECT email FROM accounts WHERE accounts.id = support_reports.account_id) AS account_email";

fn admin_row(row: &AnyRow) -> Result<AdminSupportReport, sqlx::Error> {
    Ok(AdminSupportReport {
        report: from_row(row)?,
        account_id: row.uuid("account_id")?,
        account_email: row.try_get("account_email")?,
        attempts: row.try_get("attempts")?,
    })
}

/// Reports of every account, newest first, by state and category.
#[utoipa::path(get, path = "/api/admin/support/reports", operation_id = "listAdminSupportReports", tag = "support",
    params(AdminSupportQuery),
    responses((status = 200, description = "A page of reports", body = AdminSupportReportPage),
        (status = 422, description = "`validation_failed`: a bad limit or cursor", body = acs_platform::error::ErrorBody)))]
async fn list_admin_support_reports(
    State(state): State<AppState>,
    _op: Operator,
    Query(q): Query<AdminSupportQuery>,
) -> ApiResult<axum::Json<AdminSupportReportPage>> {
    let limit = q.limit.unwrap_or(50);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::invalid("limit", "must be between 1 and 100"));
    }
    // The cursor is the last report shown: the page goes on below its (time, id).
    let after = match q.cursor {
        Some(id) => {
            let at: Option<i64> = sqlx::query_scalar("SELECT created_at FROM support_reports WHERE id = $1")
                .bind(id.to_string())
                .fetch_optional(&state.db.pool)
                .await?;
            Some((at.ok_or_else(|| ApiError::invalid("cursor", "is no report's id"))?, id))
        }
        None => None,
    };
    let sql = format!(
        "SELECT {COLUMNS}, {ADMIN_COLUMNS} FROM support_reports \
         WHERE ($1 IS NULL OR status = $1) AND ($2 IS NULL OR category = $2) \
         AND ($3 IS NULL OR created_at < $3 OR (created_at = $3 AND id < $4)) \
         ORDER BY created_at DESC, id DESC LIMIT $5"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(q.status.map(|s| s.as_str()))
        .bind(q.category.map(|c| c.as_str()))
        .bind(after.map(|a| a.0))
        .bind(after.map(|a| a.1.to_string()))
        .bind(limit + 1)
        .fetch_all(&state.db.pool)
        .await?;
    let mut data = rows.iter().map(admin_row).collect::<Result<Vec<_>, _>>()?;
    let has_more = data.len() as i64 > limit;
    data.truncate(limit as usize);
    let next_cursor = if has_more { data.last().map(|r| r.report.id) } else { None };
    Ok(axum::Json(AdminSupportReportPage { data, meta: AdminSupportPageMeta { limit, has_more, next_cursor } }))
}

/// Sends a report whose forwarding gave up (or failed) again, at once.
#[utoipa::path(post, path = "/api/admin/support/reports/{id}/retry", operation_id = "retryAdminSupportReport",
    tag = "support", params(("id" = Uuid, Path)),
    responses((status = 200, description = "The report, queued for forwarding", body = Data<AdminSupportReport>),
        (status = 404, description = "No such report", body = acs_platform::error::ErrorBody),
        (status = 409, description = "`report_not_failed`: only a failed report is sent again", body = acs_platform::error::ErrorBody)))]
async fn retry_admin_support_report(
    State(state): State<AppState>,
    _op: Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<Data<AdminSupportReport>> {
    let done = sqlx::query(
        "UPDATE support_reports SET next_attempt_at = $2, lease_until = NULL WHERE id = $1 AND status = 'failed'",
    )
    .bind(id.to_string())
    .bind(now_micros())
    .execute(&state.db.pool)
    .await?;
    let report = read(&state, id).await?;
    if done.rows_affected() == 0 {
        return Err(ApiError::conflict("report_not_failed", "Only a report whose forwarding failed is sent again."));
    }
    if let Some(rt) = crate::runtime(&state) {
        rt.wake.notify_one();
    }
    Ok(ok(report))
}

async fn read(state: &AppState, id: Uuid) -> ApiResult<AdminSupportReport> {
    let sql = format!("SELECT {COLUMNS}, {ADMIN_COLUMNS} FROM support_reports WHERE id = $1");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id.to_string()).fetch_optional(&state.db.pool).await?;
    Ok(admin_row(&row.ok_or_else(|| ApiError::not_found("Support report"))?)?)
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_admin_support_reports)).routes(routes!(retry_admin_support_report))
}
