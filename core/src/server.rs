//! Assembles the application (core routes plus enabled extensions), serves
//! it, runs the workers, and shuts down gracefully.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower_http::catch_panic::CatchPanicLayer;
use utoipa::openapi::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use crate::cache::TtlCache;
use crate::config::Loaded;
use crate::db::Db;
use crate::error::ApiError;
use crate::extension::{self, Access, BoxError, Extension, RouteGroup};
use crate::http::middleware;
use crate::mail::Mailer;
use crate::metrics::Metrics;
use crate::ratelimit::RateLimiter;
use crate::state::{AppState, Inner};
use crate::{
    accounts, agents, audit, auth, catalog, credentials, device, docs, environments, health, keys, oauth, search,
    secrets, session, vaults,
};

/// The assembled application, ready to serve.
pub struct App {
    pub state: AppState,
    pub router: Router,
    pub openapi: Arc<OpenApi>,
    pub extensions: Vec<&'static dyn Extension>,
}

#[derive(Clone)]
struct Gate {
    state: AppState,
    name: &'static str,
}

/// A compiled-in extension whose flag is off answers `404 <name>_not_enabled`.
async fn feature_gate(State(gate): State<Gate>, req: Request, next: Next) -> Response {
    if gate.state.feature_enabled(gate.name) {
        next.run(req).await
    } else {
        ApiError::new(
            StatusCode::NOT_FOUND,
            &format!("{}_not_enabled", gate.name),
            format!("The {} feature is not enabled on this instance.", gate.name),
        )
        .into_response()
    }
}

/// One route group of an extension behind the authentication its access
/// names, documented as such, and gated by the flag when it says so.
/// The tags of core's operations, in the order the document lists them.
const TAGS: &[(&str, &str)] = &[
    ("auth", "Registration, sign-in and email verification"),
    ("account", "The signed-in account: password, email, credits"),
    ("keys", "API keys: full or restricted scope, expiry, revocation"),
    ("oauth", "OAuth clients of browser apps and the PKCE token exchange"),
    ("audit", "The account's audit log"),
    ("catalog", "What this instance offers: runtimes, models, sandbox providers"),
    ("agents", "Agents: a runtime, model and instructions, versioned on every change"),
    ("environments", "Environments: repositories, packages, setup script and secrets of a machine"),
    ("vaults", "Vaults: secrets an agent's tools may use"),
    ("inference-credentials", "Provider credentials for the account's own inference, in sets"),
    ("claimable-users", "Claimable principals: accounts an application opens for a person to claim"),
    ("conversations", "Conversations: turns with an agent on a sandbox, their event log and streams"),
    ("events", "Live events of every conversation of the account"),
    ("sandboxes", "Sandboxes: the machines conversations run on, their files, changes and egress"),
    ("sandbox-queue", "Sandbox starts waiting for capacity"),
    ("secret-bindings", "Secret bindings: credentials the egress broker adds outside the machine"),
    ("team", "Teammates: agents with a stable conversation, messages and cron schedules"),
    ("search", "Search across agents, environments and vaults"),
    (
        "apply",
        "Bulk apply: a manifest of environments, vaults, agents, teammates and schedules, and the extensions' kinds",
    ),
    ("runners", "Runners: your own computers serving sandboxes over a WebSocket they dial"),
    ("health", "Liveness and readiness"),
];

fn mount(state: &AppState, name: &'static str, group: RouteGroup) -> Result<OpenApiRouter<AppState>, BoxError> {
    let mut router = group.router;
    let gate = |router: OpenApiRouter<AppState>| {
        router.route_layer(from_fn_with_state(Gate { state: state.clone(), name }, feature_gate))
    };
    // A layer added later runs first. The flag's answer comes after
    // authentication, but for operators before it: with the flag off no
    // extension is there to say who is one.
    let flag_first = group.gated && group.access == Access::Operator;
    if group.gated && !flag_first {
        router = gate(router);
    }
    let router = match group.access {
        Access::Public => {
            docs::mark_public(router.get_openapi_mut());
            router
        }
        Access::Account => {
            docs::mark_authenticated(router.get_openapi_mut());
            router.route_layer(from_fn_with_state(state.clone(), auth::authenticate_account))
        }
        Access::Sandbox => {
            docs::mark_authenticated(router.get_openapi_mut());
            router.route_layer(from_fn_with_state(state.clone(), auth::authenticate_sandbox))
        }
        Access::Operator => {
            docs::mark_authenticated(router.get_openapi_mut());
            router.route_layer(from_fn_with_state(state.clone(), auth::authenticate_operator))
        }
        Access::Session => {
            if let Some(path) = router.get_openapi_mut().paths.paths.keys().next() {
                return Err(format!(
                    "extension {name}: `{path}` is documented in a browser-session group; pages are added with .route()"
                )
                .into());
            }
            router.route_layer(from_fn_with_state(state.clone(), session::require))
        }
    };
    Ok(if flag_first { gate(router) } else { router })
}

/// Connects storage, builds state and routes. Does not listen yet.
pub async fn build(loaded: Loaded) -> Result<App, BoxError> {
    let exts = extension::all();
    extension::check_unique(&exts)?;
    // One TLS provider for reqwest and lettre; a second call finds it installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let db = Db::connect(&loaded.config.database)
        .await
        .map_err(|e| format!("database {}: {e}", redact_url(&loaded.config.database.url)))?;
    extension::migrate(&db).await.map_err(|e| format!("database migration failed: {e}"))?;
    let keyring = secrets::load_keyring(&loaded.config.secrets)?;
    let cache_ttl = Duration::from_secs(loaded.config.auth.cache_seconds);
    // The operators' stored choices hold over the configuration from the start.
    let stored = acs_platform::features::stored(&db).await.map_err(|e| format!("reading runtime flags: {e}"))?;
    let flags =
        Arc::new(acs_platform::state::Flags::new(acs_platform::features::effective(&loaded.config.features, &stored)));
    let state = AppState::new(Inner {
        key_cache: TtlCache::new(cache_ttl, 100_000),
        account_cache: TtlCache::new(cache_ttl, 100_000),
        crypto: secrets::Crypto::new(keyring),
        limiter: RateLimiter::new(&loaded.config.limits),
        mailer: Mailer::from_config(&loaded.config.email)?,
        metrics: Metrics::new(loaded.config.metrics.enabled),
        features: flags.clone(),
        shutdown: CancellationToken::new(),
        http: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()?,
        slots: Default::default(),
        events: Default::default(),
        event_hooks: crate::state::Hooks::new(extension::append_hooks(&exts, &flags)),
        queue: Default::default(),
        extensions: extension::contributions(&exts, &loaded, &flags),
        request_ids: crate::state::RequestIds::new(),
        db,
        loaded,
    });

    let mut public = OpenApiRouter::new()
        .merge(health::router())
        .merge(accounts::public_router())
        .merge(device::router())
        .merge(oauth::public_router());
    docs::mark_public(public.get_openapi_mut());

    let mut protected = OpenApiRouter::new()
        .merge(accounts::router())
        .merge(keys::router())
        .merge(oauth::router())
        .merge(audit::router())
        .merge(catalog::router())
        .merge(agents::router())
        .merge(environments::router())
        .merge(vaults::router())
        .merge(credentials::router())
        .merge(crate::claimable::router())
        .merge(search::router())
        .merge(crate::sandboxes::router())
        .merge(crate::events::stream::router())
        .merge(crate::conversations::router())
        .merge(crate::conversations::feed::router())
        .merge(crate::credits::router())
        .merge(crate::queue::router())
        .merge(crate::team::router())
        .merge(crate::account::router())
        .merge(crate::apply::router())
        .merge(crate::runners::router())
        .merge(crate::broker::router());
    docs::mark_authenticated(protected.get_openapi_mut());
    let protected = protected.route_layer(from_fn_with_state(state.clone(), auth::authenticate));
    let mut routes = public.merge(protected);
    for ext in &exts {
        for group in ext.routes() {
            routes = routes.merge(mount(&state, ext.name(), group)?);
        }
    }
    let (router, api) = routes.split_for_parts();
    // The console's pages ask this router in process (`console::api`); it
    // reaches them as a request extension. Extensions' workers find it in
    // the slots: a cycle through the state, broken at shutdown.
    let in_process = crate::console::Api(router.clone().with_state(state.clone()));
    state.put_any(Arc::new(in_process.clone()));
    let nav = crate::console::links()
        .into_iter()
        .map(|l| (None, l))
        .chain(state.extensions.console_links.iter().map(|(ext, l)| (Some(*ext), *l)))
        .collect();
    state.put_any(Arc::new(crate::console::Nav(nav)));
    // A disabled extension's kinds stay known: applying one reaches its gated routes, which refuse.
    let kinds = exts.iter().flat_map(|e| e.apply_kinds()).collect();
    state.put_any(Arc::new(acs_platform::apply::ApplyKinds(kinds)));
    let about = docs::About {
        tags: TAGS.iter().chain(exts.iter().flat_map(|e| e.tags())).copied().collect(),
        public_url: state.config().public_url.as_deref(),
    };
    let mut api = docs::finish(api, &about);
    docs::check(&mut api)?;
    docs::add_fields(&mut api, "Me", "/api/auth/me", &state.extensions.me_fields);
    docs::add_fields(&mut api, "Catalog", "/api/catalog", &state.extensions.catalog_fields);
    let openapi = Arc::new(api);
    let html = Arc::new(docs::render_html(&openapi));

    let doc = openapi.clone();
    // Pages (sign-in, device approval) are not API operations: merged after
    // the document is taken, so they stay out of it.
    let mut router = router
        .merge(session::pages::router())
        .merge(session::html::assets())
        .merge(crate::console::router())
        .merge(device::pages())
        .merge(oauth::authorize::pages())
        // A WebSocket with its own token: not an operation of the document (docs/runners.md).
        .merge(crate::runners::connect::router())
        .route("/api/docs", get(move || async move { axum::Json(doc.as_ref().clone()) }))
        .route("/docs", get(move || async move { Html(html.as_ref().clone()) }));
    router = router.fallback(middleware::fallback).method_not_allowed_fallback(middleware::method_not_allowed);
    if state.metrics.enabled() {
        router = router
            .route("/metrics", get(metrics_text))
            .layer(from_fn_with_state(state.clone(), middleware::record_metrics));
    }
    let max_body = state.config().limits.max_body_bytes;
    let router = router
        .layer(axum::Extension(in_process))
        .layer(DefaultBodyLimit::max(max_body))
        .layer(CatchPanicLayer::custom(|_| ApiError::internal().into_response()))
        // Outermost: request id, tracing span, 406, client address, coarse limit.
        .layer(from_fn_with_state(state.clone(), middleware::admit))
        // Outside even that: preflights are answered first, and every answer
        // to an allowed origin (a 429 too) is readable by the app.
        .layer(from_fn_with_state(state.clone(), oauth::cors::layer))
        .with_state(state.clone());
    Ok(App { state, router, openapi, extensions: exts })
}

async fn metrics_text(State(state): State<AppState>) -> Response {
    let mut text = state.metrics.render();
    text.push_str(&crate::sandboxes::pool::metrics(&state).await);
    let mut res = text.into_response();
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4"));
    res
}

fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://****{}", &url[..s], &url[at..]),
        _ => url.to_owned(),
    }
}

/// A server listening in the background (used by `acs serve` and the tests).
pub struct Running {
    pub addr: SocketAddr,
    pub state: AppState,
    pub openapi: Arc<OpenApi>,
    task: tokio::task::JoinHandle<Result<(), BoxError>>,
}

impl Running {
    /// Stops accepting, lets requests in flight finish, stops workers.
    pub async fn shutdown(self) -> Result<(), BoxError> {
        self.state.shutdown.cancel();
        self.task.await?
    }

    /// Waits until the server stops (after a signal or `shutdown`).
    pub async fn wait(self) -> Result<(), BoxError> {
        self.task.await?
    }
}

/// Builds the app, binds `listener`, runs extensions' `init` and workers, and
/// serves until `state.shutdown` is cancelled.
pub async fn start(loaded: Loaded, listener: TcpListener) -> Result<Running, BoxError> {
    let app = build(loaded).await?;
    let state = app.state.clone();
    let addr = listener.local_addr()?;
    state.put_any(Arc::new(crate::conversations::engine::warm_hooks()));
    state.put_any(Arc::new(crate::sandboxes::service::MachineObserver {
        ready: |state, id| Box::pin(crate::conversations::engine::machine_ready(state, id)),
        failed: |state, id| Box::pin(crate::conversations::engine::machine_failed(state, id)),
    }));
    state.put_any(Arc::new(crate::replicas::TakeOver {
        machine: |state, id| Box::pin(crate::sandboxes::service::take_over(state, id)),
        turn: |state, id| Box::pin(crate::conversations::engine::reattach(state, id)),
        control: |state, control| Box::pin(async move { crate::conversations::engine::apply(&state, control).await }),
        served: |state| {
            crate::sandboxes::service::service(state)
                .map(|svc| svc.all().flat_map(|p| p.served()).collect())
                .unwrap_or_default()
        },
        let_go: |state, id| {
            if let Ok(svc) = crate::sandboxes::service::service(state) {
                // Only the provider serving it holds anything of it.
                for provider in svc.all() {
                    provider.let_go(id);
                }
            }
        },
    }));
    state.put_any(Arc::new(crate::accounts::OnSuspended(|state, account| {
        Box::pin(crate::conversations::engine::interrupt_account(state, account))
    })));
    state.put_any(Arc::new(crate::credentials::OnGrantNamed(|state, set| {
        Box::pin(crate::conversations::engine::interrupt_set_codex(state, set))
    })));
    state.put_any(Arc::new(crate::queue::OnSettled(|state, schedule, outcome| {
        Box::pin(crate::team::schedules::run_settled(state, schedule, outcome))
    })));
    crate::broker::start(&state, false)?;
    let sweeper = crate::sandboxes::start(&state, addr).await?;
    crate::replicas::start(&state).await?;
    crate::conversations::engine::open_queued(&state).await;
    for ext in &app.extensions {
        if let Some(own) = ext.init(&state).await.map_err(|e| format!("extension {}: {e}", ext.name()))? {
            state.put_any(own);
        }
    }
    let mut workers = JoinSet::new();
    workers.spawn(sweeper);
    workers.spawn(crate::events::relay::relay(state.clone()));
    workers.spawn(crate::replicas::run(state.clone()));
    workers.spawn(crate::team::scheduler::run(state.clone()));
    workers.spawn(crate::queue::worker::run(state.clone()));
    workers.spawn(crate::credits::meter::run(state.clone()));
    workers.spawn(crate::account::worker(state.clone()));
    workers.spawn(acs_platform::features::watch(state.clone()));
    for ext in &app.extensions {
        for w in ext.workers(&state) {
            workers.spawn(w);
        }
    }
    let token = state.shutdown.clone();
    let service = app.router.into_make_service_with_connect_info::<SocketAddr>();
    let st = state.clone();
    let exts = app.extensions;
    let task = tokio::spawn(async move {
        // Small writes (SSE events, a runner's calls) go out at once, not after a delayed ACK.
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!("TCP_NODELAY not set: {e}");
            }
        });
        let served = axum::serve(listener, service).with_graceful_shutdown(token.clone().cancelled_owned()).await;
        token.cancel();
        if tokio::time::timeout(Duration::from_secs(10), async { while workers.join_next().await.is_some() {} })
            .await
            .is_err()
        {
            tracing::warn!("workers did not stop within 10 s; aborting them");
            workers.abort_all();
        }
        for ext in &exts {
            ext.on_stop(&st).await;
        }
        st.remove::<crate::console::Api>();
        st.db.pool.close().await;
        served.map_err(BoxError::from)
    });
    Ok(Running { addr, state, openapi: app.openapi, task })
}

/// Cancels `token` on Ctrl-C or SIGTERM.
pub fn cancel_on_signal(token: CancellationToken) {
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .expect("installing the SIGTERM handler");
            tokio::select! { _ = ctrl_c => {}, _ = term.recv() => {} }
        }
        #[cfg(not(unix))]
        let _ = ctrl_c.await;
        tracing::info!("shutting down");
        token.cancel();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_passwords_never_reach_messages() {
        assert_eq!(redact_url("postgres://u:secret@h/db"), "postgres://****@h/db");
        assert_eq!(redact_url("sqlite://acs.db"), "sqlite://acs.db");
    }
}
