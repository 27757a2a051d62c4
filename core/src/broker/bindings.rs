//! `/api/secret-bindings` (DESIGN 9.5): what the broker attaches where. With
//! brokerage off, creating, retargeting or enabling a binding answers 404
//! `brokerage_not_enabled`; reading, deleting and disabling stay open. A
//! full-scope key is required throughout: a binding decides where a secret
//! is sent, so a machine's own key must not make one.

use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::model::{Binding, CreateBody, Source, SourceBody, UpdateBody};
use super::{BROKERAGE, rules, store};
use crate::audit::{self, Actor};
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::Validator;
use crate::http::{Data, Json, Path, created, ok};
use crate::state::AppState;
use crate::time_fmt::{from_micros, now_micros};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_secret_bindings, create_secret_binding)).routes(routes!(
        get_secret_binding,
        update_secret_binding,
        delete_secret_binding
    ))
}

fn not_enabled() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "brokerage_not_enabled",
        "The egress broker is not enabled on this deployment (features.brokerage).",
    )
}

fn gate(state: &AppState) -> ApiResult<()> {
    if state.feature_enabled(BROKERAGE) { Ok(()) } else { Err(not_enabled()) }
}

/// The account's secret bindings, by name.
#[utoipa::path(get, path = "/api/secret-bindings", operation_id = "listSecretBindings", tag = "secret-bindings",
    responses((status = 200, description = "The account's bindings", body = Data<Vec<Binding>>)))]
async fn list_secret_bindings(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<Binding>>> {
    p.require_full()?;
    Ok(ok(store::list(&state.db, p.account_id).await?))
}

/// One secret binding.
#[utoipa::path(get, path = "/api/secret-bindings/{id}", operation_id = "getSecretBinding", tag = "secret-bindings",
    params(("id" = Uuid, Path)),
    responses((status = 200, description = "The binding", body = Data<Binding>),
        (status = 404, description = "No such binding", body = crate::error::ErrorBody)))]
async fn get_secret_binding(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Data<Binding>> {
    p.require_full()?;
    Ok(ok(find(&state, p.account_id, id).await?))
}

/// Creates a binding; needs brokerage on.
#[utoipa::path(post, path = "/api/secret-bindings", operation_id = "createSecretBinding", tag = "secret-bindings",
    request_body = CreateBody,
    responses((status = 201, description = "Created", body = Data<Binding>),
        (status = 404, description = "`brokerage_not_enabled`", body = crate::error::ErrorBody),
        (status = 409, description = "`secret_binding_name_taken`", body = crate::error::ErrorBody),
        (status = 422, description = "`validation_failed`", body = crate::error::ErrorBody)))]
async fn create_secret_binding(
    State(state): State<AppState>,
    p: Principal,
    Json(body): Json<CreateBody>,
) -> ApiResult<(StatusCode, Data<Binding>)> {
    p.require_full()?;
    gate(&state)?;
    let mut v = Validator::default();
    let name = body.name.trim().to_owned();
    rules::check_binding_name(&mut v, &name);
    rules::check_host(&mut v, "host", &body.host);
    rules::check_header(&mut v, "header", &body.header);
    rules::check_template(&mut v, "template", &body.template);
    let source = checked_source(&mut v, &body.source);
    v.finish()?;
    let source = source.expect("a validated source");
    check_source_exists(&state, p.account_id, &source).await?;
    check_name_free(&state, p.account_id, &name, None).await?;
    let at = from_micros(now_micros());
    let binding = Binding {
        id: Uuid::now_v7(),
        name,
        host: body.host,
        header: body.header.to_ascii_lowercase(),
        template: body.template,
        source,
        enabled: body.enabled.unwrap_or(true),
        inserted_at: at,
        updated_at: at,
    };
    let mut tx = state.db.begin().await?;
    store::insert(&mut tx, p.account_id, &binding).await.map_err(|e| taken_or(e, &binding.name))?;
    audit::record(&mut *tx, &Actor::key(&p), "secret_binding.created", Some(("secret_binding", binding.id))).await?;
    tx.commit().await?;
    super::credentials::changed(&state, p.account_id);
    Ok(created(binding))
}

/// Changes a binding. Retargeting it (`host`, `header`, `template`,
/// `source`) or setting `enabled: true` needs brokerage on.
#[utoipa::path(patch, path = "/api/secret-bindings/{id}", operation_id = "updateSecretBinding", tag = "secret-bindings",
    params(("id" = Uuid, Path)), request_body = UpdateBody,
    responses((status = 200, description = "Updated", body = Data<Binding>),
        (status = 404, description = "No such binding, or `brokerage_not_enabled`", body = crate::error::ErrorBody),
        (status = 409, description = "`secret_binding_name_taken`", body = crate::error::ErrorBody),
        (status = 422, description = "`validation_failed`", body = crate::error::ErrorBody)))]
async fn update_secret_binding(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Json(body): Json<UpdateBody>,
) -> ApiResult<Data<Binding>> {
    p.require_full()?;
    let mut binding = find(&state, p.account_id, id).await?;
    if body.needs_brokerage() {
        gate(&state)?;
    }
    let mut v = Validator::default();
    if let Some(name) = &body.name {
        binding.name = name.trim().to_owned();
        rules::check_binding_name(&mut v, &binding.name);
    }
    if let Some(host) = body.host {
        rules::check_host(&mut v, "host", &host);
        binding.host = host;
    }
    if let Some(header) = body.header {
        rules::check_header(&mut v, "header", &header);
        binding.header = header.to_ascii_lowercase();
    }
    if let Some(template) = body.template {
        rules::check_template(&mut v, "template", &template);
        binding.template = template;
    }
    let source = body.source.as_ref().and_then(|s| checked_source(&mut v, s));
    v.finish()?;
    if let Some(source) = source {
        check_source_exists(&state, p.account_id, &source).await?;
        binding.source = source;
    }
    if let Some(enabled) = body.enabled {
        binding.enabled = enabled;
    }
    if body.name.is_some() {
        check_name_free(&state, p.account_id, &binding.name, Some(id)).await?;
    }
    binding.updated_at = from_micros(now_micros());
    let mut tx = state.db.begin().await?;
    store::update(&mut tx, p.account_id, &binding).await.map_err(|e| taken_or(e, &binding.name))?;
    audit::record(&mut *tx, &Actor::key(&p), "secret_binding.updated", Some(("secret_binding", id))).await?;
    tx.commit().await?;
    super::credentials::changed(&state, p.account_id);
    Ok(ok(binding))
}

/// Deletes a binding; the next request to its host carries nothing.
#[utoipa::path(delete, path = "/api/secret-bindings/{id}", operation_id = "deleteSecretBinding", tag = "secret-bindings",
    params(("id" = Uuid, Path)),
    responses((status = 204, description = "Deleted"),
        (status = 404, description = "No such binding", body = crate::error::ErrorBody)))]
async fn delete_secret_binding(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    p.require_full()?;
    let mut tx = state.db.begin().await?;
    if !store::delete(&mut tx, p.account_id, id).await? {
        return Err(ApiError::not_found("Secret binding"));
    }
    audit::record(&mut *tx, &Actor::key(&p), "secret_binding.deleted", Some(("secret_binding", id))).await?;
    tx.commit().await?;
    super::credentials::changed(&state, p.account_id);
    Ok(StatusCode::NO_CONTENT)
}

async fn find(state: &AppState, account_id: Uuid, id: Uuid) -> ApiResult<Binding> {
    store::get(&state.db, account_id, id).await?.ok_or_else(|| ApiError::not_found("Secret binding"))
}

fn checked_source(v: &mut Validator, body: &SourceBody) -> Option<Source> {
    match body.source() {
        Ok(source) => Some(source),
        Err(message) => {
            v.check(false, "source", message);
            None
        }
    }
}

/// The record a source names must be the account's (a key inside it may
/// come later: until then requests are refused with `credential_missing`).
async fn check_source_exists(state: &AppState, account_id: Uuid, source: &Source) -> ApiResult<()> {
    let (table, field, id) = match source {
        Source::Vault { vault_id, .. } => ("vaults", "source.vault_id", *vault_id),
        Source::Environment { environment_id, .. } => ("environments", "source.environment_id", *environment_id),
        Source::External { kind, id } => {
            let field = format!("source.{kind}");
            let Some(src) = state.extensions.binding_sources.iter().find(|s| s.key() == kind) else {
                return Err(ApiError::invalid(&field, "this deployment has no such source"));
            };
            let exists = src.exists(state, account_id, *id).await.map_err(|e| {
                tracing::warn!("secret binding source `{kind}`: {e}");
                ApiError::internal()
            })?;
            return if exists { Ok(()) } else { Err(ApiError::invalid(&field, "no such record in this account")) };
        }
    };
    let sql = sqlx::AssertSqlSafe(format!("SELECT id FROM {table} WHERE id = $1 AND account_id = $2"));
    let found =
        sqlx::query(sql).bind(id.to_string()).bind(account_id.to_string()).fetch_optional(&state.db.pool).await?;
    if found.is_some() { Ok(()) } else { Err(ApiError::invalid(field, "no such record in this account")) }
}

async fn check_name_free(state: &AppState, account_id: Uuid, name: &str, except: Option<Uuid>) -> ApiResult<()> {
    if store::name_taken(&state.db, account_id, name, except).await? { Err(name_taken(name)) } else { Ok(()) }
}

fn name_taken(name: &str) -> ApiError {
    ApiError::conflict("secret_binding_name_taken", format!("A secret binding named `{name}` already exists."))
}

/// A unique-name race lost to another request reads as the name taken.
fn taken_or(e: sqlx::Error, name: &str) -> ApiError {
    match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => name_taken(name),
        _ => e.into(),
    }
}
