//! The `chat_relay` extension: hosted chat-relay identities (spec 2.8,
//! DESIGN 9.7). An owner provisions a Nostr identity for an agent; the
//! harness (a worker) keeps a relay connection per enabled identity, and
//! answers encrypted direct messages (NIP-17 and NIP-04) from the people
//! `respond_to` admits with a turn of the agent in the conversation whose
//! `channel_id` is the sender's key. docs/chat-relay.md tells the whole.
//!
//! It reaches core only through the public extension contract and core's
//! API in process (`api.rs`).

mod api;
pub mod config;
mod harness;
pub mod model;
pub mod rules;
mod store;
mod turn;

use std::sync::Arc;

use acs_platform::audit::{self, Actor};
use acs_platform::auth::Principal;
use acs_platform::config::{ConfigError, Loaded};
use acs_platform::console::Api;
use acs_platform::db::Backend;
use acs_platform::error::{ApiError, ApiResult};
use acs_platform::extension::{BoxError, BoxFuture, ExportSink, Extension, Registration, RouteGroup, Worker};
use acs_platform::http::{Data, Json, Path, ok};
use acs_platform::state::AppState;
use acs_platform::time_fmt::now_micros;
use axum::Extension as Ext;
use axum::extract::State;
use axum::http::StatusCode;
use sqlx::migrate::Migrator;
use tokio::sync::Notify;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use config::ChatRelayConfig;
use model::{ChatRelayIdentity, ChatRelayIdentityProvision, ChatRelayIdentityUpdate};
use store::Row;

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("migrations/postgres");

/// The extension's name: its flag, section, migration history and 404.
pub const NAME: &str = "chat_relay";

pub struct ChatRelay;

inventory::submit! { Registration(&ChatRelay) }

/// Rings when an identity changed, so this server's harness reconciles at once.
#[derive(Default)]
pub(crate) struct Doorbell(Notify);

pub(crate) fn doorbell(state: &AppState) -> Arc<Doorbell> {
    state.get_or_put(Doorbell::default)
}

fn wake(state: &AppState) {
    doorbell(state).0.notify_one();
}

impl Extension for ChatRelay {
    fn name(&self) -> &'static str {
        NAME
    }

    fn enabled_by_default(&self) -> bool {
        false
    }

    fn config_defaults(&self) -> Option<serde_json::Value> {
        serde_json::to_value(ChatRelayConfig::default()).ok()
    }

    fn check_config(&self, loaded: &Loaded) -> Result<(), ConfigError> {
        loaded.section::<ChatRelayConfig>(NAME).map(|_| ())
    }

    fn migrations(&self, backend: Backend) -> Option<&'static Migrator> {
        Some(match backend {
            Backend::Sqlite => &SQLITE_MIGRATIONS,
            Backend::Postgres => &POSTGRES_MIGRATIONS,
        })
    }

    fn tags(&self) -> &'static [(&'static str, &'static str)] {
        &[("chat-relay", "Hosted chat-relay identities: an agent answering encrypted Nostr direct messages")]
    }

    fn routes(&self) -> Vec<RouteGroup> {
        vec![RouteGroup::account(
            OpenApiRouter::new().routes(routes!(list_identities, create_identity)).routes(routes!(
                get_identity,
                update_identity,
                delete_identity
            )),
        )]
    }

    fn workers(&self, state: &AppState) -> Vec<Worker> {
        vec![Box::pin(harness::run(state.clone()))]
    }

    fn on_account_deleted<'a>(&'a self, state: &'a AppState, account_id: Uuid) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move { Ok(store::delete_account(state, account_id).await?) })
    }

    /// The account's identities as the API shows them: never the private key.
    fn on_export<'a>(
        &'a self,
        state: &'a AppState,
        account_id: Uuid,
        out: &'a mut dyn ExportSink,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            out.begin_list("chat_relay_identities").await?;
            for row in store::of_account(state, account_id).await? {
                out.item(&serde_json::to_value(row.view())?).await?;
            }
            out.end_list().await
        })
    }
}

async fn find(state: &AppState, p: &Principal, id: Uuid) -> ApiResult<Row> {
    store::find(state, p.account_id, id).await?.ok_or_else(|| ApiError::not_found("Chat relay identity"))
}

/// The agent and environment named exist for the caller (core's 404 otherwise).
async fn check_references(api: &Api, p: &Principal, agent_id: Uuid, environment_id: Option<Uuid>) -> ApiResult<()> {
    api::check_exists(api, p, "agents", agent_id).await?;
    if let Some(env) = environment_id {
        api::check_exists(api, p, "environments", env).await?;
    }
    Ok(())
}

/// The caller's chat-relay identities, newest first.
#[utoipa::path(get, path = "/api/chat-relay/identities", operation_id = "listChatRelayIdentities", tag = "chat-relay",
    responses((status = 200, body = Data<Vec<ChatRelayIdentity>>)))]
async fn list_identities(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<ChatRelayIdentity>>> {
    Ok(ok(store::of_account(&state, p.account_id).await?.iter().map(Row::view).collect()))
}

/// Provisions an identity: 201 when new, 200 when the caller already had one
/// with this `pubkey` (every field is then replaced; an omitted
/// `environment_id` or `sandbox_mode` clears it). The private key is sealed
/// on the server and never returned. Full-scope key.
#[utoipa::path(post, path = "/api/chat-relay/identities", operation_id = "createChatRelayIdentity", tag = "chat-relay",
    request_body = ChatRelayIdentityProvision,
    responses((status = 201, description = "Provisioned", body = Data<ChatRelayIdentity>),
        (status = 200, description = "Re-provisioned: the identity with this pubkey, updated", body = Data<ChatRelayIdentity>),
        (status = 404, description = "`not_found`: the agent or environment", body = acs_platform::error::ErrorBody),
        (status = 422, description = "`validation_failed`", body = acs_platform::error::ErrorBody)))]
async fn create_identity(
    State(state): State<AppState>,
    Ext(api): Ext<Api>,
    p: Principal,
    Json(req): Json<ChatRelayIdentityProvision>,
) -> ApiResult<(StatusCode, Data<ChatRelayIdentity>)> {
    p.require_full()?;
    let checked = rules::check_provision(&req, config::of(&state).allow_insecure_relays)?;
    check_references(&api, &p, req.agent_id, req.environment_id).await?;
    let existing = store::by_pubkey(&state, p.account_id, &checked.pubkey).await?;
    let now = now_micros();
    let (id, vault_id, created_at, enabled, cursor_at) = match &existing {
        Some(row) => (
            row.id,
            api::vault_or_new(&api, &p, row.vault_id, &req.name).await?,
            row.created_at,
            row.enabled,
            row.cursor_at,
        ),
        None => (Uuid::now_v7(), api::create_vault(&api, &p, &req.name).await?, now, true, None),
    };
    let sealed_nsec =
        state.crypto.encrypt(&state.db, p.account_id, &store::nsec_aad(id), req.private_key_nsec.trim()).await?;
    let row = Row {
        id,
        account_id: p.account_id,
        name: req.name,
        display_name: req.display_name,
        agent_id: req.agent_id,
        environment_id: req.environment_id,
        vault_id,
        pubkey: checked.pubkey,
        sealed_nsec,
        auth_tag: req.auth_tag,
        owner_pubkey: checked.owner,
        relay_url: req.relay_url,
        respond_to: checked.respond_to,
        allowlist: checked.allowlist,
        sandbox_mode: req.sandbox_mode,
        enabled,
        cursor_at,
        created_at,
        updated_at: now,
    };
    let status = if existing.is_some() {
        save(&state, &p, &row, Write::Update).await?;
        StatusCode::OK
    } else if let Err(e) = save(&state, &p, &row, Write::Insert).await {
        // The vault was made for this identity only (a concurrent provision of the same key loses here).
        api::delete_vault(&api, &p, vault_id).await;
        return Err(e);
    } else {
        StatusCode::CREATED
    };
    wake(&state);
    Ok((status, ok(find(&state, &p, id).await?.view())))
}

#[derive(Clone, Copy)]
enum Write {
    Insert,
    Update,
}

/// Writes an identity and its audit row in one transaction.
async fn save(state: &AppState, p: &Principal, row: &Row, write: Write) -> ApiResult<()> {
    let mut tx = state.db.begin().await?;
    let action = match write {
        Write::Insert => {
            store::insert(&mut tx, row).await?;
            "chat_relay_identity.created"
        }
        Write::Update => {
            store::update(&mut tx, row).await?;
            "chat_relay_identity.updated"
        }
    };
    audit::record(&mut *tx, &Actor::key(p), action, Some(("chat_relay_identity", row.id))).await?;
    tx.commit().await?;
    Ok(())
}

/// One identity (never its private key).
#[utoipa::path(get, path = "/api/chat-relay/identities/{id}", operation_id = "getChatRelayIdentity", tag = "chat-relay",
    params(("id" = Uuid, Path)),
    responses((status = 200, body = Data<ChatRelayIdentity>),
        (status = 404, description = "`not_found`", body = acs_platform::error::ErrorBody)))]
async fn get_identity(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Data<ChatRelayIdentity>> {
    Ok(ok(find(&state, &p, id).await?.view()))
}

/// Changes an identity; fields not named keep their value, `enabled: false`
/// closes its relay connection. A change restarts its harness. Full-scope key.
#[utoipa::path(patch, path = "/api/chat-relay/identities/{id}", operation_id = "updateChatRelayIdentity", tag = "chat-relay",
    params(("id" = Uuid, Path)), request_body = ChatRelayIdentityUpdate,
    responses((status = 200, body = Data<ChatRelayIdentity>),
        (status = 404, description = "`not_found`", body = acs_platform::error::ErrorBody),
        (status = 422, description = "`validation_failed`", body = acs_platform::error::ErrorBody)))]
async fn update_identity(
    State(state): State<AppState>,
    Ext(api): Ext<Api>,
    p: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<ChatRelayIdentityUpdate>,
) -> ApiResult<Data<ChatRelayIdentity>> {
    p.require_full()?;
    let mut row = find(&state, &p, id).await?;
    let allowlist =
        rules::check_update(&req, &row.allowlist, row.respond_to, config::of(&state).allow_insecure_relays)?;
    let agent_id = req.agent_id.unwrap_or(row.agent_id);
    let environment_id = req.environment_id.unwrap_or(row.environment_id);
    if req.agent_id.is_some() || req.environment_id.flatten().is_some() {
        check_references(&api, &p, agent_id, environment_id).await?;
    }
    row.name = req.name.unwrap_or(row.name);
    row.display_name = req.display_name.unwrap_or(row.display_name);
    row.relay_url = req.relay_url.unwrap_or(row.relay_url);
    row.agent_id = agent_id;
    row.environment_id = environment_id;
    row.respond_to = req.respond_to.unwrap_or(row.respond_to);
    row.allowlist = allowlist;
    row.sandbox_mode = req.sandbox_mode.unwrap_or(row.sandbox_mode);
    row.enabled = req.enabled.unwrap_or(row.enabled);
    row.updated_at = now_micros();
    save(&state, &p, &row, Write::Update).await?;
    wake(&state);
    Ok(ok(find(&state, &p, id).await?.view()))
}

/// Deletes an identity: its relay connection closes, its sealed key and the
/// vault made for it go. Full-scope key.
#[utoipa::path(delete, path = "/api/chat-relay/identities/{id}", operation_id = "deleteChatRelayIdentity", tag = "chat-relay",
    params(("id" = Uuid, Path)),
    responses((status = 204, description = "Deleted"),
        (status = 404, description = "`not_found`", body = acs_platform::error::ErrorBody)))]
async fn delete_identity(
    State(state): State<AppState>,
    Ext(api): Ext<Api>,
    p: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    p.require_full()?;
    let row = find(&state, &p, id).await?;
    let mut tx = state.db.begin().await?;
    store::delete(&mut tx, id).await?;
    audit::record(&mut *tx, &Actor::key(&p), "chat_relay_identity.deleted", Some(("chat_relay_identity", id))).await?;
    tx.commit().await?;
    wake(&state);
    api::delete_vault(&api, &p, row.vault_id).await;
    Ok(StatusCode::NO_CONTENT)
}
