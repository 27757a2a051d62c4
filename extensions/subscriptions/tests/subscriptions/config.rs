//! The `[subscriptions.openai]` section (DESIGN 9.6): checked at every load,
//! flag on or off; a key of another name or place stops the start.

use acs_core::extension::config;
use figment::providers::Serialized;
use serde_json::{Value, json};

fn with(key: &str, value: Value) -> Result<acs_core::config::Loaded, acs_core::config::ConfigError> {
    config::from_figment(config::figment(None).merge(Serialized::default(key, value)))
}

#[test]
fn its_section_is_checked_with_the_flag_off() {
    let loaded = with("subscriptions.openai.client_id", json!("acs")).unwrap();
    let c: acs_ext_subscriptions::config::SubscriptionsConfig = loaded.section("subscriptions.openai").unwrap();
    assert_eq!((c.client_id.as_str(), c.max_grants, c.attempt_ttl_seconds), ("acs", 5, 900));
    let unknown = with("subscriptions.openai.devise_url", json!("https://x")).unwrap_err().to_string();
    assert!(unknown.contains("devise_url"), "{unknown}");
    let bad = with("subscriptions.openai.token_url", json!("ftp://x")).unwrap_err().to_string();
    assert!(bad.contains("subscriptions.openai.token_url"), "{bad}");
    let zero = with("subscriptions.openai.poll_interval", json!(0)).unwrap_err().to_string();
    assert!(zero.contains("poll_interval"), "{zero}");
    // Not under the extension's name: that is no section.
    assert!(with("openai_subscriptions.client_id", json!("acs")).is_err());
    // The flag keeps the extension's name.
    assert!(with("features.openai_subscriptions", json!(true)).is_ok());
}
