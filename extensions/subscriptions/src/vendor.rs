//! Talking to the vendor's sign-in service: device authorization (RFC 8628
//! 3.1), the token endpoint (device code grant, RFC 8628 3.4; refresh,
//! RFC 6749 6) and the usage endpoint. Over the server's outbound client.

use acs_platform::AppState;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::Deserialize;
use time::OffsetDateTime;

use crate::config;
use crate::error::VendorError;

/// The device authorization answer.
#[derive(Deserialize)]
pub struct DeviceAuth {
    pub device_code: String,
    pub user_code: String,
    pub verification_uri: String,
    pub expires_in: Option<i64>,
    pub interval: Option<u64>,
}

/// A token endpoint's success answer (RFC 6749 5.1).
#[derive(Deserialize)]
pub struct Tokens {
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_in: Option<i64>,
    pub id_token: Option<String>,
}

#[derive(Deserialize)]
struct OAuthError {
    error: String,
    error_description: Option<String>,
}

/// Who signed in, from the ID token.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Identity {
    pub subject: Option<String>,
    pub email: Option<String>,
    pub plan: Option<String>,
}

/// What the usage endpoint says.
#[derive(Debug, Deserialize)]
pub struct Usage {
    pub exhausted: bool,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub resets_at: Option<OffsetDateTime>,
}

async fn post_form<T: for<'de> Deserialize<'de>>(
    state: &AppState,
    url: &str,
    fields: &[(&str, &str)],
) -> Result<T, VendorError> {
    // Encoded before the request: the serializer is not `Send`.
    let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish();
    let res = state
        .http
        .post(url)
        .header(ACCEPT, "application/json")
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .map_err(|e| VendorError::Unreachable(format!("{url}: {e}")))?;
    let status = res.status();
    let body = res.bytes().await.map_err(|e| VendorError::Unreachable(format!("{url}: {e}")))?;
    if status.is_success() {
        return serde_json::from_slice(&body)
            .map_err(|e| VendorError::Unreachable(format!("{url}: unreadable answer: {e}")));
    }
    // RFC 6749 5.2: a 400 (or 401) with `error`; anything else is the service failing.
    match serde_json::from_slice::<OAuthError>(&body) {
        Ok(e) if status.is_client_error() => {
            Err(VendorError::OAuth { error: e.error, description: e.error_description })
        }
        _ => Err(VendorError::Unreachable(format!("{url} answered {status}"))),
    }
}

pub async fn device_authorization(state: &AppState) -> Result<DeviceAuth, VendorError> {
    let c = config::of(state);
    post_form(state, &c.device_url, &[("client_id", &c.client_id), ("scope", &c.scope)]).await
}

pub async fn poll(state: &AppState, device_code: &str) -> Result<Tokens, VendorError> {
    let c = config::of(state);
    let fields = [
        ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
        ("device_code", device_code),
        ("client_id", &c.client_id),
    ];
    post_form(state, &c.token_url, &fields).await
}

pub async fn refresh(state: &AppState, refresh_token: &str) -> Result<Tokens, VendorError> {
    let c = config::of(state);
    let fields = [("grant_type", "refresh_token"), ("refresh_token", refresh_token), ("client_id", &c.client_id)];
    post_form(state, &c.token_url, &fields).await
}

pub async fn usage(state: &AppState, access_token: &str) -> Result<Usage, VendorError> {
    let url = &config::of(state).usage_url;
    let res = state
        .http
        .get(url)
        .bearer_auth(access_token)
        .header(ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| VendorError::Unreachable(format!("{url}: {e}")))?;
    if !res.status().is_success() {
        return Err(VendorError::Unreachable(format!("{url} answered {}", res.status())));
    }
    res.json().await.map_err(|e| VendorError::Unreachable(format!("{url}: unreadable answer: {e}")))
}

/// The claims of an ID token. Its signature is not checked: it came
/// straight from the token endpoint over the server's TLS client (OpenID
/// Connect Core 3.1.3.7 allows TLS to stand for the signature then).
pub fn identity(id_token: Option<&str>) -> Identity {
    #[derive(Deserialize)]
    struct Claims {
        sub: Option<String>,
        email: Option<String>,
        plan: Option<String>,
    }
    let claims = id_token
        .and_then(|t| t.split('.').nth(1))
        .and_then(|payload| URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok())
        .and_then(|bytes| serde_json::from_slice::<Claims>(&bytes).ok());
    match claims {
        Some(c) => Identity { subject: c.sub, email: c.email, plan: c.plan },
        None => Identity::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_token_names_the_vendor_account() {
        let payload = URL_SAFE_NO_PAD.encode(br#"{"sub":"alice","email":"a@v.test","plan":"plus"}"#);
        let id = identity(Some(&format!("h.{payload}.s")));
        assert_eq!(
            id,
            Identity { subject: Some("alice".into()), email: Some("a@v.test".into()), plan: Some("plus".into()) }
        );
        assert_eq!(identity(Some("garbage")), Identity::default());
        assert_eq!(identity(None), Identity::default());
    }
}
