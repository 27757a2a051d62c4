//! The `[connections]` configuration section.

use std::sync::Arc;

use acs_platform::AppState;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConnectionsConfig {
    /// Also permit `http://` provider addresses (tests, a provider on a
    /// private network); `https://` otherwise.
    pub allow_http: bool,
    /// The worker refreshes a connection's access token this many seconds
    /// before it expires.
    pub refresh_before_seconds: u64,
    /// How often the worker looks for tokens to refresh.
    pub poll_seconds: u64,
    /// How long a sign-in started at `/connections/{slug}/start` may take.
    pub attempt_ttl_seconds: u64,
}

impl Default for ConnectionsConfig {
    fn default() -> Self {
        ConnectionsConfig { allow_http: false, refresh_before_seconds: 300, poll_seconds: 5, attempt_ttl_seconds: 600 }
    }
}

/// This server's section, checked when the configuration loaded, read once and kept in a slot.
pub fn of(state: &AppState) -> Arc<ConnectionsConfig> {
    state.get_or_put(|| {
        state.loaded.section(crate::NAME).expect("the [connections] section is checked when the configuration loads")
    })
}
