//! The `webhooks` extension: signed webhooks (spec 2.7, 3.2, 6.1),
//! endpoints and their API, the durable delivery queue, the delivery loop
//! and the address rules. It plugs in through the public extension contract
//! only: its routes, its tables, its `[webhooks]` section (and
//! `WEBHOOK_ALLOW_HTTP`), its worker, and the event-appended hook that writes deliveries in the same
//! transaction as their event.

mod apply;
pub mod config;
mod console;
pub mod model;
pub mod queue;
pub mod rules;
pub mod send;
pub mod signature;
pub mod store;
pub mod worker;

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use sqlx::migrate::Migrator;
use sqlx::{Any, Transaction};
use tokio::sync::Notify;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use acs_platform::audit::{self, Actor};
use acs_platform::auth::Principal;
use acs_platform::config::{ConfigError, Loaded};
use acs_platform::db::Backend;
use acs_platform::error::{ApiError, ApiResult};
use acs_platform::events::Event;
use acs_platform::extension::{
    BoxError, BoxFuture, ConsoleLink, ExportSink, Extension, Registration, RouteGroup, Worker,
};
use acs_platform::http::extract::{Validator, page_limit};
use acs_platform::http::{Data, Json, Path, Query, created, ok};
use acs_platform::state::AppState;
use acs_platform::state::hooks::OnAppend;
use config::WebhooksConfig;

use model::{
    DeliveryPageMeta, DeliveryQuery, EndpointStatus, WebhookDelivery, WebhookDeliveryList, WebhookEndpoint,
    WebhookEndpointCreateRequest, WebhookEndpointUpdateRequest, WebhookEndpointWithSecret,
};

/// Per-server webhook state: the delivery loop's doorbell, kept in the
/// server's slots.
#[derive(Default)]
pub(crate) struct Doorbell(Notify);

pub(crate) fn doorbell(state: &AppState) -> Arc<Doorbell> {
    state.get_or_put(Doorbell::default)
}

/// Tells this server's delivery loop that something is due now.
pub fn wake(state: &AppState) {
    doorbell(state).0.notify_one();
}

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("migrations/postgres");

/// The extension's name: its flag, section and migration history.
pub(crate) const NAME: &str = "webhooks";

pub struct Webhooks;

inventory::submit! { Registration(&Webhooks) }

impl Extension for Webhooks {
    fn name(&self) -> &'static str {
        NAME
    }

    fn config_defaults(&self) -> Option<serde_json::Value> {
        serde_json::to_value(WebhooksConfig::default()).ok()
    }

    fn env_aliases(&self) -> &'static [(&'static str, &'static str)] {
        // The spec's own name for the scheme switch.
        &[("WEBHOOK_ALLOW_HTTP", "allow_http")]
    }

    fn tags(&self) -> &'static [(&'static str, &'static str)] {
        &[("webhooks", "Signed webhook endpoints, their deliveries and attempts")]
    }

    fn routes(&self) -> Vec<RouteGroup> {
        vec![RouteGroup::account(router()), RouteGroup::session(console::pages())]
    }

    fn apply_kinds(&self) -> Vec<Arc<dyn acs_platform::apply::ApplyKind>> {
        vec![Arc::new(apply::WebhookKind)]
    }

    fn console_links(&self) -> Vec<ConsoleLink> {
        vec![ConsoleLink { label: "Webhooks", path: "/account/webhooks" }]
    }

    fn migrations(&self, backend: Backend) -> Option<&'static Migrator> {
        Some(match backend {
            Backend::Sqlite => &SQLITE_MIGRATIONS,
            Backend::Postgres => &POSTGRES_MIGRATIONS,
        })
    }

    fn check_config(&self, loaded: &Loaded) -> Result<(), ConfigError> {
        loaded.section::<WebhooksConfig>("webhooks")?.check()
    }

    fn on_append(&self) -> Option<Arc<dyn OnAppend>> {
        Some(Arc::new(Enqueue))
    }

    fn workers(&self, state: &AppState) -> Vec<Worker> {
        vec![Box::pin(worker::run(state.clone()))]
    }

    /// The account's endpoints as the API shows them: never the signing secret.
    fn on_export<'a>(
        &'a self,
        state: &'a AppState,
        account_id: Uuid,
        out: &'a mut dyn ExportSink,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            out.begin_list("webhooks").await?;
            for endpoint in store::endpoints(state, account_id, None).await? {
                out.item(&serde_json::to_value(&endpoint)?).await?;
            }
            out.end_list().await
        })
    }
}

/// The event-appended hook: deliveries are written in the appending
/// transaction, so an event and its deliveries commit together.
struct Enqueue;

impl OnAppend for Enqueue {
    fn appended<'a>(
        &'a self,
        tx: &'a mut Transaction<'static, Any>,
        events: &'a [Event],
    ) -> BoxFuture<'a, Result<bool, sqlx::Error>> {
        Box::pin(queue::enqueue(tx, events))
    }

    fn committed(&self, app: &AppState) {
        wake(app);
    }
}

fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(get_one, update, delete))
        .routes(routes!(rotate_secret))
        .routes(routes!(resume))
        .routes(routes!(send_test))
        .routes(routes!(deliveries))
        .routes(routes!(delivery))
        .routes(routes!(redeliver))
}

const BY_OWNER: &str = "disabled by owner";

async fn find(state: &AppState, p: &Principal, id: Uuid) -> ApiResult<WebhookEndpoint> {
    store::endpoints(state, p.account_id, Some(id)).await?.pop().ok_or_else(|| ApiError::not_found("Webhook endpoint"))
}

fn check_event_types(v: &mut Validator, types: &[String]) {
    v.check(!types.is_empty(), "event_types", "should list at least one event type");
    v.check(types.len() <= rules::MAX_FILTERS, "event_types", "should list at most 64 event types");
    for t in types.iter().filter(|t| !rules::valid_filter(t)) {
        v.check(false, "event_types", &format!("`{t}` is not an event type, `conversation.<stage>.*` or `*`"));
    }
}

fn check_description(v: &mut Validator, description: Option<&str>) {
    let len = description.map_or(0, |d| d.chars().count());
    v.check(len <= rules::MAX_DESCRIPTION, "description", "should be at most 500 character(s)");
}

fn check_url(v: &mut Validator, state: &AppState, url: &str) {
    if let Err(msg) = rules::check_url(url, config::of(state).allow_http) {
        v.check(false, "url", msg);
    }
}

/// The secret sealed for storage.
async fn seal(state: &AppState, account_id: Uuid, id: Uuid, secret: &str) -> ApiResult<String> {
    Ok(state.crypto.encrypt(&state.db, account_id, &store::secret_aad(id), secret).await?)
}

/// The account's webhook endpoints, newest first.
#[utoipa::path(get, path = "/api/webhooks", operation_id = "listWebhookEndpoints", tag = "webhooks",
    responses((status = 200, body = Data<Vec<WebhookEndpoint>>)))]
async fn list(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<WebhookEndpoint>>> {
    Ok(ok(store::endpoints(&state, p.account_id, None).await?))
}

/// Creates an endpoint; the signing secret is in this answer only. Full-scope key.
#[utoipa::path(post, path = "/api/webhooks", operation_id = "createWebhookEndpoint", tag = "webhooks", request_body = WebhookEndpointCreateRequest,
    responses((status = 201, body = Data<WebhookEndpointWithSecret>),
        (status = 422, description = "`validation_failed` naming `url`, `event_types` or `description`",
            body = acs_platform::error::ErrorBody)))]
async fn create(
    State(state): State<AppState>,
    p: Principal,
    Json(req): Json<WebhookEndpointCreateRequest>,
) -> ApiResult<(StatusCode, Data<WebhookEndpointWithSecret>)> {
    p.require_full()?;
    let event_types = req.event_types.unwrap_or_else(|| rules::DEFAULT_TYPES.iter().map(|t| (*t).to_owned()).collect());
    let mut v = Validator::default();
    check_url(&mut v, &state, &req.url);
    check_event_types(&mut v, &event_types);
    check_description(&mut v, req.description.as_deref());
    v.finish()?;
    let id = Uuid::now_v7();
    let secret = signature::new_secret();
    let sealed = seal(&state, p.account_id, id, &secret).await?;
    let mut tx = state.db.begin().await?;
    store::insert_endpoint(
        &mut tx,
        &store::NewEndpoint {
            id,
            account_id: p.account_id,
            url: &req.url,
            event_types: &event_types,
            description: req.description.as_deref(),
            sealed_secret: &sealed,
        },
    )
    .await?;
    audit::record(&mut *tx, &Actor::key(&p), "webhook_endpoint.created", Some(("webhook_endpoint", id))).await?;
    tx.commit().await?;
    let endpoint = find(&state, &p, id).await?;
    Ok(created(WebhookEndpointWithSecret { endpoint, secret }))
}

/// One endpoint (without its secret).
#[utoipa::path(get, path = "/api/webhooks/{id}", operation_id = "getWebhookEndpoint", tag = "webhooks", params(("id" = Uuid, Path)),
    responses((status = 200, body = Data<WebhookEndpoint>)))]
async fn get_one(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Data<WebhookEndpoint>> {
    Ok(ok(find(&state, &p, id).await?))
}

/// Changes the URL, filters or description; `status: disabled` switches delivery off,
/// `status: active` resumes it. Full-scope key.
#[utoipa::path(patch, path = "/api/webhooks/{id}", operation_id = "updateWebhookEndpoint", tag = "webhooks", params(("id" = Uuid, Path)),
    request_body = WebhookEndpointUpdateRequest, responses((status = 200, body = Data<WebhookEndpoint>)))]
async fn update(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<WebhookEndpointUpdateRequest>,
) -> ApiResult<Data<WebhookEndpoint>> {
    p.require_full()?;
    let mut v = Validator::default();
    if let Some(url) = &req.url {
        check_url(&mut v, &state, url);
    }
    if let Some(types) = &req.event_types {
        check_event_types(&mut v, types);
    }
    if let Some(d) = &req.description {
        check_description(&mut v, d.as_deref());
    }
    v.finish()?;
    find(&state, &p, id).await?;
    let mut tx = state.db.begin().await?;
    let change = store::EndpointChange {
        url: req.url.as_deref(),
        event_types: req.event_types.as_deref(),
        description: req.description.as_ref().map(|d| d.as_deref()),
        sealed_secret: None,
    };
    store::update_endpoint(&mut tx, id, &change).await?;
    match req.status {
        Some(EndpointStatus::Active) => store::set_status(&mut *tx, id, None).await?,
        Some(EndpointStatus::Disabled) => store::set_status(&mut *tx, id, Some(BY_OWNER)).await?,
        None => 0,
    };
    audit::record(&mut *tx, &Actor::key(&p), "webhook_endpoint.updated", Some(("webhook_endpoint", id))).await?;
    tx.commit().await?;
    if req.status == Some(EndpointStatus::Active) {
        wake(&state);
    }
    Ok(ok(find(&state, &p, id).await?))
}

/// Deletes an endpoint with its deliveries. Full-scope key.
#[utoipa::path(delete, path = "/api/webhooks/{id}", operation_id = "deleteWebhookEndpoint", tag = "webhooks", params(("id" = Uuid, Path)),
    responses((status = 204, description = "Deleted")))]
async fn delete(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<StatusCode> {
    p.require_full()?;
    find(&state, &p, id).await?;
    let mut tx = state.db.begin().await?;
    store::delete_endpoint(&mut tx, id).await?;
    audit::record(&mut *tx, &Actor::key(&p), "webhook_endpoint.deleted", Some(("webhook_endpoint", id))).await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Replaces the signing secret; the old one stops at once. The new secret is in this answer only.
#[utoipa::path(post, path = "/api/webhooks/{id}/rotate-secret", operation_id = "rotateWebhookSecret", tag = "webhooks", params(("id" = Uuid, Path)),
    responses((status = 200, body = Data<WebhookEndpointWithSecret>)))]
async fn rotate_secret(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Data<WebhookEndpointWithSecret>> {
    p.require_full()?;
    find(&state, &p, id).await?;
    let secret = signature::new_secret();
    let sealed = seal(&state, p.account_id, id, &secret).await?;
    let mut tx = state.db.begin().await?;
    let change = store::EndpointChange { sealed_secret: Some(&sealed), ..Default::default() };
    store::update_endpoint(&mut tx, id, &change).await?;
    audit::record(&mut *tx, &Actor::key(&p), "webhook_endpoint.secret_rotated", Some(("webhook_endpoint", id))).await?;
    tx.commit().await?;
    Ok(ok(WebhookEndpointWithSecret { endpoint: find(&state, &p, id).await?, secret }))
}

/// Switches a disabled endpoint back on and clears its failure count; queued deliveries go out.
#[utoipa::path(post, path = "/api/webhooks/{id}/resume", operation_id = "resumeWebhookEndpoint", tag = "webhooks", params(("id" = Uuid, Path)),
    responses((status = 200, body = Data<WebhookEndpoint>)))]
async fn resume(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<Data<WebhookEndpoint>> {
    p.require_full()?;
    find(&state, &p, id).await?;
    let mut tx = state.db.begin().await?;
    store::set_status(&mut *tx, id, None).await?;
    audit::record(&mut *tx, &Actor::key(&p), "webhook_endpoint.resumed", Some(("webhook_endpoint", id))).await?;
    tx.commit().await?;
    wake(&state);
    Ok(ok(find(&state, &p, id).await?))
}

/// Sends a `webhook.test` event now (also to a disabled endpoint); one attempt, no retries.
#[utoipa::path(post, path = "/api/webhooks/{id}/test", operation_id = "sendWebhookTest", tag = "webhooks", params(("id" = Uuid, Path)),
    responses((status = 202, body = Data<WebhookDelivery>)))]
async fn send_test(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<(StatusCode, Data<WebhookDelivery>)> {
    p.require_full()?;
    find(&state, &p, id).await?;
    let delivery_id = queue::enqueue_test(&state, p.account_id, id).await?;
    let d = store::delivery(&state, id, delivery_id).await?.ok_or_else(ApiError::internal)?;
    Ok((StatusCode::ACCEPTED, ok(d)))
}

/// The endpoint's deliveries, newest first, each with its attempts.
#[utoipa::path(get, path = "/api/webhooks/{id}/deliveries", operation_id = "listWebhookDeliveries", tag = "webhooks",
    params(("id" = Uuid, Path), DeliveryQuery), responses((status = 200, body = WebhookDeliveryList)))]
async fn deliveries(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Query(q): Query<DeliveryQuery>,
) -> ApiResult<axum::Json<WebhookDeliveryList>> {
    find(&state, &p, id).await?;
    let limit = page_limit(q.limit, 50, 200)?;
    let mut data = store::deliveries(&state, id, q.before, q.status, limit).await?;
    let has_more = data.len() as i64 > limit;
    data.truncate(limit as usize);
    let next_cursor = data.last().map(|d| d.id);
    Ok(axum::Json(WebhookDeliveryList { data, meta: DeliveryPageMeta { limit, has_more, next_cursor } }))
}

/// One delivery with its attempts.
#[utoipa::path(get, path = "/api/webhooks/{id}/deliveries/{delivery_id}", operation_id = "getWebhookDelivery", tag = "webhooks",
    params(("id" = Uuid, Path), ("delivery_id" = Uuid, Path)), responses((status = 200, body = Data<WebhookDelivery>)))]
async fn delivery(
    State(state): State<AppState>,
    p: Principal,
    Path((id, delivery_id)): Path<(Uuid, Uuid)>,
) -> ApiResult<Data<WebhookDelivery>> {
    find(&state, &p, id).await?;
    Ok(ok(store::delivery(&state, id, delivery_id).await?.ok_or_else(|| ApiError::not_found("Delivery"))?))
}

/// Sends a delivery once more now, to the endpoint's current URL with its current secret.
#[utoipa::path(post, path = "/api/webhooks/{id}/deliveries/{delivery_id}/redeliver", operation_id = "redeliverWebhookDelivery", tag = "webhooks",
    params(("id" = Uuid, Path), ("delivery_id" = Uuid, Path)),
    responses((status = 202, body = Data<WebhookDelivery>),
        (status = 409, description = "`delivery_pending`: attempts are still due", body = acs_platform::error::ErrorBody)))]
async fn redeliver(
    State(state): State<AppState>,
    p: Principal,
    Path((id, delivery_id)): Path<(Uuid, Uuid)>,
) -> ApiResult<(StatusCode, Data<WebhookDelivery>)> {
    p.require_full()?;
    find(&state, &p, id).await?;
    store::delivery(&state, id, delivery_id).await?.ok_or_else(|| ApiError::not_found("Delivery"))?;
    if !queue::redeliver(&state, id, delivery_id).await? {
        return Err(ApiError::conflict(
            "delivery_pending",
            "This delivery still has attempts due; redeliver it once it succeeded or gave up.",
        ));
    }
    let d = store::delivery(&state, id, delivery_id).await?.ok_or_else(ApiError::internal)?;
    Ok((StatusCode::ACCEPTED, ok(d)))
}
