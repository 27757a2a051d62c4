//! The `[subscriptions.openai]` configuration section: the vendor's sign-in
//! service (RFC 8628 device authorization and token endpoints), its usage
//! endpoint, the API hosts the broker attaches tokens to, and the limits.

use std::sync::Arc;

use acs_platform::AppState;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SubscriptionsConfig {
    /// The vendor's RFC 8628 device authorization endpoint.
    pub device_url: String,
    /// The vendor's token endpoint (device code and refresh token grants).
    pub token_url: String,
    /// The public client acs signs in as.
    pub client_id: String,
    /// Scopes asked for at sign-in.
    pub scope: String,
    /// `GET` with the access token: 200 `{exhausted, resets_at?}`.
    pub usage_url: String,
    /// Hosts (exact or `*.`) the broker attaches a subscription's token to.
    pub api_hosts: Vec<String>,
    /// Seconds between polls of the vendor while a sign-in is pending (the
    /// vendor's own `interval` wins when longer); also what clients are told.
    pub poll_interval: u64,
    /// How many subscriptions an account may hold (disconnected ones count).
    pub max_grants: u64,
    /// How long a sign-in may take (the spec says 15 minutes; shorter in tests).
    pub attempt_ttl_seconds: u64,
    /// A subscription unused this long is renewed by the renewal job.
    pub idle_renew_seconds: u64,
    /// How often the renewal job runs (daily).
    pub renew_every_seconds: u64,
}

impl Default for SubscriptionsConfig {
    fn default() -> Self {
        SubscriptionsConfig {
            device_url: "https://auth.openai.com/oauth/device/code".into(),
            token_url: "https://auth.openai.com/oauth/token".into(),
            client_id: String::new(),
            scope: "openid email profile offline_access".into(),
            usage_url: "https://chatgpt.com/backend-api/usage".into(),
            api_hosts: vec!["api.openai.com".into(), "chatgpt.com".into()],
            poll_interval: 5,
            max_grants: 5,
            attempt_ttl_seconds: 900,
            idle_renew_seconds: 6 * 86_400,
            renew_every_seconds: 86_400,
        }
    }
}

/// This server's section, checked when the configuration loaded, read once and kept in a slot.
pub fn of(state: &AppState) -> Arc<SubscriptionsConfig> {
    state.get_or_put(|| {
        state
            .loaded
            .section(crate::SECTION)
            .expect("the [subscriptions.openai] section is checked when the configuration loads")
    })
}
