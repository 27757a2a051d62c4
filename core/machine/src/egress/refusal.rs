//! Answers the proxy gives itself instead of an upstream response, with the
//! status and the error code the record carries.

use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};

use super::body::{ProxyBody, text};
use super::record::PendingRecord;
use super::target::Target;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Not a proxy request (origin-form), or a form the proxy does not speak.
    BadRequest,
    HostNotAllowed,
    AddressNotAllowed,
    HostUnresolved,
    UpstreamUnreachable,
    /// Upstream accepted the request but closed before answering.
    UpstreamClosed,
    RequestTimeout,
    /// The upstream's TLS certificate did not verify (or its handshake failed).
    UpstreamTls,
    /// A binding names the host but its value is missing.
    CredentialMissing,
    /// The broker on another host did not answer.
    BrokerUnavailable,
    /// The broker on another host answered the CONNECT with a refusal.
    BrokerRefused,
}

impl Refusal {
    pub fn status(self) -> StatusCode {
        match self {
            Refusal::BadRequest => StatusCode::BAD_REQUEST,
            Refusal::HostNotAllowed | Refusal::AddressNotAllowed => StatusCode::FORBIDDEN,
            Refusal::HostUnresolved
            | Refusal::UpstreamUnreachable
            | Refusal::UpstreamClosed
            | Refusal::UpstreamTls
            | Refusal::CredentialMissing
            | Refusal::BrokerRefused => StatusCode::BAD_GATEWAY,
            Refusal::BrokerUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Refusal::RequestTimeout => StatusCode::GATEWAY_TIMEOUT,
        }
    }

    /// The record's `error`.
    pub fn code(self) -> &'static str {
        match self {
            Refusal::BadRequest => "bad_request",
            Refusal::HostNotAllowed => "host_not_allowed",
            Refusal::AddressNotAllowed => "address_not_allowed",
            Refusal::HostUnresolved => "host_unresolved",
            Refusal::UpstreamUnreachable => "upstream_unreachable",
            Refusal::UpstreamClosed => "upstream_closed",
            Refusal::RequestTimeout => "request_timeout",
            Refusal::UpstreamTls => "upstream_tls",
            Refusal::CredentialMissing => "credential_missing",
            Refusal::BrokerUnavailable => "broker_unavailable",
            Refusal::BrokerRefused => "broker_refused",
        }
    }

    /// Short text body for the client, naming the host so an agent can tell which rule bit.
    pub fn message(self, target: Option<&Target>) -> String {
        let what = match self {
            Refusal::BadRequest => {
                return "acs egress: not a proxy request (use an absolute http:// URI or CONNECT)\n".into();
            }
            Refusal::HostNotAllowed => "host not allowed",
            Refusal::AddressNotAllowed => "address not allowed",
            Refusal::HostUnresolved => "cannot resolve host",
            Refusal::UpstreamUnreachable => "upstream unreachable",
            Refusal::UpstreamClosed => "upstream closed the connection",
            Refusal::RequestTimeout => "no answer in time from",
            Refusal::UpstreamTls => "upstream certificate not trusted",
            Refusal::CredentialMissing => "the credential bound to this host has no value",
            Refusal::BrokerUnavailable => "the egress broker did not answer, for",
            Refusal::BrokerRefused => "the egress broker refused the request to",
        };
        let host = target.map(Target::host).unwrap_or_default();
        format!("acs egress: {what}: {host}\n")
    }

    /// The client's answer; ends the request's record with this refusal.
    pub(crate) fn respond(self, target: Option<&Target>, mut pending: PendingRecord) -> Response<ProxyBody> {
        pending.set_status(self.status().as_u16());
        pending.finish(Some(self.code()));
        let mut response = Response::new(text(self.message(target)));
        *response.status_mut() = self.status();
        response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_host() {
        let target = Target::parse("Example.org:443", None);
        assert_eq!(Refusal::HostNotAllowed.message(target.as_ref()), "acs egress: host not allowed: example.org\n");
        assert!(Refusal::RequestTimeout.message(target.as_ref()).ends_with("example.org\n"));
        assert_eq!(Refusal::RequestTimeout.status(), StatusCode::GATEWAY_TIMEOUT);
        assert_eq!(Refusal::AddressNotAllowed.code(), "address_not_allowed");
    }
}
