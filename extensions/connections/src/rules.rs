//! What a provider's fields must be (422 `validation_failed` otherwise).

use acs_platform::http::extract::Validator;
use reqwest::Url;

pub const MAX_NAME: usize = 200;
pub const MAX_CLIENT_FIELD: usize = 2_000;
pub const MAX_LIST: usize = 50;
pub const AUTH_METHODS: [&str; 2] = ["client_secret_basic", "client_secret_post"];

/// A slug: 1 to 63 lowercase letters, digits and `-`, starting with a letter or digit.
pub fn slug_ok(slug: &str) -> bool {
    (1..=63).contains(&slug.len())
        && slug.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && slug.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
}

/// A host pattern: a host name (`api.example.com`) or `*.` and one
/// (`*.example.com`: any host below it); lowercase, no scheme, port or path.
pub fn host_pattern_ok(pattern: &str) -> bool {
    let host = pattern.strip_prefix("*.").unwrap_or(pattern);
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && label.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// A provider address: absolute, `https` (or `http` when the operator
/// allows it), no fragment, no credentials.
pub fn address_problem(value: &str, allow_http: bool) -> Option<&'static str> {
    let Ok(url) = Url::parse(value) else { return Some("is not an absolute URL") };
    match url.scheme() {
        "https" => {}
        "http" if allow_http => {}
        "http" => return Some("must be https"),
        _ => return Some("must be an https URL"),
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Some("has no host");
    }
    if url.fragment().is_some() {
        return Some("must not have a fragment");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Some("must not carry credentials");
    }
    None
}

/// The fields a provider has once a create or an update applied.
pub struct Fields<'a> {
    pub slug: &'a str,
    pub name: &'a str,
    pub issuer: Option<&'a str>,
    pub authorization_endpoint: Option<&'a str>,
    pub token_endpoint: Option<&'a str>,
    pub revocation_endpoint: Option<&'a str>,
    pub token_auth_method: &'a str,
    pub client_id: &'a str,
    /// Only when one is being set.
    pub client_secret: Option<&'a str>,
    pub scopes: &'a [String],
    pub hosts: &'a [String],
}

/// Checks every field, reporting all problems at once.
pub fn check(f: &Fields<'_>, allow_http: bool) -> Result<(), acs_platform::ApiError> {
    let mut v = Validator::default();
    v.check(
        slug_ok(f.slug),
        "slug",
        "must be 1 to 63 lowercase letters, digits or '-', starting with a letter or digit",
    );
    v.check(!f.name.trim().is_empty(), "name", "can't be blank");
    v.check(f.name.chars().count() <= MAX_NAME, "name", "should be at most 200 character(s)");
    for (field, value) in [
        ("issuer", f.issuer),
        ("authorization_endpoint", f.authorization_endpoint),
        ("token_endpoint", f.token_endpoint),
        ("revocation_endpoint", f.revocation_endpoint),
    ] {
        if let Some(problem) = value.and_then(|u| address_problem(u, allow_http)) {
            v.check(false, field, problem);
        }
    }
    if f.issuer.is_none() {
        v.check(
            f.authorization_endpoint.is_some() && f.token_endpoint.is_some(),
            "issuer",
            "can't be blank unless authorization_endpoint and token_endpoint are given",
        );
    }
    v.check(
        AUTH_METHODS.contains(&f.token_auth_method),
        "token_endpoint_auth_method",
        "must be client_secret_basic or client_secret_post",
    );
    v.check(!f.client_id.trim().is_empty(), "client_id", "can't be blank");
    v.check(f.client_id.len() <= MAX_CLIENT_FIELD, "client_id", "is too long");
    if let Some(secret) = f.client_secret {
        v.check(!secret.is_empty(), "client_secret", "can't be blank");
        v.check(secret.len() <= MAX_CLIENT_FIELD, "client_secret", "is too long");
    }
    v.check(f.scopes.len() <= MAX_LIST, "scopes", "should have at most 50 item(s)");
    v.check(
        f.scopes.iter().all(|s| !s.is_empty() && s.len() <= 200 && !s.chars().any(|c| c.is_whitespace() || c == '"')),
        "scopes",
        "each must be a nonempty scope token without spaces",
    );
    v.check(!f.hosts.is_empty(), "hosts", "should have at least 1 item(s)");
    v.check(f.hosts.len() <= MAX_LIST, "hosts", "should have at most 50 item(s)");
    v.check(
        f.hosts.iter().all(|h| host_pattern_ok(h)),
        "hosts",
        "each must be a lowercase host name, or `*.` and one (no scheme, port or path)",
    );
    v.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_patterns() {
        for ok in ["api.github.com", "*.example.com", "localhost", "a-b.c0"] {
            assert!(host_pattern_ok(ok), "{ok}");
        }
        for no in ["", "*.", "*", "https://x.com", "x.com:443", "x.com/a", "X.com", "*.*.x.com", "-a.com", "a..com"] {
            assert!(!host_pattern_ok(no), "{no}");
        }
    }

    #[test]
    fn slugs() {
        assert!(slug_ok("github"));
        assert!(slug_ok("my-idp-2"));
        for no in ["", "-a", "A", "a_b", "a b", &"a".repeat(64)] {
            assert!(!slug_ok(no), "{no}");
        }
    }

    #[test]
    fn addresses_need_https_unless_allowed() {
        assert_eq!(address_problem("https://id.example", false), None);
        assert_eq!(address_problem("http://127.0.0.1:9000", false), Some("must be https"));
        assert_eq!(address_problem("http://127.0.0.1:9000", true), None);
        assert!(address_problem("ftp://x", true).is_some());
        assert!(address_problem("https://u:p@x", false).is_some());
        assert!(address_problem("/relative", false).is_some());
    }
}
