//! The console speaks the API in process: a page's read or change is the
//! same request a program would send, dispatched through the same router
//! (validation, scope, limits, audit, the spec's refusals), with the signed-in
//! person as the caller. So the console cannot drift from the API, and no
//! rule is written twice.

use std::net::IpAddr;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use serde_json::Value;
use tower::ServiceExt;

use crate::auth::InProcess;
pub use crate::http::answer::Answer;
use crate::http::middleware::ClientIp;
use crate::principal::Principal;

/// The API's router with its state, given to every page as a request
/// extension by the server assembly, and kept in the state's slots for
/// extensions' workers (the router holds the state: the assembly removes it
/// at shutdown to break that cycle).
#[derive(Clone)]
pub struct Api(pub axum::Router);

impl Api {
    /// Sends one request as `caller`; `body` goes as JSON.
    pub async fn call(
        &self,
        caller: Principal,
        ip: IpAddr,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Answer {
        let mut req = Request::builder().method(method).uri(path).header(header::ACCEPT, "application/json");
        let body = match body {
            Some(v) => {
                req = req.header(header::CONTENT_TYPE, "application/json");
                Body::from(serde_json::to_vec(v).unwrap_or_default())
            }
            None => Body::empty(),
        };
        let Ok(mut req) = req.body(body) else {
            return Answer { status: StatusCode::BAD_REQUEST, body: serde_json::json!({"message": "bad address"}) };
        };
        req.extensions_mut().insert(InProcess(caller));
        req.extensions_mut().insert(ClientIp(ip));
        let res = match self.0.clone().oneshot(req).await {
            Ok(res) => res,
            Err(never) => match never {},
        };
        let status = res.status();
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX).await.unwrap_or_default();
        let body = if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).unwrap_or(Value::Null) };
        Answer { status, body }
    }
}
