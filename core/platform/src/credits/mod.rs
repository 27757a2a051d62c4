//! Credits: the account balance and its append-only ledger; hosted sandbox
//! time and platform-credential turns spend, own credentials do not
//! (docs/credits.md). Everything here is inert while `credits.enabled` is
//! off, the self-hosted default.

pub mod ledger;
pub mod meter;
pub mod operator;

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use self::ledger::{Change, Entry, Reason};
use crate::auth::Principal;
use crate::config::CreditsConfig;
use crate::error::{ApiError, ApiResult};
use crate::http::{PageMeta, Query};
use crate::state::AppState;

/// The rule of the gates: an account may start hosted work while comped or
/// holding a positive balance. A turn may take the balance below zero; the
/// next start is refused.
pub fn may_start(balance: i64, comped: bool) -> bool {
    comped || balance > 0
}

/// 402 `insufficient_credits` with `upgrade_url`.
pub fn insufficient(cfg: &CreditsConfig, balance: i64) -> ApiError {
    ApiError::new(
        StatusCode::PAYMENT_REQUIRED,
        "insufficient_credits",
        format!("The account's credit balance is {balance}; add credits to start hosted work."),
    )
    .with("upgrade_url", cfg.upgrade_url.clone())
}

/// 402 `insufficient_credits` (with `upgrade_url`) when the account may not
/// start hosted work now; a comped account always passes. Launches (a new
/// machine or a wake) and turns call it; it passes while credits are off.
pub async fn gate(state: &AppState, account_id: Uuid) -> ApiResult<()> {
    crate::auth::check_active(state, account_id).await?;
    let cfg = &state.config().credits;
    if !cfg.enabled {
        return Ok(());
    }
    let (balance, comped) =
        ledger::standing(&state.db, account_id).await?.ok_or_else(|| ApiError::not_found("Account"))?;
    if may_start(balance, comped) { Ok(()) } else { Err(insufficient(cfg, balance)) }
}

/// The credits of a new account, in its registration transaction.
pub async fn initial_grant(
    state: &AppState,
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    account_id: Uuid,
) -> sqlx::Result<()> {
    let cfg = &state.config().credits;
    if cfg.enabled && cfg.initial_grant > 0 {
        ledger::apply(tx, &Change::new(account_id, cfg.initial_grant, Reason::InitialGrant)).await?;
    }
    Ok(())
}

/// Where a platform turn's charge is booked.
#[derive(Debug, Clone, Copy)]
pub struct TurnRef {
    pub account_id: Uuid,
    pub conversation_id: Uuid,
    pub turn_id: Uuid,
    pub sandbox_id: Uuid,
}

/// Spends `credits.platform_turn` for a turn that starts on platform
/// credentials (nothing for a comped account, or with credits off).
pub async fn spend_platform_turn(state: &AppState, t: TurnRef) -> sqlx::Result<()> {
    let cfg = &state.config().credits;
    if !cfg.enabled || cfg.platform_turn == 0 {
        return Ok(());
    }
    let change = Change {
        sandbox_id: Some(t.sandbox_id),
        conversation_id: Some(t.conversation_id),
        turn_id: Some(t.turn_id),
        ..Change::new(t.account_id, -cfg.platform_turn, Reason::PlatformTurn)
    };
    ledger::apply_now(&state.db, &change).await.map(drop)
}

/// What each kind of spending costs.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreditRates {
    /// Per whole second a hosted sandbox is active (pending, starting or ready).
    pub sandbox_per_second: i64,
    /// Per turn on the deployment's platform credentials.
    pub platform_turn: i64,
}

/// The account's credits.
#[derive(Debug, Serialize, ToSchema)]
pub struct Credits {
    pub balance: i64,
    /// A comped account spends nothing and is never refused for credits.
    pub comped: bool,
    /// False on an instance that does not keep credits (nothing is spent or refused).
    pub enabled: bool,
    /// Where to buy more; null when the operator set none.
    pub upgrade_url: Option<String>,
    pub rates: CreditRates,
    /// Ledger rows, newest first (one page; see `meta`).
    pub ledger: Vec<Entry>,
}

/// `{data: Credits, meta}`: `meta` pages the ledger.
#[derive(Serialize, ToSchema)]
pub struct CreditsResponse {
    pub data: Credits,
    pub meta: PageMeta,
}

impl axum::response::IntoResponse for CreditsResponse {
    fn into_response(self) -> axum::response::Response {
        axum::Json(self).into_response()
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CreditsQuery {
    /// Ledger rows older than this cursor (`meta.next_cursor` of the previous page).
    pub before: Option<i64>,
    /// Ledger page size, 1 to 500 (default 50).
    pub limit: Option<i64>,
}

const MAX_PAGE: i64 = 500;

/// The account's balance, the rates, and its recent ledger, newest first.
#[utoipa::path(get, path = "/api/account/credits", operation_id = "getCredits", tag = "account", params(CreditsQuery),
    responses((status = 200, description = "Balance, rates and a page of the ledger", body = CreditsResponse)))]
async fn get_credits(
    State(state): State<AppState>,
    p: Principal,
    Query(q): Query<CreditsQuery>,
) -> ApiResult<CreditsResponse> {
    let limit = crate::http::extract::page_limit(q.limit, 50, MAX_PAGE)?;
    let (balance, comped) =
        ledger::standing(&state.db, p.account_id).await?.ok_or_else(|| ApiError::not_found("Account"))?;
    let mut rows = ledger::page(&state.db, p.account_id, q.before, limit).await?;
    let has_more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    let next_cursor = rows.last().map(|e| e.id);
    let cfg = &state.config().credits;
    let data = Credits {
        balance,
        comped,
        enabled: cfg.enabled,
        upgrade_url: cfg.upgrade_url.clone(),
        rates: CreditRates { sandbox_per_second: cfg.sandbox_per_second, platform_turn: cfg.platform_turn },
        ledger: rows,
    };
    Ok(CreditsResponse { data, meta: PageMeta { limit, has_more, next_cursor } })
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_credits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_positive_balance_or_a_comp_may_start() {
        assert!(may_start(1, false));
        assert!(!may_start(0, false), "a spent balance is refused at exactly zero");
        assert!(!may_start(-40, false));
        assert!(may_start(-40, true));
    }

    #[test]
    fn refusal_carries_the_upgrade_url() {
        let cfg = CreditsConfig { upgrade_url: Some("https://example.com/buy".into()), ..CreditsConfig::default() };
        let e = insufficient(&cfg, 0);
        assert_eq!(e.status, StatusCode::PAYMENT_REQUIRED);
        assert_eq!(e.body()["error"], "insufficient_credits");
        assert_eq!(e.body()["upgrade_url"], "https://example.com/buy");
        let e = insufficient(&CreditsConfig::default(), 0);
        assert!(e.body().get("upgrade_url").is_some_and(serde_json::Value::is_null), "the key is there, null");
    }
}
