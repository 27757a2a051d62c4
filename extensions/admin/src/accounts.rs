//! Accounts as an operator sees them: search and page, one account's
//! detail, comps and credit grants (the operator recorded as the actor of
//! the ledger row and the audit row).

use acs_platform::AppState;
use acs_platform::audit::Actor;
use acs_platform::auth::Operator;
use acs_platform::credits::operator::{OperatorError, grant_to, set_comped_for};
use acs_platform::db::{Db, RowExt};
use acs_platform::error::{ApiError, ApiResult};
use acs_platform::http::{Data, Json, Path, Query, ok};
use acs_platform::time_fmt::from_micros;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::any::AnyRow;
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

const MAX_PAGE: i64 = 100;
/// Largest grant (or correction) an operator makes in one request.
pub const MAX_GRANT: i64 = 1_000_000_000;
const MAX_NOTE: usize = 500;

#[derive(Debug, Serialize, ToSchema)]
pub struct AdminAccount {
    pub id: Uuid,
    pub email: String,
    pub email_verified: bool,
    /// Spends nothing and is never refused for credits.
    pub comped: bool,
    pub credit_balance: i64,
    /// Set while the account is suspended: its keys and sessions are refused, nothing new starts.
    #[serde(with = "time::serde::rfc3339::option")]
    pub suspended_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
}

/// One page of accounts, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct AdminAccountPage {
    pub data: Vec<AdminAccount>,
    pub meta: AdminPageMeta,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AdminPageMeta {
    pub limit: i64,
    pub has_more: bool,
    /// Pass as `cursor` for the next page; null on the last.
    pub next_cursor: Option<Uuid>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AccountSearch {
    /// Part of the email, any case; empty or absent: every account.
    pub q: Option<String>,
    /// `meta.next_cursor` of the previous page.
    pub cursor: Option<Uuid>,
    /// 1 to 100 (default 50).
    pub limit: Option<i64>,
}

/// A ledger row an operator made, or any recent one.
#[derive(Debug, Serialize, ToSchema)]
pub struct AdminLedgerRow {
    pub amount: i64,
    pub balance_after: i64,
    pub reason: String,
    /// `operator` for an operator's grant; null for the service's own rows.
    pub actor_type: Option<String>,
    pub actor_id: Option<Uuid>,
    pub note: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
}

/// One account: its fields, its keys, its latest ledger rows, its machines and usage.
#[derive(Debug, Serialize, ToSchema)]
pub struct AdminAccountDetail {
    #[serde(flatten)]
    pub account: AdminAccount,
    /// Its API keys that have not expired (a revoked key is gone; machines' callback keys are not counted).
    pub api_keys: i64,
    /// The 20 latest ledger rows, newest first.
    pub ledger: Vec<AdminLedgerRow>,
    /// Its machines not terminated, by provider and state.
    pub machines: Vec<crate::fleet::AdminMachineCount>,
    pub usage: AdminUsage,
}

/// What the account used.
#[derive(Debug, Serialize, ToSchema)]
pub struct AdminUsage {
    pub conversations: i64,
    /// Conversations opened in the last 30 days.
    pub conversations_30d: i64,
    /// Credits spent in the last 30 days (hosted sandbox time and turns on platform credentials).
    pub credits_spent_30d: i64,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AdminCompRequest {
    pub comped: bool,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AdminCreditsRequest {
    /// Credits to add; negative corrects a mistake; not zero; at most 1,000,000,000 either way.
    pub amount: i64,
    /// Why (kept on the ledger row); at most 500 characters.
    pub reason: Option<String>,
}

const COLUMNS: &str = "id, email, email_verified, comped, credit_balance, created_at, \
    (SELECT x.suspended_at FROM account_suspensions x WHERE x.account_id = accounts.id) AS suspended_at";

fn account(r: &AnyRow) -> Result<AdminAccount, sqlx::Error> {
    Ok(AdminAccount {
        id: r.uuid("id")?,
        email: r.try_get("email")?,
        email_verified: r.flag("email_verified")?,
        comped: r.flag("comped")?,
        credit_balance: r.try_get("credit_balance")?,
        suspended_at: r.try_get::<Option<i64>, _>("suspended_at")?.map(from_micros),
        inserted_at: from_micros(r.try_get("created_at")?),
    })
}

async fn find(state: &AppState, id: Uuid) -> ApiResult<AdminAccount> {
    let sql = sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM accounts WHERE id = $1"));
    let row = sqlx::query(sql).bind(id.to_string()).fetch_optional(&state.db.pool).await?;
    Ok(account(&row.ok_or_else(|| ApiError::not_found("Account"))?)?)
}

/// `%q%` for LIKE, with the pattern's own characters escaped.
fn like(q: &str) -> String {
    let escaped: String = q
        .trim()
        .to_lowercase()
        .chars()
        .flat_map(|c| if matches!(c, '%' | '_' | '\\') { vec!['\\', c] } else { vec![c] })
        .collect();
    format!("%{escaped}%")
}

/// Up to `limit` accounts, newest first, whose email contains `q` (any
/// case), below `cursor`: the API's search and `acs admin accounts list`.
pub(crate) async fn search(
    db: &Db,
    q: &str,
    cursor: Option<Uuid>,
    limit: i64,
) -> Result<Vec<AdminAccount>, sqlx::Error> {
    // Ids are UUIDv7: their order is their creation order. Emails are kept
    // lower-cased (`normalize_email`), as `like` makes `q`.
    // The match runs on the (id, email) index alone; only the page's rows are read whole.
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM accounts WHERE id IN (SELECT id FROM accounts WHERE ($1 = '' OR id < $1) \
         AND email LIKE $2 ESCAPE '\\' ORDER BY id DESC LIMIT $3) ORDER BY id DESC"
    ));
    let rows = sqlx::query(sql)
        .bind(cursor.map(|c| c.to_string()).unwrap_or_default())
        .bind(like(q))
        .bind(limit)
        .fetch_all(&db.pool)
        .await?;
    rows.iter().map(account).collect()
}

/// Accounts, newest first, whose email contains `q`.
#[utoipa::path(get, path = "/api/admin/accounts", operation_id = "listAdminAccounts", tag = "admin",
    params(AccountSearch),
    responses((status = 200, description = "A page of accounts", body = AdminAccountPage),
        (status = 403, description = "Not an operator", body = acs_platform::error::ErrorBody)))]
async fn list_admin_accounts(
    State(state): State<AppState>,
    _op: Operator,
    Query(q): Query<AccountSearch>,
) -> ApiResult<axum::Json<AdminAccountPage>> {
    let limit = q.limit.unwrap_or(50);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::invalid("limit", "should be 1 to 100"));
    }
    let mut data = search(&state.db, q.q.as_deref().unwrap_or_default(), q.cursor, limit + 1).await?;
    let has_more = data.len() > usize::try_from(limit).unwrap_or(0);
    data.truncate(usize::try_from(limit).unwrap_or(0));
    let next_cursor = if has_more { data.last().map(|a| a.id) } else { None };
    Ok(axum::Json(AdminAccountPage { data, meta: AdminPageMeta { limit, has_more, next_cursor } }))
}

/// One account with its live keys, latest ledger rows, machines and usage.
#[utoipa::path(get, path = "/api/admin/accounts/{id}", operation_id = "getAdminAccount", tag = "admin",
    params(("id" = Uuid, Path)),
    responses((status = 200, description = "The account", body = Data<AdminAccountDetail>),
        (status = 404, description = "No such account", body = acs_platform::error::ErrorBody)))]
async fn get_admin_account(
    State(state): State<AppState>,
    _op: Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<Data<AdminAccountDetail>> {
    let account = find(&state, id).await?;
    let api_keys: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM api_keys WHERE account_id = $1 AND sandbox_id IS NULL \
         AND (expires_at IS NULL OR expires_at > $2)",
    )
    .bind(id.to_string())
    .bind(acs_platform::time_fmt::now_micros())
    .fetch_one(&state.db.pool)
    .await?;
    let rows = sqlx::query(
        "SELECT amount, balance_after, reason, actor_type, actor_id, note, inserted_at FROM credit_ledger \
         WHERE account_id = $1 ORDER BY id DESC LIMIT 20",
    )
    .bind(id.to_string())
    .fetch_all(&state.db.pool)
    .await?;
    let ledger = rows
        .iter()
        .map(|r| {
            Ok(AdminLedgerRow {
                amount: r.try_get("amount")?,
                balance_after: r.try_get("balance_after")?,
                reason: r.try_get("reason")?,
                actor_type: r.try_get("actor_type")?,
                actor_id: r.opt_uuid("actor_id")?,
                note: r.try_get("note")?,
                inserted_at: from_micros(r.try_get("inserted_at")?),
            })
        })
        .collect::<Result<_, sqlx::Error>>()?;
    // SUM is NUMERIC on PostgreSQL: cast back to a 64-bit integer.
    let since = acs_platform::time_fmt::now_micros() - 30 * 24 * 3600 * 1_000_000;
    let pool = &state.db.pool;
    let counts = sqlx::query(
        "SELECT COUNT(*) AS n, CAST(COALESCE(SUM(CASE WHEN created_at > $2 THEN 1 ELSE 0 END), 0) AS BIGINT) AS recent \
         FROM conversations WHERE account_id = $1",
    )
    .bind(id.to_string())
    .bind(since)
    .fetch_one(pool)
    .await?;
    let spent: i64 = sqlx::query_scalar(
        "SELECT CAST(COALESCE(-SUM(amount), 0) AS BIGINT) FROM credit_ledger WHERE account_id = $1 AND amount < 0 \
         AND reason IN ('sandbox_time', 'platform_turn') AND inserted_at > $2",
    )
    .bind(id.to_string())
    .bind(since)
    .fetch_one(pool)
    .await?;
    let usage = AdminUsage {
        conversations: counts.try_get("n")?,
        conversations_30d: counts.try_get("recent")?,
        credits_spent_30d: spent,
    };
    let machines = crate::fleet::machines(pool, Some(id)).await?;
    Ok(ok(AdminAccountDetail { account, api_keys, ledger, machines, usage }))
}

fn operator_error(e: OperatorError) -> ApiError {
    match e {
        OperatorError::NoAccount(_) => ApiError::not_found("Account"),
        OperatorError::ZeroAmount => ApiError::invalid("amount", "can't be zero"),
        OperatorError::Db(e) => e.into(),
    }
}

/// Comps the account (it spends nothing and is never refused for credits), or ends the comp.
#[utoipa::path(post, path = "/api/admin/accounts/{id}/comp", operation_id = "compAdminAccount", tag = "admin",
    params(("id" = Uuid, Path)), request_body = AdminCompRequest,
    responses((status = 200, description = "The account", body = Data<AdminAccount>),
        (status = 404, description = "No such account", body = acs_platform::error::ErrorBody)))]
async fn comp_admin_account(
    State(state): State<AppState>,
    op: Operator,
    Path(id): Path<Uuid>,
    Json(req): Json<AdminCompRequest>,
) -> ApiResult<Data<AdminAccount>> {
    set_comped_for(&state.db, id, req.comped, &Actor::operator(id, &op)).await.map_err(operator_error)?;
    Ok(ok(find(&state, id).await?))
}

/// Adds credits (a `grant` ledger row made by the operator, with the reason); negative corrects a mistake.
#[utoipa::path(post, path = "/api/admin/accounts/{id}/credits", operation_id = "grantAdminCredits", tag = "admin",
    params(("id" = Uuid, Path)), request_body = AdminCreditsRequest,
    responses((status = 200, description = "The account, its balance moved", body = Data<AdminAccount>),
        (status = 404, description = "No such account", body = acs_platform::error::ErrorBody),
        (status = 422, description = "`validation_failed`: zero, or beyond 1,000,000,000", body = acs_platform::error::ErrorBody)))]
async fn grant_admin_credits(
    State(state): State<AppState>,
    op: Operator,
    Path(id): Path<Uuid>,
    Json(req): Json<AdminCreditsRequest>,
) -> ApiResult<Data<AdminAccount>> {
    if req.amount.abs() > MAX_GRANT {
        return Err(ApiError::invalid("amount", "should be at most 1000000000 either way"));
    }
    let note = req.reason.map(|r| r.trim().to_owned()).filter(|r| !r.is_empty());
    if note.as_ref().is_some_and(|n| n.chars().count() > MAX_NOTE) {
        return Err(ApiError::invalid("reason", "should be at most 500 character(s)"));
    }
    grant_to(&state.db, id, req.amount, &Actor::operator(id, &op), note).await.map_err(operator_error)?;
    Ok(ok(find(&state, id).await?))
}

/// Suspends the account: its keys answer 403 `account_suspended`, its
/// browser sessions are signed out, nothing new starts for it, its running
/// turns are interrupted; nothing is deleted. Suspending again changes nothing.
#[utoipa::path(post, path = "/api/admin/accounts/{id}/suspend", operation_id = "suspendAdminAccount", tag = "admin",
    params(("id" = Uuid, Path)),
    responses((status = 200, description = "The account, suspended", body = Data<AdminAccount>),
        (status = 404, description = "No such account", body = acs_platform::error::ErrorBody)))]
async fn suspend_admin_account(
    State(state): State<AppState>,
    op: Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<Data<AdminAccount>> {
    set_suspended(&state, &op, id, true).await
}

/// Ends a suspension: the account's keys work again.
#[utoipa::path(post, path = "/api/admin/accounts/{id}/unsuspend", operation_id = "unsuspendAdminAccount", tag = "admin",
    params(("id" = Uuid, Path)),
    responses((status = 200, description = "The account", body = Data<AdminAccount>),
        (status = 404, description = "No such account", body = acs_platform::error::ErrorBody)))]
async fn unsuspend_admin_account(
    State(state): State<AppState>,
    op: Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<Data<AdminAccount>> {
    set_suspended(&state, &op, id, false).await
}

/// Moves `suspended_at` (a repeat changes nothing and writes no audit row),
/// then makes the change felt: this server forgets the account's keys at
/// once (the others within `auth.cache_seconds`), and a suspension
/// interrupts its running turns.
async fn set_suspended(state: &AppState, op: &Operator, id: Uuid, on: bool) -> ApiResult<Data<AdminAccount>> {
    find(state, id).await?;
    let moved = store_suspension(&state.db, id, on, &Actor::operator(id, op)).await?;
    state.key_cache.remove_where(|k| k.account_id == id);
    if moved
        && on
        && let Some(hook) = state.get::<acs_platform::accounts::OnSuspended>()
    {
        (hook.0)(state, id).await;
    }
    Ok(ok(find(state, id).await?))
}

/// Writes the suspension (or its end) with its audit row; `false` when it
/// was so already (then nothing is written).
pub(crate) async fn store_suspension(db: &Db, id: Uuid, on: bool, actor: &Actor) -> Result<bool, sqlx::Error> {
    let mut tx = db.begin().await?;
    let done = if on {
        sqlx::query(
            "INSERT INTO account_suspensions (account_id, suspended_at) VALUES ($1, $2) \
             ON CONFLICT (account_id) DO NOTHING",
        )
        .bind(id.to_string())
        .bind(acs_platform::time_fmt::now_micros())
        .execute(&mut *tx)
        .await?
    } else {
        sqlx::query("DELETE FROM account_suspensions WHERE account_id = $1")
            .bind(id.to_string())
            .execute(&mut *tx)
            .await?
    };
    let action = if on { "account.suspended" } else { "account.unsuspended" };
    let moved = done.rows_affected() == 1;
    if moved {
        acs_platform::audit::record(&mut *tx, actor, action, Some(("account", id))).await?;
    }
    tx.commit().await?;
    Ok(moved)
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_admin_accounts))
        .routes(routes!(get_admin_account))
        .routes(routes!(comp_admin_account))
        .routes(routes!(grant_admin_credits))
        .routes(routes!(suspend_admin_account))
        .routes(routes!(unsuspend_admin_account))
}

#[cfg(test)]
mod tests {
    use super::like;

    #[test]
    fn search_terms_match_literally() {
        assert_eq!(like(" Ada "), "%ada%");
        assert_eq!(like("50%_off\\"), "%50\\%\\_off\\\\%");
    }
}
