//! Middleware that runs before any handler: the request id and tracing span,
//! content negotiation (406 comes first), the client address, the coarse
//! per-address ceiling, and metrics.

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ipnet::IpNet;
use tracing::Instrument;

use crate::error::ApiError;
use crate::ratelimit::Verdict;
use crate::state::AppState;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The caller's address: the peer, or the forwarded client when the peer is
/// a trusted proxy.
#[derive(Debug, Clone, Copy)]
pub struct ClientIp(pub IpAddr);

/// Resolves the client address from the peer and `X-Forwarded-For`: walking
/// the list from the right, the first address that is not a trusted proxy.
pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|n| n.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    let forwarded: Vec<IpAddr> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    forwarded.iter().rev().find(|ip| !is_trusted(ip)).copied().or(forwarded.first().copied()).unwrap_or(peer)
}

/// Whether an `Accept` header admits `offered` (a `type/subtype`).
pub fn accepts(accept: &str, offered: &str) -> bool {
    let (otype, _) = offered.split_once('/').unwrap_or((offered, ""));
    accept.split(',').any(|range| {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let refused = parts.any(|p| {
            let p = p.trim().replace(' ', "");
            p == "q=0" || p == "q=0.0" || p == "q=0.00" || p == "q=0.000"
        });
        !refused && (media == "*/*" || media == offered || media == format!("{otype}/*"))
    })
}

/// What a path can answer with, for content negotiation.
fn offered_types(path: &str) -> &'static [&'static str] {
    if path.ends_with("/stream") { &["text/event-stream", "application/json"] } else { &["application/json"] }
}

fn not_acceptable() -> Response {
    (StatusCode::NOT_ACCEPTABLE, axum::Json(serde_json::json!({"errors": {"detail": "Not Acceptable"}})))
        .into_response()
}

/// A caller's own request id is kept when it is short and printable.
fn callers_request_id(headers: &HeaderMap) -> Option<HeaderValue> {
    headers
        .get(REQUEST_ID)
        .filter(|v| {
            !v.is_empty() && v.len() <= 128 && v.to_str().is_ok_and(|s| s.chars().all(|c| c.is_ascii_graphic()))
        })
        .cloned()
}

/// First middleware on every request, in one pass (every layer costs on the
/// hot path): the request id (kept from the caller or made, echoed on the
/// answer), the tracing span carrying it, 406, the client address and the
/// coarse per-address ceiling.
pub async fn admit(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let id = callers_request_id(req.headers()).unwrap_or_else(|| state.request_ids.make());
    req.headers_mut().insert(REQUEST_ID, id.clone());
    let span = tracing::info_span!(
        "request",
        method = %req.method(),
        path = %req.uri().path(),
        request_id = id.to_str().unwrap_or_default()
    );
    let mut res = admitted(state, req, next).instrument(span).await;
    res.headers_mut().insert(REQUEST_ID, id);
    res
}

async fn admitted(state: AppState, mut req: Request, next: Next) -> Response {
    let path = req.uri().path();
    if (path.starts_with("/api/") || path == "/api")
        && let Some(accept) = req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok())
        && !offered_types(path).iter().any(|t| accepts(accept, t))
    {
        return not_acceptable();
    }
    let peer =
        req.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip()).unwrap_or(IpAddr::from([127, 0, 0, 1]));
    let ip = client_ip(peer, req.headers(), &state.config().limits.trusted_proxies);
    if let Verdict::Deny { retry_after } = state.limiter.address(ip) {
        return ApiError::rate_limited(retry_after).into_response();
    }
    req.extensions_mut().insert(ClientIp(ip));
    next.run(req).await
}

/// Records request count and latency by matched route (mounted only when metrics are on).
pub async fn record_metrics(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let route =
        req.extensions().get::<MatchedPath>().map(|m| m.as_str().to_owned()).unwrap_or_else(|| "unmatched".into());
    let method = req.method().to_string();
    let start = Instant::now();
    let res = next.run(req).await;
    state.metrics.observe(&method, &route, res.status().as_u16(), start.elapsed());
    res
}

/// Unknown routes: 404 `not_found` with the error body.
pub async fn fallback() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "No such route.")
}

/// A known route asked with a method it does not serve.
pub async fn method_not_allowed() -> ApiError {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "This route does not serve that method.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_matching() {
        assert!(accepts("application/json", "application/json"));
        assert!(accepts("text/html, */*;q=0.8", "application/json"));
        assert!(accepts("application/*", "application/json"));
        assert!(!accepts("text/html", "application/json"));
        assert!(!accepts("application/json;q=0", "application/json"));
        assert!(accepts("text/event-stream", "text/event-stream"));
    }

    #[test]
    fn forwarded_only_from_trusted_proxies() {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", "203.0.113.9, 10.0.0.2".parse().unwrap());
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let peer: IpAddr = "10.0.0.1".parse().unwrap();
        assert_eq!(client_ip(peer, &h, &trusted), "203.0.113.9".parse::<IpAddr>().unwrap());
        let stranger: IpAddr = "198.51.100.7".parse().unwrap();
        assert_eq!(client_ip(stranger, &h, &trusted), stranger);
        assert_eq!(client_ip(peer, &h, &[]), peer);
    }
}
