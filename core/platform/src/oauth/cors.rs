//! CORS for `/api` (spec 5.6, DESIGN 9.2): browser apps on the origins of
//! registered redirect URIs, or of `cors.allowed_origins`, may call the API
//! with a bearer key. No credentials mode: cookies never cross origins, and
//! other origins get no CORS headers at all.
//!
//! The registered origins are kept in memory and reloaded from the database
//! at most every few seconds, and at once after a change on this server; a
//! change made on another replica reaches this one within that time.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::rules;
use crate::config::parse_origin;
use crate::state::AppState;

/// How long a replica serves its copy of the registered origins.
const RELOAD_AFTER: Duration = Duration::from_secs(5);
const ALLOW_HEADERS: &str = "authorization, content-type, last-event-id, idempotency-key";
const ALLOW_METHODS: &str = "GET, POST, PUT, PATCH, DELETE";
const EXPOSE_HEADERS: &str = "retry-after, location, x-request-id";
/// Seconds a browser may reuse a preflight answer.
const MAX_AGE: &str = "600";

#[derive(Default)]
struct Cache {
    loaded: Option<(Instant, Arc<HashSet<String>>)>,
}

/// The registered redirect origins, reloaded when stale.
async fn registered(state: &AppState) -> Arc<HashSet<String>> {
    let cache = state.get_or_put(|| Mutex::new(Cache::default()));
    if let Ok(c) = cache.lock()
        && let Some((at, set)) = &c.loaded
        && at.elapsed() < RELOAD_AFTER
    {
        return set.clone();
    }
    let rows: Result<Vec<String>, _> =
        sqlx::query_scalar("SELECT redirect_uris FROM oauth_clients").fetch_all(&state.db.pool).await;
    let set: HashSet<String> = match rows {
        Ok(rows) => rows
            .iter()
            .filter_map(|r| serde_json::from_str::<Vec<String>>(r).ok())
            .flatten()
            .filter_map(|uri| rules::origin_of(&uri))
            .collect(),
        Err(e) => {
            // Keep answering with the last copy rather than refusing every origin.
            tracing::error!(error = %e, "reloading the CORS origins");
            return cache.lock().ok().and_then(|c| c.loaded.as_ref().map(|(_, s)| s.clone())).unwrap_or_default();
        }
    };
    let set = Arc::new(set);
    if let Ok(mut c) = cache.lock() {
        c.loaded = Some((Instant::now(), set.clone()));
    }
    set
}

/// A client changed on this server: the next request reloads the origins.
pub fn changed(state: &AppState) {
    if let Ok(mut c) = state.get_or_put(|| Mutex::new(Cache::default())).lock() {
        c.loaded = None;
    }
}

/// The request's `Origin`, when this instance allows it.
async fn allowed(state: &AppState, headers: &HeaderMap) -> Option<HeaderValue> {
    let value = headers.get(header::ORIGIN)?;
    let origin = parse_origin(value.to_str().ok()?)?;
    let configured = state.get_or_put(|| {
        Configured(state.config().cors.allowed_origins.iter().filter_map(|o| parse_origin(o)).collect())
    });
    (configured.0.contains(&origin) || registered(state).await.contains(&origin)).then(|| value.clone())
}

/// `cors.allowed_origins` as origins, parsed once (the configuration does
/// not change while the server runs).
struct Configured(HashSet<String>);

/// Outermost layer: answers preflights of `/api` for allowed origins before
/// any other check, and marks answers to allowed origins.
pub async fn layer(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    if !(path.starts_with("/api/") || path == "/api") || !req.headers().contains_key(header::ORIGIN) {
        return next.run(req).await;
    }
    let origin = allowed(&state, req.headers()).await;
    let preflight =
        req.method() == Method::OPTIONS && req.headers().contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    let mut res = match (&origin, preflight) {
        (Some(_), true) => {
            let mut res = StatusCode::NO_CONTENT.into_response();
            let h = res.headers_mut();
            h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static(ALLOW_METHODS));
            h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static(ALLOW_HEADERS));
            h.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static(MAX_AGE));
            res
        }
        _ => next.run(req).await,
    };
    let h = res.headers_mut();
    // Answers differ by origin, so caches must key on it, allowed or not.
    h.append(header::VARY, HeaderValue::from_static("origin"));
    if let Some(origin) = origin {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        h.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static(EXPOSE_HEADERS));
    }
    res
}
