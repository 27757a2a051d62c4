//! Absolute-form requests: rewritten to origin-form, sent upstream on a fresh
//! connection to the checked address, the answer streamed back.

use http_body_util::Either;
use hyper::body::Incoming;
use hyper::header::{HOST, HeaderValue};
use hyper::{Request, Response, Uri, Version};
use hyper_util::rt::TokioIo;

use super::body::{ProxyBody, RecordedBody};
use super::dial::dial;
use super::headers::strip_hop_by_hop;
use super::policy::Policy;
use super::proxy::Shared;
use super::record::PendingRecord;
use super::refusal::Refusal;
use super::target::Target;

pub(crate) async fn forward(
    shared: &Shared,
    policy: &Policy,
    target: &Target,
    req: Request<Incoming>,
    mut pending: PendingRecord,
) -> Response<ProxyBody> {
    let req = upstream_request(req, &target.host_header());
    let answer = tokio::time::timeout(shared.request_timeout, send(shared, policy, target, req))
        .await
        .unwrap_or(Err(Refusal::RequestTimeout));
    match answer {
        Ok(response) => {
            pending.set_status(response.status().as_u16());
            let (mut parts, body) = response.into_parts();
            strip_hop_by_hop(&mut parts.headers);
            Response::from_parts(parts, Either::Right(RecordedBody::new(body, pending)))
        }
        Err(refusal) => refusal.respond(Some(target), pending),
    }
}

async fn send(
    shared: &Shared,
    policy: &Policy,
    target: &Target,
    req: Request<Incoming>,
) -> Result<Response<Incoming>, Refusal> {
    let stream = dial(policy, target).await?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|_| Refusal::UpstreamUnreachable)?;
    let stopped = shared.stopped.clone();
    // The connection drives the response body after `send` returns; it ends with the
    // response (the sender is dropped) or when the proxy stops.
    tokio::spawn(async move {
        tokio::select! {
            _ = conn => {}
            _ = stopped.cancelled() => {}
        }
    });
    sender.send_request(req).await.map_err(|_| Refusal::UpstreamClosed)
}

/// The request as the destination sees it: origin-form URI, HTTP/1.1, no hop-by-hop or
/// `Proxy-*` headers, and `Host` naming the target (`host`: its spelling for the
/// scheme, `Target::host_header` or `Target::https_authority`). A proxy must replace
/// the client's `Host` (RFC 9112 3.2.2); keeping a different one would let a sandbox
/// reach another virtual host behind an allowed address (domain fronting).
pub(crate) fn upstream_request<B>(req: Request<B>, host: &str) -> Request<B> {
    let (mut parts, body) = req.into_parts();
    parts.uri = parts.uri.path_and_query().cloned().map_or_else(|| Uri::from_static("/"), Uri::from);
    parts.version = Version::HTTP_11;
    strip_hop_by_hop(&mut parts.headers);
    match HeaderValue::from_str(host) {
        Ok(host) => parts.headers.insert(HOST, host),
        Err(_) => parts.headers.remove(HOST),
    };
    Request::from_parts(parts, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_to_origin_form() {
        let target = Target::parse("example.com:8080", None).unwrap();
        let req = Request::get("http://user:pw@example.com:8080/a/b?q=1")
            .header("proxy-authorization", "Basic x")
            .header("connection", "close")
            .body(())
            .unwrap();
        let out = upstream_request(req, &target.host_header());
        assert_eq!(out.uri(), "/a/b?q=1");
        assert_eq!(out.headers()[HOST], "example.com:8080");
        assert!(out.headers().get("proxy-authorization").is_none());
        assert!(out.headers().get("connection").is_none());

        let fronted = Request::get("http://example.com:8080").header(HOST, "internal.example").body(()).unwrap();
        let out = upstream_request(fronted, &target.host_header());
        assert_eq!(out.uri(), "/");
        let hosts: Vec<_> = out.headers().get_all(HOST).iter().collect();
        assert_eq!(hosts, ["example.com:8080"]);
    }
}
