//! Runtime flags as the deployment has them, and publishing OAuth clients
//! (spec 4.4: an operator's act).

use acs_platform::AppState;
use acs_platform::auth::Operator;
use acs_platform::error::{ApiError, ApiResult};
use acs_platform::http::{Data, Path, ok};
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// One runtime flag (`features.<name>`).
#[derive(Debug, Serialize, ToSchema)]
pub struct AdminFeature {
    pub name: String,
    pub enabled: bool,
}

/// The runtime flags of this server, by name.
#[utoipa::path(get, path = "/api/admin/features", operation_id = "listAdminFeatures", tag = "admin",
    responses((status = 200, description = "The flags", body = Data<Vec<AdminFeature>>)))]
async fn list_admin_features(State(state): State<AppState>, _op: Operator) -> ApiResult<Data<Vec<AdminFeature>>> {
    Ok(ok(state.features.iter().map(|(name, on)| AdminFeature { name: name.clone(), enabled: *on }).collect()))
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
    OpenApiRouter::new().routes(routes!(list_admin_features)).routes(routes!(publish_admin_oauth_client))
}
