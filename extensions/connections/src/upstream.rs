//! Talking to a provider: discovery (RFC 8414, OpenID Connect Discovery),
//! the token endpoint (RFC 6749 4.1.3 and 6, PKCE RFC 7636) and revocation
//! (RFC 7009). Over the server's outbound client (rustls, no redirects
//! followed, a timeout).

use acs_platform::AppState;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::UpstreamError;
use crate::store::ProviderRow;

/// The endpoints a discovery document gave.
#[derive(Debug, Default)]
pub struct Discovered {
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub revocation_endpoint: Option<String>,
    /// `client_secret_basic` unless the server supports only `client_secret_post`.
    pub token_auth_method: String,
}

#[derive(Deserialize)]
struct Metadata {
    issuer: Option<String>,
    authorization_endpoint: Option<String>,
    token_endpoint: Option<String>,
    revocation_endpoint: Option<String>,
    token_endpoint_auth_methods_supported: Option<Vec<String>>,
}

/// Where the metadata of `issuer` is: RFC 8414 3 puts the well-known segment
/// between the host and the issuer's path; OpenID appends it to the issuer.
fn metadata_urls(issuer: &str) -> Result<[Url; 2], UpstreamError> {
    let parsed = Url::parse(issuer).map_err(|e| UpstreamError::BadMetadata(format!("issuer: {e}")))?;
    let path = parsed.path().trim_end_matches('/').to_owned();
    let mut rfc8414 = parsed.clone();
    rfc8414.set_path(&format!("/.well-known/oauth-authorization-server{path}"));
    let mut openid = parsed;
    openid.set_path(&format!("{path}/.well-known/openid-configuration"));
    Ok([rfc8414, openid])
}

/// Reads the issuer's metadata: RFC 8414 first, then OpenID; the document
/// must name this very issuer (RFC 8414 3.3), or it may be another server's.
pub async fn discover(state: &AppState, issuer: &str) -> Result<Discovered, UpstreamError> {
    let mut last = String::new();
    for url in metadata_urls(issuer)? {
        let res = match state.http.get(url.clone()).header(ACCEPT, "application/json").send().await {
            Ok(res) => res,
            Err(e) => {
                last = format!("{url}: {e}");
                continue;
            }
        };
        if !res.status().is_success() {
            last = format!("{url} answered {}", res.status());
            continue;
        }
        let meta: Metadata =
            res.json().await.map_err(|e| UpstreamError::BadMetadata(format!("{url}: not a metadata document: {e}")))?;
        if meta.issuer.as_deref() != Some(issuer) {
            return Err(UpstreamError::BadMetadata(format!(
                "{url} names the issuer {:?}, not {issuer:?}",
                meta.issuer.unwrap_or_default()
            )));
        }
        let (Some(authorization_endpoint), Some(token_endpoint)) = (meta.authorization_endpoint, meta.token_endpoint)
        else {
            return Err(UpstreamError::BadMetadata(format!("{url} lacks authorization_endpoint or token_endpoint")));
        };
        let methods = meta.token_endpoint_auth_methods_supported.unwrap_or_default();
        let post_only = !methods.is_empty()
            && !methods.iter().any(|m| m == "client_secret_basic")
            && methods.iter().any(|m| m == "client_secret_post");
        return Ok(Discovered {
            authorization_endpoint,
            token_endpoint,
            revocation_endpoint: meta.revocation_endpoint,
            token_auth_method: if post_only { "client_secret_post" } else { "client_secret_basic" }.to_owned(),
        });
    }
    Err(UpstreamError::Unreachable(format!("no discovery document: {last}")))
}

/// A random PKCE verifier (RFC 7636 4.1: 43 characters of base64url) and its S256 challenge.
pub fn pkce() -> (String, String) {
    let verifier = random_token();
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

/// 256 random bits, base64url: a PKCE verifier or an OAuth `state`.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the system's random source");
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The provider's authorization URL for one sign-in.
pub fn authorization_url(
    provider: &ProviderRow,
    redirect_uri: &str,
    state_value: &str,
    challenge: &str,
) -> Result<Url, UpstreamError> {
    let endpoint = provider
        .authorization_endpoint
        .as_deref()
        .ok_or_else(|| UpstreamError::NotConfigured("the provider has no authorization endpoint yet".into()))?;
    let mut url =
        Url::parse(endpoint).map_err(|e| UpstreamError::BadMetadata(format!("authorization endpoint: {e}")))?;
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code")
            .append_pair("client_id", &provider.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("state", state_value)
            .append_pair("code_challenge", challenge)
            .append_pair("code_challenge_method", "S256");
        if !provider.scopes.is_empty() {
            q.append_pair("scope", &provider.scopes.join(" "));
        }
    }
    Ok(url)
}

/// A token endpoint's success answer (RFC 6749 5.1).
#[derive(Deserialize)]
pub struct TokenResponse {
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_in: Option<i64>,
    pub scope: Option<String>,
}

impl std::fmt::Debug for TokenResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenResponse").field("expires_in", &self.expires_in).finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct ErrorResponse {
    error: String,
    error_description: Option<String>,
}

/// An `application/x-www-form-urlencoded` body.
fn form_body(fields: &[(&str, &str)]) -> String {
    let mut form = form_urlencoded::Serializer::new(String::new());
    for (k, v) in fields {
        form.append_pair(k, v);
    }
    form.finish()
}

/// Posts a form to one of the provider's endpoints with the client's
/// credentials (`client_secret_basic` or `client_secret_post`).
async fn post_form(
    state: &AppState,
    provider: &ProviderRow,
    endpoint: &str,
    fields: &[(&str, &str)],
) -> Result<reqwest::Response, UpstreamError> {
    let secret = provider.client_secret(state).await?;
    let mut req = state.http.post(endpoint).header(ACCEPT, "application/json");
    let body = if provider.token_auth_method == "client_secret_post" {
        let mut with_client = fields.to_vec();
        with_client.extend([("client_id", provider.client_id.as_str()), ("client_secret", secret.as_str())]);
        form_body(&with_client)
    } else {
        // RFC 6749 2.3.1: each part form-encoded before the basic scheme.
        let enc = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        req = req.basic_auth(enc(&provider.client_id), Some(enc(&secret)));
        form_body(fields)
    };
    req.header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .map_err(|e| UpstreamError::Unreachable(format!("{endpoint}: {e}")))
}

/// A token endpoint call: the tokens, or the provider's OAuth error.
async fn token_call(
    state: &AppState,
    provider: &ProviderRow,
    fields: &[(&str, &str)],
) -> Result<TokenResponse, UpstreamError> {
    let endpoint = provider
        .token_endpoint
        .as_deref()
        .ok_or_else(|| UpstreamError::NotConfigured("the provider has no token endpoint yet".into()))?;
    let res = post_form(state, provider, endpoint, fields).await?;
    let status = res.status();
    let bytes = res.bytes().await.map_err(|e| UpstreamError::Unreachable(format!("{endpoint}: {e}")))?;
    if status.is_success() {
        return serde_json::from_slice(&bytes)
            .map_err(|e| UpstreamError::Unreachable(format!("{endpoint}: not a token answer: {e}")));
    }
    match serde_json::from_slice::<ErrorResponse>(&bytes) {
        Ok(e) => Err(UpstreamError::OAuth { error: e.error, description: e.error_description }),
        Err(_) => Err(UpstreamError::Unreachable(format!("{endpoint} answered {status}"))),
    }
}

/// Exchanges an authorization code (with its PKCE verifier).
pub async fn exchange_code(
    state: &AppState,
    provider: &ProviderRow,
    code: &str,
    redirect_uri: &str,
    verifier: &str,
) -> Result<TokenResponse, UpstreamError> {
    token_call(
        state,
        provider,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
        ],
    )
    .await
}

/// Uses a refresh token.
pub async fn refresh(
    state: &AppState,
    provider: &ProviderRow,
    refresh_token: &str,
) -> Result<TokenResponse, UpstreamError> {
    token_call(state, provider, &[("grant_type", "refresh_token"), ("refresh_token", refresh_token)]).await
}

/// Revokes a token at the provider's revocation endpoint (RFC 7009).
pub async fn revoke(state: &AppState, provider: &ProviderRow, token: &str, hint: &str) -> Result<(), UpstreamError> {
    let Some(endpoint) = provider.revocation_endpoint.as_deref() else { return Ok(()) };
    let res = post_form(state, provider, endpoint, &[("token", token), ("token_type_hint", hint)]).await?;
    if res.status().is_success() {
        Ok(())
    } else {
        Err(UpstreamError::Unreachable(format!("{endpoint} answered {}", res.status())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_addresses_follow_both_specifications() {
        let [a, b] = metadata_urls("https://id.example/tenant").unwrap();
        assert_eq!(a.as_str(), "https://id.example/.well-known/oauth-authorization-server/tenant");
        assert_eq!(b.as_str(), "https://id.example/tenant/.well-known/openid-configuration");
        let [a, b] = metadata_urls("https://id.example").unwrap();
        assert_eq!(a.as_str(), "https://id.example/.well-known/oauth-authorization-server");
        assert_eq!(b.as_str(), "https://id.example/.well-known/openid-configuration");
    }

    #[test]
    fn pkce_challenge_is_s256_of_the_verifier() {
        // RFC 7636 appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        assert_eq!(challenge, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        let (v, c) = pkce();
        assert_eq!(v.len(), 43);
        assert_eq!(c, URL_SAFE_NO_PAD.encode(Sha256::digest(v.as_bytes())));
    }
}
