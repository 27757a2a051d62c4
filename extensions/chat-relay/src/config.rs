//! The `[chat_relay]` configuration section.

use std::sync::Arc;

use acs_platform::AppState;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChatRelayConfig {
    /// Also permit `ws://` relays (tests, a relay on a private network); `wss://` otherwise.
    pub allow_insecure_relays: bool,
}

/// This server's section, checked when the configuration loaded, read once and kept in a slot.
pub fn of(state: &AppState) -> Arc<ChatRelayConfig> {
    state.get_or_put(|| {
        state.loaded.section(crate::NAME).expect("the [chat_relay] section is checked when the configuration loads")
    })
}
