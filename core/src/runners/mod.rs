//! Runners (DESIGN 9.8): a user's own computer serving sandboxes. A runner
//! is created here (its token shown once), then `acs runner` on that
//! computer dials `GET /api/runners/connect` with the token and serves the
//! machines of agents that choose it (`provider: runner`, `runner_id`). The
//! protocol and the provider that speaks it are in
//! `acs_machine::provider::remote`; `docs/runners.md` says what a runner
//! does and does not isolate.

pub mod connect;
pub mod store;

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::audit::{self, Actor};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::Validator;
use crate::http::{Data, Json, Path, created, ok};
use crate::provider::remote::RemoteProvider;
use crate::state::AppState;

/// Runner names: 1 to 64 letters, digits, `-`, `_`, starting with a letter or digit.
pub const MAX_NAME: usize = 64;
/// Runner tokens carry this prefix, so a leaked one is recognisable (and is not an API key).
pub const TOKEN_PREFIX: &str = "acs_runner_";

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Runner {
    pub id: Uuid,
    pub name: String,
    /// Connected to this server now.
    pub online: bool,
    /// What the runner reported when it last connected.
    pub hostname: Option<String>,
    /// The directory its machines live under (`<root>/<machine_name>`).
    pub root: Option<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub connected_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_seen_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunnerCreateRequest {
    /// 1 to 64 letters, digits, `-` and `_`, starting with a letter or digit; unique in the account.
    #[schema(min_length = 1, max_length = 64)]
    pub name: String,
}

/// A new runner and its token, shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunnerCreated {
    pub runner: Runner,
    /// `acs runner --token` takes it; only its digest is kept.
    pub token: String,
}

/// The runner provider of a started server.
pub fn remote(state: &AppState) -> Option<Arc<RemoteProvider>> {
    state.get::<RemoteProvider>()
}

fn online(state: &AppState, id: Uuid) -> bool {
    remote(state).is_some_and(|r| r.online(id))
}

fn check_name(name: &str) -> ApiResult<()> {
    let mut v = Validator::default();
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    v.check(
        first_ok && name.len() <= MAX_NAME && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
        "name",
        "should be 1 to 64 letters, digits, `-` or `_`, starting with a letter or digit",
    );
    v.finish()
}

/// The account's runners, oldest first.
#[utoipa::path(get, path = "/api/runners", operation_id = "listRunners", tag = "runners",
    responses((status = 200, description = "The account's runners", body = Data<Vec<Runner>>)))]
async fn list_runners(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<Runner>>> {
    let rows = store::list(&state.db, p.account_id).await?;
    Ok(ok(rows
        .into_iter()
        .map(|r| {
            let on = online(&state, r.id);
            r.view(on)
        })
        .collect()))
}

/// Creates a runner; its token is in this answer only.
#[utoipa::path(post, path = "/api/runners", operation_id = "createRunner", tag = "runners",
    request_body = RunnerCreateRequest,
    responses((status = 201, description = "The runner and its token", body = Data<RunnerCreated>),
        (status = 403, description = "Not a full-scope key", body = crate::error::ErrorBody),
        (status = 422, description = "`validation_failed`: a bad or taken name", body = crate::error::ErrorBody)))]
async fn create_runner(
    State(state): State<AppState>,
    p: Principal,
    Json(req): Json<RunnerCreateRequest>,
) -> ApiResult<(StatusCode, Data<RunnerCreated>)> {
    p.require_full()?;
    let name = req.name.trim().to_owned();
    check_name(&name)?;
    let token = crate::auth::token::generate(TOKEN_PREFIX);
    let mut tx = state.db.begin().await?;
    let row = match store::insert(&mut *tx, p.account_id, &name, &crate::auth::token::digest(&token)).await {
        Ok(row) => row,
        Err(e) if crate::db::is_unique_violation(&e) => {
            return Err(ApiError::invalid("name", "has already been taken"));
        }
        Err(e) => return Err(e.into()),
    };
    audit::record(&mut *tx, &Actor::key(&p), "runner.created", Some(("runner", row.id))).await?;
    tx.commit().await?;
    Ok(created(RunnerCreated { runner: row.view(false), token }))
}

/// One runner.
#[utoipa::path(get, path = "/api/runners/{id}", operation_id = "getRunner", tag = "runners",
    params(("id" = Uuid, Path)),
    responses((status = 200, description = "The runner", body = Data<Runner>),
        (status = 404, description = "No such runner", body = crate::error::ErrorBody)))]
async fn get_runner(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<Data<Runner>> {
    let row = store::find(&state.db.pool, p.account_id, id).await?.ok_or_else(|| ApiError::not_found("Runner"))?;
    Ok(ok(row.view(online(&state, id))))
}

/// Deletes a runner and ends its connection. Refused while a sandbox that
/// is not terminated lives on it (reset those first).
#[utoipa::path(delete, path = "/api/runners/{id}", operation_id = "deleteRunner", tag = "runners",
    params(("id" = Uuid, Path)),
    responses((status = 204, description = "Deleted"),
        (status = 404, description = "No such runner", body = crate::error::ErrorBody),
        (status = 409, description = "`runner_in_use`, with `sandboxes`", body = crate::error::ErrorBody)))]
async fn delete_runner(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<StatusCode> {
    p.require_full()?;
    let mut tx = state.db.begin().await?;
    store::find(&mut *tx, p.account_id, id).await?.ok_or_else(|| ApiError::not_found("Runner"))?;
    let live = store::live_machines(&mut *tx, id).await?;
    if live > 0 {
        return Err(ApiError::conflict(
            "runner_in_use",
            format!("{live} sandbox(es) live on this runner; reset them (DELETE /api/sandboxes/{{id}}) first."),
        )
        .with("sandboxes", live));
    }
    store::delete(&mut *tx, p.account_id, id).await?;
    audit::record(&mut *tx, &Actor::key(&p), "runner.deleted", Some(("runner", id))).await?;
    tx.commit().await?;
    if let Some(r) = remote(&state) {
        r.drop_runner(id);
    }
    Ok(StatusCode::NO_CONTENT)
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_runners, create_runner)).routes(routes!(get_runner, delete_runner))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runner_names_are_short_words() {
        assert!(check_name("laptop-1").is_ok());
        assert!(check_name("a").is_ok());
        assert!(check_name(&"a".repeat(64)).is_ok());
        assert!(check_name(&"a".repeat(65)).is_err());
        assert!(check_name("").is_err());
        assert!(check_name("-x").is_err());
        assert!(check_name("my laptop").is_err());
        assert!(check_name("../x").is_err());
    }
}
