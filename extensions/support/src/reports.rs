//! `/api/support/reports`: file and read problem reports.

use acs_platform::audit::{self, Actor};
use acs_platform::auth::Principal;
use acs_platform::db::RowExt;
use acs_platform::http::extract::Validator;
use acs_platform::http::{Data, Json, Path, created, ok};
use acs_platform::time_fmt::{from_micros, now_micros};
use acs_platform::{ApiError, ApiResult, AppState};
use axum::extract::State;
use axum::http::StatusCode;
use base64::Engine;
use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::any::AnyRow;
use time::OffsetDateTime;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

pub const MAX_MESSAGE: usize = 20_000;
pub const MAX_CLIENT: usize = 200;
pub const MAX_CONTEXT_BYTES: usize = 64 * 1024;
pub const MAX_SCREENSHOT_BYTES: usize = 10 * 1024 * 1024;
pub const SCREENSHOT_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Bug,
    Stuck,
    Question,
    Idea,
    Other,
}

impl Category {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Category::Bug => "bug",
            Category::Stuck => "stuck",
            Category::Question => "question",
            Category::Idea => "idea",
            Category::Other => "other",
        }
    }

    fn parse(s: &str) -> Category {
        match s {
            "bug" => Category::Bug,
            "stuck" => Category::Stuck,
            "question" => Category::Question,
            "idea" => Category::Idea,
            _ => Category::Other,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReportStatus {
    New,
    Forwarded,
    Failed,
}

impl ReportStatus {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ReportStatus::New => "new",
            ReportStatus::Forwarded => "forwarded",
            ReportStatus::Failed => "failed",
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SupportReport {
    pub id: Uuid,
    pub category: Category,
    pub message: String,
    /// `new`, then `forwarded` (with `external_url`) or `failed` (with `forward_error`; retried).
    pub status: ReportStatus,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    pub client: Option<String>,
    pub context: Option<serde_json::Value>,
    pub external_url: Option<String>,
    pub forward_error: Option<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub forwarded_at: Option<OffsetDateTime>,
    pub has_screenshot: bool,
    #[schema(value_type = Option<ScreenshotMediaType>)]
    pub screenshot_media_type: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct SupportReportRequest {
    pub category: Category,
    /// 1 to 20000 characters.
    pub message: String,
    /// The reporting client, e.g. `acs-cli/0.1` (max 200).
    pub client: Option<String>,
    /// Free-form JSON object (max 64 KB).
    pub context: Option<serde_json::Map<String, serde_json::Value>>,
    /// Base64 image, at most 10 MB decoded; needs `screenshot_media_type`.
    pub screenshot: Option<String>,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    #[schema(value_type = Option<ScreenshotMediaType>)]
    pub screenshot_media_type: Option<String>,
}

pub(crate) const COLUMNS: &str = "id, category, message, status, created_at, client, context, external_url, \
     forward_error, forwarded_at, screenshot_media_type, CASE WHEN screenshot IS NULL THEN 0 ELSE 1 END AS has_screenshot";

pub(crate) fn from_row(row: &AnyRow) -> Result<SupportReport, sqlx::Error> {
    let status: String = row.try_get("status")?;
    Ok(SupportReport {
        id: row.uuid("id")?,
        category: Category::parse(&row.try_get::<String, _>("category")?),
        message: row.try_get("message")?,
        status: match status.as_str() {
            "forwarded" => ReportStatus::Forwarded,
            "failed" => ReportStatus::Failed,
            _ => ReportStatus::New,
        },
        inserted_at: from_micros(row.try_get("created_at")?),
        client: row.try_get("client")?,
        context: row.json("context")?,
        external_url: row.try_get("external_url")?,
        forward_error: row.try_get("forward_error")?,
        forwarded_at: row.try_get::<Option<i64>, _>("forwarded_at")?.map(from_micros),
        has_screenshot: row.flag("has_screenshot")?,
        screenshot_media_type: row.try_get("screenshot_media_type")?,
    })
}

/// Checks a report request and decodes its screenshot.
pub fn validate(req: &SupportReportRequest) -> ApiResult<Option<Vec<u8>>> {
    let mut v = Validator::default();
    v.check(!req.message.trim().is_empty(), "message", "can't be blank");
    v.check(req.message.chars().count() <= MAX_MESSAGE, "message", "should be at most 20000 character(s)");
    if let Some(c) = &req.client {
        v.check(c.chars().count() <= MAX_CLIENT, "client", "should be at most 200 character(s)");
    }
    if let Some(ctx) = &req.context {
        let size = serde_json::to_vec(ctx).map(|b| b.len()).unwrap_or(usize::MAX);
        v.check(size <= MAX_CONTEXT_BYTES, "context", "should be at most 65536 bytes");
    }
    let mut bytes = None;
    match (&req.screenshot, &req.screenshot_media_type) {
        (None, None) => {}
        (Some(_), None) => v.check(false, "screenshot_media_type", "can't be blank when a screenshot is sent"),
        (None, Some(_)) => v.check(false, "screenshot", "can't be blank when screenshot_media_type is sent"),
        (Some(data), Some(media)) => {
            v.check(
                SCREENSHOT_TYPES.contains(&media.as_str()),
                "screenshot_media_type",
                "is not a supported image type",
            );
            match base64::engine::general_purpose::STANDARD.decode(data.trim()) {
                Ok(b) if b.is_empty() => v.check(false, "screenshot", "is empty"),
                Ok(b) if b.len() > MAX_SCREENSHOT_BYTES => v.check(false, "screenshot", "is over 10 MB"),
                Ok(b) => bytes = Some(b),
                Err(_) => v.check(false, "screenshot", "is not valid base64"),
            }
        }
    }
    v.finish()?;
    Ok(bytes)
}

/// Files a problem report; it is forwarded to the operator's tracker when one is configured.
#[utoipa::path(post, path = "/api/support/reports", operation_id = "createSupportReport", tag = "support", request_body = SupportReportRequest,
    responses((status = 201, description = "Filed", body = Data<SupportReport>)))]
async fn create(
    State(state): State<AppState>,
    p: Principal,
    Json(req): Json<SupportReportRequest>,
) -> ApiResult<(StatusCode, Data<SupportReport>)> {
    let screenshot = validate(&req)?;
    let id = Uuid::now_v7();
    let now = now_micros();
    let mut tx = state.db.begin().await?;
    sqlx::query(
        "INSERT INTO support_reports (id, account_id, category, message, client, context, screenshot, \
         screenshot_media_type, status, attempts, next_attempt_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'new', 0, $9, $9)",
    )
    .bind(id.to_string())
    .bind(p.account_id.to_string())
    .bind(req.category.as_str())
    .bind(req.message)
    .bind(req.client)
    .bind(req.context.map(|c| serde_json::Value::Object(c).to_string()))
    .bind(screenshot)
    .bind(req.screenshot_media_type)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    audit::record(&mut *tx, &Actor::key(&p), "support_report.created", Some(("support_report", id))).await?;
    tx.commit().await?;
    if let Some(rt) = crate::runtime(&state) {
        rt.wake.notify_one();
    }
    Ok(created(find(&state, p.account_id, id).await?))
}

async fn find(state: &AppState, account_id: Uuid, id: Uuid) -> ApiResult<SupportReport> {
    let sql = sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM support_reports WHERE id = $1 AND account_id = $2"));
    let row = sqlx::query(sql)
        .bind(id.to_string())
        .bind(account_id.to_string())
        .fetch_optional(&state.db.pool)
        .await?
        .ok_or_else(|| ApiError::not_found("Support report"))?;
    Ok(from_row(&row)?)
}

/// The account's reports, newest first.
#[utoipa::path(get, path = "/api/support/reports", operation_id = "listSupportReports", tag = "support",
    responses((status = 200, description = "Reports, newest first", body = Data<Vec<SupportReport>>)))]
async fn list(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<SupportReport>>> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM support_reports WHERE account_id = $1 ORDER BY created_at DESC, id DESC"
    ));
    let rows = sqlx::query(sql).bind(p.account_id.to_string()).fetch_all(&state.db.pool).await?;
    Ok(ok(rows.iter().map(from_row).collect::<Result<_, _>>()?))
}

/// One report.
#[utoipa::path(get, path = "/api/support/reports/{id}", operation_id = "getSupportReport", tag = "support", params(("id" = Uuid, Path)),
    responses((status = 200, body = Data<SupportReport>)))]
async fn get_one(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<Data<SupportReport>> {
    Ok(ok(find(&state, p.account_id, id).await?))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(create, list)).routes(routes!(get_one))
}

acs_platform::string_enum!(ScreenshotMediaType, "The screenshot's media type.", SCREENSHOT_TYPES);
