//! The `[webhooks]` configuration section, owned by this extension.

use acs_platform::AppState;
use acs_platform::config::ConfigError;
use ipnet::IpNet;
use serde::{Deserialize, Serialize};

/// Webhook delivery (spec 6.1). The spec's values are the defaults; tests shorten the clocks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebhooksConfig {
    /// Permit `http://` endpoint URLs (the scheme only; the address rules still hold).
    /// Also read from `WEBHOOK_ALLOW_HTTP`.
    pub allow_http: bool,
    /// Address blocks exempted from the refusal of private and reserved addresses.
    pub allowed_private_cidrs: Vec<IpNet>,
    /// Delay before each retry (seconds, fractions allowed); the last repeats if the list is
    /// shorter than the attempts. The default spreads 8 attempts over about a day.
    pub retry_schedule_seconds: Vec<f64>,
    /// Whole-request timeout of one attempt.
    pub timeout_seconds: f64,
    /// How long a claimed delivery stays reserved to one worker; a worker that died is
    /// replaced after this. Must exceed `timeout_seconds`.
    pub lease_seconds: f64,
    /// Deliveries in flight per server.
    pub concurrency: usize,
    /// Delivery log retention.
    pub retention_seconds: u64,
    /// Pause between two runs of the retention cleanup.
    pub cleanup_interval_seconds: u64,
}

impl Default for WebhooksConfig {
    fn default() -> Self {
        WebhooksConfig {
            allow_http: false,
            allowed_private_cidrs: Vec::new(),
            // 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: attempt 8 about 27 h after the event.
            retry_schedule_seconds: vec![5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0, 36000.0],
            timeout_seconds: 10.0,
            lease_seconds: 60.0,
            concurrency: 128,
            retention_seconds: 30 * 86_400,
            cleanup_interval_seconds: 3600,
        }
    }
}

impl WebhooksConfig {
    /// The section's rules beyond its types.
    pub fn check(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, message: &str| {
            Err(ConfigError::Invalid { key: format!("webhooks.{key}"), message: message.into() })
        };
        if self.retry_schedule_seconds.is_empty()
            || self.retry_schedule_seconds.iter().any(|s| !s.is_finite() || *s < 0.0)
        {
            return invalid("retry_schedule_seconds", "must list at least one delay of zero or more seconds");
        }
        if !(self.timeout_seconds.is_finite() && self.timeout_seconds > 0.0) {
            return invalid("timeout_seconds", "must be more than zero");
        }
        if !(self.lease_seconds.is_finite() && self.lease_seconds > self.timeout_seconds) {
            return invalid("lease_seconds", "must be longer than webhooks.timeout_seconds");
        }
        if self.concurrency == 0 || self.cleanup_interval_seconds == 0 {
            return invalid("concurrency", "concurrency and cleanup_interval_seconds must be at least 1");
        }
        Ok(())
    }
}

/// This server's webhook configuration: its section, checked when the configuration was loaded
/// (`Extension::check_config`), read once and kept in a slot.
pub fn of(state: &AppState) -> std::sync::Arc<WebhooksConfig> {
    state.get_or_put(|| {
        state.loaded.section("webhooks").expect("the [webhooks] section is checked when the configuration loads")
    })
}
