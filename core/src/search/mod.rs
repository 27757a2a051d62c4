//! `GET /api/search?q=`: the caller's agents, environments and vaults whose
//! name or description contains the query, case-insensitively.

use axum::extract::State;
use serde::{Deserialize, Serialize};
use sqlx::Row;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::Principal;
use crate::db::RowExt;
use crate::error::{ApiError, ApiResult};
use crate::http::{Data, Query, ok};
use crate::state::AppState;

pub const MAX_QUERY: usize = 200;
/// Hits per kind of record.
pub const PER_KIND: i64 = 50;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// 1 to 200 characters, matched within names and descriptions.
    #[param(min_length = 1, max_length = 200)]
    pub q: String,
}

#[derive(Serialize, ToSchema)]
pub struct SearchHit {
    /// `agent`, `environment` or `vault`.
    #[serde(rename = "type")]
    #[schema(value_type = HitType)]
    pub kind: &'static str,
    pub id: Uuid,
    pub name: String,
    pub description: Option<String>,
}

/// A `LIKE` pattern matching `q` anywhere, with the wildcards in `q` taken literally.
pub fn like_pattern(q: &str) -> String {
    let escaped = q.to_lowercase().replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
    format!("%{escaped}%")
}

/// Searches the caller's agents, environments and vaults by name and description.
#[utoipa::path(get, path = "/api/search", operation_id = "search", tag = "search", params(SearchQuery),
    responses((status = 200, description = "Agents, then environments, then vaults; each by name", body = Data<Vec<SearchHit>>)))]
async fn search(
    State(state): State<AppState>,
    p: Principal,
    Query(q): Query<SearchQuery>,
) -> ApiResult<Data<Vec<SearchHit>>> {
    let text = q.q.trim();
    if text.is_empty() || text.chars().count() > MAX_QUERY {
        return Err(ApiError::invalid("q", "should be 1 to 200 character(s)"));
    }
    let pattern = like_pattern(text);
    let account = p.account_id.to_string();
    let kinds: [(&'static str, &'static str); 3] = [
        (
            "agent",
            "SELECT id, name, description FROM agents WHERE account_id = $1 \
             AND (LOWER(name) LIKE $2 ESCAPE '\\' OR LOWER(COALESCE(description, '')) LIKE $2 ESCAPE '\\') ORDER BY name, id LIMIT $3",
        ),
        (
            "environment",
            "SELECT id, name, CAST(NULL AS TEXT) AS description FROM environments WHERE account_id = $1 \
             AND LOWER(name) LIKE $2 ESCAPE '\\' ORDER BY name, id LIMIT $3",
        ),
        (
            "vault",
            "SELECT id, name, description FROM vaults WHERE account_id = $1 \
             AND (LOWER(name) LIKE $2 ESCAPE '\\' OR LOWER(COALESCE(description, '')) LIKE $2 ESCAPE '\\') ORDER BY name, id LIMIT $3",
        ),
    ];
    let mut hits = Vec::new();
    for (kind, sql) in kinds {
        let rows = sqlx::query(sql)
            .bind(account.clone())
            .bind(pattern.clone())
            .bind(PER_KIND)
            .fetch_all(&state.db.pool)
            .await?;
        for row in rows {
            hits.push(SearchHit {
                kind,
                id: row.uuid("id")?,
                name: row.try_get("name")?,
                description: row.try_get("description")?,
            });
        }
    }
    Ok(ok(hits))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(search))
}

acs_platform::string_enum!(HitType, "The kind of record found.", ["agent", "environment", "vault"]);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_are_literal() {
        assert_eq!(like_pattern("Build"), "%build%");
        assert_eq!(like_pattern("50%_off"), "%50\\%\\_off%");
        assert_eq!(like_pattern("a\\b"), "%a\\\\b%");
    }
}
