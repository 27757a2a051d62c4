//! Runtime flags, read and changed (`acs_platform::features`), and publishing OAuth clients
//! (spec 4.4: an operator's act).

use acs_platform::AppState;
use acs_platform::auth::Operator;
use acs_platform::error::{ApiError, ApiResult};
use acs_platform::features;
use acs_platform::http::{Data, Json, Path, ok};
use acs_platform::time_fmt::from_micros;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// One runtime flag (`features.<name>`).
#[derive(Debug, Serialize, ToSchema)]
pub struct AdminFeature {
    pub name: String,
    /// Whether it is on now, on this replica (every replica within 2 s of a change).
    pub enabled: bool,
    /// The configuration's value, which holds while no operator's choice is stored.
    pub configured: bool,
    /// Set when an operator's choice is stored: when, and by whom
    /// (`operator:<id>` on the API, `cli` for `acs admin features`).
    #[serde(with = "time::serde::rfc3339::option")]
    pub updated_at: Option<OffsetDateTime>,
    pub updated_by: Option<String>,
}

/// `PUT /api/admin/features/{name}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AdminFeatureUpdate {
    pub enabled: bool,
}

async fn listed(state: &AppState) -> ApiResult<Vec<AdminFeature>> {
    let stored = features::stored(&state.db).await?;
    Ok(state
        .features
        .all()
        .into_iter()
        .map(|(name, enabled)| {
            let choice = stored.iter().find(|s| s.name == name);
            AdminFeature {
                configured: state.config().features.get(&name).copied().unwrap_or(false),
                updated_at: choice.map(|s| from_micros(s.updated_at)),
                updated_by: choice.map(|s| s.updated_by.clone()),
                name,
                enabled,
            }
        })
        .collect())
}

/// The runtime flags of this server, by name.
#[utoipa::path(get, path = "/api/admin/features", operation_id = "listAdminFeatures", tag = "admin",
    responses((status = 200, description = "The flags", body = Data<Vec<AdminFeature>>)))]
async fn list_admin_features(State(state): State<AppState>, _op: Operator) -> ApiResult<Data<Vec<AdminFeature>>> {
    Ok(ok(listed(&state).await?))
}

/// Turns a runtime flag on or off on every replica (within 2 s), stored over
/// the configuration and kept in the flags' change history. The flag-off
/// answers follow at once; `admin` itself is changed only on the command
/// line (`acs admin features set`), so no request locks the operators out.
#[utoipa::path(put, path = "/api/admin/features/{name}", operation_id = "updateAdminFeature", tag = "admin",
    params(("name" = String, Path, description = "The flag: an extension's name")),
    request_body = AdminFeatureUpdate,
    responses((status = 200, description = "The flag as it is now", body = Data<AdminFeature>),
        (status = 404, description = "No such flag in this build", body = acs_platform::error::ErrorBody),
        (status = 422, description = "`validation_failed`: `enabled` missing, or the `admin` flag", body = acs_platform::error::ErrorBody)))]
async fn update_admin_feature(
    State(state): State<AppState>,
    op: Operator,
    Path(name): Path<String>,
    Json(req): Json<AdminFeatureUpdate>,
) -> ApiResult<Data<AdminFeature>> {
    if !state.features.all().contains_key(&name) {
        return Err(ApiError::not_found("Feature flag"));
    }
    if name == crate::NAME {
        return Err(ApiError::invalid(
            "name",
            "the admin flag is changed with `acs admin features set`, not over the API",
        ));
    }
    let by = features::Changer { actor: format!("operator:{}", op.id), ip: Some(op.ip) };
    features::store(&state.db, &name, Some(req.enabled), &by).await?;
    features::refresh(&state).await?;
    let flag = listed(&state).await?.into_iter().find(|f| f.name == name);
    Ok(ok(flag.ok_or_else(|| ApiError::not_found("Feature flag"))?))
}

/// Publishes an OAuth client: any account may sign in with it from now on,
/// and only an operator changes it (spec 4.4).
#[utoipa::path(post, path = "/api/admin/oauth-clients/{id}/publish", operation_id = "publishAdminOAuthClient",
    tag = "admin", params(("id" = Uuid, Path)),
    responses((status = 204, description = "Published (again: nothing changes)"),
        (status = 404, description = "No such client", body = acs_platform::error::ErrorBody)))]
async fn publish_admin_oauth_client(
    State(state): State<AppState>,
    _op: Operator,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    if acs_platform::oauth::publish(&state.db, id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("OAuth client"))
    }
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_admin_features, update_admin_feature))
        .routes(routes!(publish_admin_oauth_client))
}
