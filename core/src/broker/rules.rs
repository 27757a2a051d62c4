//! The rules of secret bindings, as plain functions: what a host pattern, a
//! header and a template may be, which binding answers a host, and how its
//! value is written into the header.

use crate::environments::rules::check_name;
use crate::http::extract::Validator;

/// A value's template is at most this long (the value itself is not counted).
pub const MAX_TEMPLATE: usize = 1000;
const VALUE: &str = "{value}";

/// Headers a binding may not set: they frame the message or belong to one
/// hop, and the broker sets `Host` itself.
const RESERVED_HEADERS: &[&str] =
    &["host", "content-length", "transfer-encoding", "connection", "keep-alive", "te", "trailer", "upgrade"];

/// `api.example.com` or `*.example.com` (any subdomain, not the apex):
/// lower-case DNS labels, no scheme, port or path.
pub fn check_host(v: &mut Validator, field: &str, host: &str) {
    let name = host.strip_prefix("*.").unwrap_or(host);
    let labels_ok = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        });
    v.check(
        labels_ok,
        field,
        "must be a lower-case host name such as api.example.com, or *.example.com for its subdomains",
    );
    if host.starts_with("*.") {
        v.check(name.contains('.'), field, "a wildcard must keep at least two labels (*.example.com)");
    }
}

/// A header name the broker may set.
pub fn check_header(v: &mut Validator, field: &str, header: &str) {
    let valid = hyper::header::HeaderName::from_bytes(header.as_bytes()).is_ok() && !header.is_empty();
    v.check(valid, field, "must be an HTTP header name such as authorization");
    let lower = header.to_ascii_lowercase();
    v.check(
        !RESERVED_HEADERS.contains(&lower.as_str()) && !lower.starts_with("proxy-"),
        field,
        "is set by the broker itself or belongs to one hop; choose another header",
    );
}

/// A template holds `{value}` once and nothing that could end a header line.
pub fn check_template(v: &mut Validator, field: &str, template: &str) {
    v.check(template.matches(VALUE).count() == 1, field, "must contain {value} exactly once");
    v.check(template.len() <= MAX_TEMPLATE, field, "should be at most 1000 character(s)");
    v.check(!template.chars().any(|c| c.is_control()), field, "must not contain control characters");
}

pub fn check_binding_name(v: &mut Validator, name: &str) {
    check_name(v, "name", name);
}

/// The header value: the template with the value in place of `{value}`.
/// `None` when the value cannot be a header value (a line break in it).
pub fn render(template: &str, value: &str) -> Option<String> {
    let out = template.replacen(VALUE, value, 1);
    hyper::header::HeaderValue::from_str(&out).is_ok().then_some(out)
}

/// How closely `pattern` names `host`: `None` when it does not; an exact
/// name ranks above any wildcard, a longer wildcard above a shorter one.
pub fn specificity(pattern: &str, host: &str) -> Option<usize> {
    if !acs_platform::egress::host_matches(pattern, host) {
        return None;
    }
    Some(if pattern.starts_with("*.") { pattern.len() } else { usize::MAX })
}

/// The binding of `candidates` (pattern, item) that answers `host`: the most
/// specific; among equals, the first (callers order them by name).
pub fn best<'a, T>(candidates: impl IntoIterator<Item = (&'a str, T)>, host: &str) -> Option<T> {
    let mut best: Option<(usize, T)> = None;
    for (pattern, item) in candidates {
        if let Some(rank) = specificity(pattern, host)
            && best.as_ref().is_none_or(|(b, _)| rank > *b)
        {
            best = Some((rank, item));
        }
    }
    best.map(|(_, item)| item)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(f: impl FnOnce(&mut Validator)) -> bool {
        let mut v = Validator::default();
        f(&mut v);
        v.finish().is_err()
    }

    #[test]
    fn host_patterns() {
        for good in ["api.example.com", "*.example.com", "localhost", "a-b.c0.io"] {
            assert!(!errors(|v| check_host(v, "host", good)), "{good}");
        }
        for bad in [
            "",
            "*",
            "*.com",
            "API.example.com",
            "https://api.example.com",
            "api.example.com:443",
            "api.example.com/x",
            "-a.example.com",
            "a..b",
            "*.*.example.com",
            "ex ample.com",
        ] {
            assert!(errors(|v| check_host(v, "host", bad)), "{bad}");
        }
    }

    #[test]
    fn headers_and_templates() {
        assert!(!errors(|v| check_header(v, "header", "authorization")));
        assert!(!errors(|v| check_header(v, "header", "X-Api-Key")));
        for bad in ["", "host", "Content-Length", "proxy-authorization", "bad header", "connection"] {
            assert!(errors(|v| check_header(v, "header", bad)), "{bad}");
        }
        assert!(!errors(|v| check_template(v, "template", "Bearer {value}")));
        for bad in ["Bearer", "{value}{value}", "a\r\nb {value}", &"x".repeat(1001)] {
            assert!(errors(|v| check_template(v, "template", bad)), "{bad}");
        }
        assert_eq!(render("Bearer {value}", "tok").as_deref(), Some("Bearer tok"));
        assert_eq!(render("{value}", "a\nb"), None, "a value with a line break is not sent");
    }

    #[test]
    fn the_most_specific_binding_answers() {
        let list = [("*.example.com", 1), ("api.example.com", 2), ("*.api.example.com", 3)];
        assert_eq!(best(list, "api.example.com"), Some(2));
        assert_eq!(best(list, "www.example.com"), Some(1));
        assert_eq!(best(list, "v1.api.example.com"), Some(3));
        assert_eq!(best(list, "example.com"), None);
        assert_eq!(best([("a.example.com", 1), ("a.example.com", 2)], "a.example.com"), Some(1), "first of equals");
    }
}
