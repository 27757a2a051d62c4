//! OAuth rules: redirect URIs, PKCE, and the limits of spec 8.

use base64::Engine;
use sha2::{Digest, Sha256};

use crate::http::extract::Validator;

/// Clients per account (spec 8).
pub const MAX_CLIENTS: i64 = 25;
pub const MAX_NAME: usize = 200;
pub const MAX_REDIRECT_URIS: usize = 20;
pub const MAX_REDIRECT_URI_LEN: usize = 2000;
/// Longest `state` carried through the consent page.
pub const MAX_STATE: usize = 1000;
/// Seconds an authorization code lives (DESIGN 9.2).
pub const CODE_TTL_SECONDS: i64 = 600;

/// Why a redirect URI is refused; `None` when it may be registered: an
/// absolute `https` address, or `http` on `localhost` or `127.0.0.1` (any
/// port, for native and development apps, RFC 8252 section 7.3); no
/// fragment (RFC 6749 section 3.1.2); no user or password.
pub fn redirect_uri_problem(uri: &str) -> Option<&'static str> {
    if uri.len() > MAX_REDIRECT_URI_LEN {
        return Some("is longer than 2000 characters");
    }
    if uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("must not contain spaces or control characters");
    }
    let Ok(url) = reqwest::Url::parse(uri) else { return Some("is not an absolute URL") };
    if url.fragment().is_some() || uri.contains('#') {
        return Some("must not have a fragment");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Some("must not carry a user or password");
    }
    match (url.scheme(), url.host_str()) {
        ("https", Some(_)) => None,
        ("http", Some("localhost" | "127.0.0.1")) => None,
        ("http", _) => Some("must use https (http only on localhost or 127.0.0.1)"),
        _ => Some("must use https"),
    }
}

pub fn check_name(v: &mut Validator, name: &str) {
    v.check(!name.trim().is_empty(), "name", "can't be blank");
    v.check(name.chars().count() <= MAX_NAME, "name", "should be at most 200 character(s)");
}

pub fn check_redirect_uris(v: &mut Validator, uris: &[String]) {
    v.check(!uris.is_empty(), "redirect_uris", "should have at least 1 item(s)");
    v.check(uris.len() <= MAX_REDIRECT_URIS, "redirect_uris", "should have at most 20 item(s)");
    for (i, uri) in uris.iter().enumerate() {
        if let Some(problem) = redirect_uri_problem(uri) {
            v.check(false, &format!("redirect_uris[{i}]"), problem);
        }
        if uris[..i].contains(uri) {
            v.check(false, &format!("redirect_uris[{i}]"), "is listed twice");
        }
    }
}

/// The origin of a registered redirect URI (`scheme://host[:port]`), for CORS.
pub fn origin_of(uri: &str) -> Option<String> {
    let url = reqwest::Url::parse(uri).ok()?;
    let origin = url.origin();
    origin.is_tuple().then(|| origin.ascii_serialization())
}

/// A PKCE code verifier or challenge: 43 to 128 unreserved characters (RFC 7636 section 4.1).
pub fn pkce_value_ok(s: &str) -> bool {
    (43..=128).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

/// S256: `BASE64URL(SHA256(verifier)) == challenge` (RFC 7636 section 4.6).
pub fn verifier_matches(verifier: &str, challenge: &str) -> bool {
    pkce_value_ok(verifier) && {
        let digest = Sha256::digest(verifier.as_bytes());
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest) == challenge
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uris_at_their_boundaries() {
        for ok in [
            "https://app.example.com/callback",
            "https://app.example.com:8443/cb?x=1",
            "http://localhost/cb",
            "http://localhost:53121/cb",
            "http://127.0.0.1:8000/",
        ] {
            assert_eq!(redirect_uri_problem(ok), None, "{ok}");
        }
        for no in [
            "http://app.example.com/cb",
            "http://127.0.0.2/cb",
            "http://localhost.evil.example/cb",
            "https://app.example.com/cb#frag",
            "https://user:pw@app.example.com/cb",
            "ftp://app.example.com/cb",
            "/relative",
            "https://app.example.com/a b",
            "myapp://callback",
        ] {
            assert!(redirect_uri_problem(no).is_some(), "{no}");
        }
        let long = format!("https://a.example/{}", "x".repeat(MAX_REDIRECT_URI_LEN - 18));
        assert_eq!(long.len(), MAX_REDIRECT_URI_LEN);
        assert_eq!(redirect_uri_problem(&long), None);
        assert!(redirect_uri_problem(&format!("{long}x")).is_some());
    }

    #[test]
    fn origins_of_redirect_uris() {
        assert_eq!(origin_of("https://App.example.com/cb?x").as_deref(), Some("https://app.example.com"));
        assert_eq!(origin_of("http://localhost:3000/cb").as_deref(), Some("http://localhost:3000"));
        assert_eq!(origin_of("https://a.example:443/cb").as_deref(), Some("https://a.example"));
    }

    #[test]
    fn pkce_s256_from_rfc_7636_appendix_b() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(verifier_matches(verifier, challenge));
        assert!(!verifier_matches("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXj", challenge));
        assert!(!verifier_matches("short", challenge));
        assert!(pkce_value_ok(&"a".repeat(43)) && pkce_value_ok(&"a".repeat(128)));
        assert!(!pkce_value_ok(&"a".repeat(42)) && !pkce_value_ok(&"a".repeat(129)));
        assert!(!pkce_value_ok(&format!("{}+", "a".repeat(43))));
    }
}
