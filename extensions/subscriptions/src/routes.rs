//! `/api/account/openai-subscriptions`: the subscriptions and their
//! device-code sign-ins. Full-scope keys only. Only starting a sign-in is
//! gated (a new link by the flag and the broker, a reconnect by the broker);
//! every other route stays open with the flag off.

use acs_platform::audit::{self, Actor};
use acs_platform::auth::Principal;
use acs_platform::db::is_unique_violation;
use acs_platform::http::{Data, Json, Path, created, ok};
use acs_platform::time_fmt::now_micros;
use acs_platform::{ApiResult, AppState};
use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::error::SubsError;
use crate::model::{LinkAttempt, LinkAttemptCreate, Subscription, SubscriptionList, SubscriptionUpdate};
use crate::rules::{self, Request, StartFacts};
use crate::store::{self, AttemptRow};
use crate::{config, vendor};

/// The account's subscriptions, oldest first (never a token).
#[utoipa::path(get, path = "/api/account/openai-subscriptions", operation_id = "listOpenaiSubscriptions",
    tag = "openai-subscriptions", responses((status = 200, body = SubscriptionList)))]
async fn list(State(state): State<AppState>, p: Principal) -> ApiResult<axum::Json<SubscriptionList>> {
    p.require_full()?;
    let rows = store::subscriptions(&state, p.account_id).await?;
    Ok(axum::Json(SubscriptionList {
        count: rows.len() as u64,
        data: rows.iter().map(store::SubRow::view).collect(),
        limit: config::of(&state).max_grants,
        linking_enabled: crate::linking_enabled(&state),
    }))
}

async fn owned(state: &AppState, account_id: Uuid, id: Uuid) -> Result<store::SubRow, SubsError> {
    store::subscription(&state.db.pool, account_id, id).await?.ok_or(SubsError::NotFound("Subscription"))
}

/// Renames a subscription; its credential is unchanged.
#[utoipa::path(patch, path = "/api/account/openai-subscriptions/{id}", operation_id = "updateOpenaiSubscription",
    tag = "openai-subscriptions", params(("id" = Uuid, Path)), request_body = SubscriptionUpdate,
    responses((status = 200, body = Data<Subscription>), (status = 404, body = acs_platform::error::ErrorBody)))]
async fn update(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<SubscriptionUpdate>,
) -> ApiResult<Data<Subscription>> {
    p.require_full()?;
    owned(&state, p.account_id, id).await?;
    let name = rules::check_name(&req.name).map_err(|message| SubsError::Invalid { field: "name", message })?;
    let mut tx = state.db.begin().await?;
    match store::rename(&mut tx, id, &name).await {
        Err(e) if is_unique_violation(&e) => {
            return Err(SubsError::Invalid { field: "name", message: "has already been taken".into() }.into());
        }
        other => other?,
    }
    audit::record(&mut *tx, &Actor::key(&p), "openai_subscription.renamed", Some(("openai_subscription", id))).await?;
    tx.commit().await?;
    Ok(ok(owned(&state, p.account_id, id).await?.view()))
}

/// Forgets the subscription's tokens and keeps the row (`disconnected`).
#[utoipa::path(post, path = "/api/account/openai-subscriptions/{id}/disconnect",
    operation_id = "disconnectOpenaiSubscription", tag = "openai-subscriptions", params(("id" = Uuid, Path)),
    responses((status = 200, body = Data<Subscription>), (status = 404, body = acs_platform::error::ErrorBody)))]
async fn disconnect(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Data<Subscription>> {
    p.require_full()?;
    owned(&state, p.account_id, id).await?;
    let mut tx = state.db.begin().await?;
    store::disconnect(&mut tx, id).await?;
    audit::record(&mut *tx, &Actor::key(&p), "openai_subscription.disconnected", Some(("openai_subscription", id)))
        .await?;
    tx.commit().await?;
    Ok(ok(owned(&state, p.account_id, id).await?.view()))
}

/// Removes a disconnected subscription that no credential set names.
#[utoipa::path(delete, path = "/api/account/openai-subscriptions/{id}", operation_id = "deleteOpenaiSubscription",
    tag = "openai-subscriptions", params(("id" = Uuid, Path)),
    responses((status = 204, description = "Deleted"),
        (status = 409, description = "`openai_grant_named_by_sets` (with `sets`), `openai_grant_not_disconnected`",
            body = acs_platform::error::ErrorBody)))]
async fn delete(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<StatusCode> {
    p.require_full()?;
    let sub = owned(&state, p.account_id, id).await?;
    if sub.status != "disconnected" {
        return Err(SubsError::NotDisconnected.into());
    }
    let sets = store::naming_sets(&state, p.account_id, id).await?;
    if !sets.is_empty() {
        return Err(SubsError::NamedBySets(sets).into());
    }
    let mut tx = state.db.begin().await?;
    store::delete(&mut tx, id).await?;
    audit::record(&mut *tx, &Actor::key(&p), "openai_subscription.deleted", Some(("openai_subscription", id))).await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Starts a device-code sign-in: a new link (`name`) or a reconnect (`grant_id`).
#[utoipa::path(post, path = "/api/account/openai-subscriptions/attempts", operation_id = "createOpenaiLinkAttempt",
    tag = "openai-subscriptions", request_body = LinkAttemptCreate,
    responses((status = 201, body = Data<LinkAttempt>),
        (status = 404, description = "`openai_subscriptions_not_enabled`; `not_found` (reconnect)", body = acs_platform::error::ErrorBody),
        (status = 409, description = "`openai_link_attempt_pending`, `openai_link_attempts_exceeded`, `openai_grant_limit_reached`", body = acs_platform::error::ErrorBody),
        (status = 429, description = "`openai_link_attempts_rate_limited`", body = acs_platform::error::ErrorBody),
        (status = 502, description = "`openai_auth_unreachable`: the vendor gave no device code", body = acs_platform::error::ErrorBody)))]
async fn start(
    State(state): State<AppState>,
    p: Principal,
    Json(req): Json<LinkAttemptCreate>,
) -> ApiResult<(StatusCode, Data<LinkAttempt>)> {
    p.require_full()?;
    // A reconnect needs only the broker; anything else is a new link, which needs the flag too.
    let reconnect = req.grant_id.is_some() && req.name.is_none();
    if !state.feature_enabled(crate::BROKERAGE) || (!reconnect && !state.feature_enabled(crate::NAME)) {
        return Err(SubsError::NotEnabled.into());
    }
    let request = rules::request(req.name.as_deref(), req.grant_id)
        .map_err(|(field, message)| SubsError::Invalid { field, message })?;
    let now = now_micros();
    let open = store::open_attempts(&state.db.pool, p.account_id, now).await?;
    let (grant_revision, pending_for_grant, grants) = match &request {
        Request::Reconnect { grant_id } => {
            let sub = owned(&state, p.account_id, *grant_id).await?;
            let pending = open.iter().find(|a| a.grant_id == Some(*grant_id)).map(|a| a.id);
            (Some(sub.revision), pending, None)
        }
        Request::Link { name } => {
            if store::name_taken(&state.db.pool, p.account_id, name).await? {
                return Err(SubsError::Invalid { field: "name", message: "has already been taken".into() }.into());
            }
            let count = store::count(&state.db.pool, p.account_id).await?;
            (None, None, Some((count, config::of(&state).max_grants)))
        }
    };
    let facts = StartFacts {
        pending_for_grant,
        open: open.len() as u64,
        starts_last_hour: store::starts_since(&state.db.pool, p.account_id, now - rules::HOUR_MICROS).await?,
        grants,
        now,
    };
    rules::may_start(&facts).map_err(SubsError::Start)?;

    let device = vendor::device_authorization(&state).await.map_err(SubsError::from)?;
    let id = Uuid::new_v4();
    let sealed =
        state.crypto.encrypt(&state.db, p.account_id, &store::device_code_aad(id), &device.device_code).await?;
    let c = config::of(&state);
    let interval = device.interval.unwrap_or(c.poll_interval).max(c.poll_interval).max(1);
    let ttl = c.attempt_ttl_seconds.min(device.expires_in.map_or(u64::MAX, |s| u64::try_from(s.max(1)).unwrap_or(1)));
    let interval_micros = i64::try_from(interval).unwrap_or(5) * 1_000_000;
    let (kind, name, grant_id) = match request {
        Request::Link { name } => ("link", Some(name), None),
        Request::Reconnect { grant_id } => ("reconnect", None, Some(grant_id)),
    };
    let row = AttemptRow {
        id,
        account_id: p.account_id,
        kind: kind.into(),
        name,
        grant_id,
        grant_revision,
        state: "pending".into(),
        sealed_device_code: Some(sealed),
        user_code: Some(device.user_code),
        verification_url: Some(device.verification_uri),
        poll_interval: i64::try_from(interval).unwrap_or(5),
        auth_unreachable: false,
        expires_at: now + i64::try_from(ttl).unwrap_or(900) * 1_000_000,
        next_poll_at: now + interval_micros,
        result_grant_id: None,
        failure_reason: None,
        failure_grant_id: None,
        failure_grant_name: None,
        created_at: now,
        updated_at: now,
    };
    let mut tx = state.db.begin().await?;
    store::insert_attempt(&mut tx, &row).await?;
    audit::record(&mut *tx, &Actor::key(&p), "openai_link_attempt.started", Some(("openai_link_attempt", id))).await?;
    tx.commit().await?;
    Ok(created(row.view()))
}

/// The account's pending sign-ins, each with its code.
#[utoipa::path(get, path = "/api/account/openai-subscriptions/attempts", operation_id = "listOpenaiLinkAttempts",
    tag = "openai-subscriptions", responses((status = 200, body = Data<Vec<LinkAttempt>>)))]
async fn attempts(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<LinkAttempt>>> {
    p.require_full()?;
    let open = store::open_attempts(&state.db.pool, p.account_id, now_micros()).await?;
    Ok(ok(open.iter().map(AttemptRow::view).collect()))
}

/// One sign-in (read it every `poll_interval` seconds).
#[utoipa::path(get, path = "/api/account/openai-subscriptions/attempts/{id}", operation_id = "getOpenaiLinkAttempt",
    tag = "openai-subscriptions", params(("id" = Uuid, Path)),
    responses((status = 200, body = Data<LinkAttempt>), (status = 404, body = acs_platform::error::ErrorBody)))]
async fn attempt(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<Data<LinkAttempt>> {
    p.require_full()?;
    let row = store::attempt(&state.db.pool, p.account_id, id).await?.ok_or(SubsError::NotFound("Link attempt"))?;
    Ok(ok(row.view()))
}

/// Cancels a pending sign-in; one that later finishes stores nothing.
#[utoipa::path(delete, path = "/api/account/openai-subscriptions/attempts/{id}", operation_id = "cancelOpenaiLinkAttempt",
    tag = "openai-subscriptions", params(("id" = Uuid, Path)),
    responses((status = 200, body = Data<LinkAttempt>),
        (status = 409, description = "`openai_link_attempt_not_pending` with `state`", body = acs_platform::error::ErrorBody)))]
async fn cancel(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<Data<LinkAttempt>> {
    p.require_full()?;
    store::attempt(&state.db.pool, p.account_id, id).await?.ok_or(SubsError::NotFound("Link attempt"))?;
    let cancelled = store::cancel(&state, id, now_micros()).await?;
    let row = store::attempt(&state.db.pool, p.account_id, id).await?.ok_or(SubsError::NotFound("Link attempt"))?;
    if !cancelled {
        return Err(SubsError::NotPending { state: row.view().state }.into());
    }
    audit::record(&state.db.pool, &Actor::key(&p), "openai_link_attempt.cancelled", Some(("openai_link_attempt", id)))
        .await?;
    Ok(ok(row.view()))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(update, delete))
        .routes(routes!(disconnect))
        .routes(routes!(start, attempts))
        .routes(routes!(attempt, cancel))
}
