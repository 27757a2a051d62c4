//! The rules of inference resolution, free of storage: which credential
//! kinds each runtime's program reads, the variable each arrives in, the
//! order sources are tried in, and the `inference` object a turn records.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::agents::Runtime;

/// Who provides the model access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = InferenceOrigin)]
pub enum Origin {
    /// The account (a credential set, its own secrets), or nobody (`none`, `missing`).
    Own,
    /// The deployment's platform credentials (spends credits).
    Platform,
}

/// Where the credential came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = InferenceScope)]
pub enum Scope {
    /// A provider credential of the resolved credential set.
    Credential,
    /// A secret of the machine's environment or vault that the program reads.
    TenantSecret,
    /// A linked subscription (the subscriptions extension; the broker attaches its token).
    Grant,
    Platform,
    /// The runtime needs no credential from the service (`acp`).
    None,
    /// Nothing usable: the turn fails before its prompt.
    Missing,
}

/// A turn's `inference` object: written when the turn starts, never changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Inference {
    pub origin: Origin,
    pub scope: Scope,
    pub openai_grant_id: Option<Uuid>,
}

impl Inference {
    fn of(origin: Origin, scope: Scope) -> Inference {
        Inference { origin, scope, openai_grant_id: None }
    }
}

/// The credential kinds a runtime's program reads, preferred first.
pub fn kinds(runtime: Runtime) -> &'static [&'static str] {
    match runtime {
        Runtime::Claude => &["anthropic_api_key", "claude_code_oauth_token"],
        Runtime::Codex => &["openai_api_key"],
        Runtime::Gemini => &["gemini_api_key"],
        Runtime::Opencode => &["anthropic_api_key", "openai_api_key"],
        Runtime::Acp => &[],
    }
}

/// The environment variable a credential kind reaches the program as.
pub fn env_var(kind: &str) -> Option<&'static str> {
    match kind {
        "anthropic_api_key" => Some("ANTHROPIC_API_KEY"),
        "claude_code_oauth_token" => Some("CLAUDE_CODE_OAUTH_TOKEN"),
        "openai_api_key" => Some("OPENAI_API_KEY"),
        "gemini_api_key" => Some("GEMINI_API_KEY"),
        _ => None,
    }
}

/// Where a turn's credential comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// This kind of the resolved credential set.
    Set(&'static str),
    /// The machine's environment already holds the variable.
    TenantSecret,
    /// This kind of the platform credentials.
    Platform(&'static str),
    /// The runtime needs none.
    NotNeeded,
    Missing,
}

impl Source {
    pub fn inference(self) -> Inference {
        match self {
            Source::Set(_) => Inference::of(Origin::Own, Scope::Credential),
            Source::TenantSecret => Inference::of(Origin::Own, Scope::TenantSecret),
            Source::Platform(_) => Inference::of(Origin::Platform, Scope::Platform),
            Source::NotNeeded => Inference::of(Origin::Own, Scope::None),
            Source::Missing => Inference::of(Origin::Own, Scope::Missing),
        }
    }
}

/// The order of resolution for a named runtime: the resolved set's
/// credential (launch selection, else the agent's set, else the account
/// default), then a variable the account put in the machine's environment,
/// then the platform's credential; each in the runtime's preferred kind
/// order. The account's own access always comes before the platform's.
pub fn decide(
    runtime: Runtime,
    set_holds: impl Fn(&str) -> bool,
    machine_has: impl Fn(&str) -> bool,
    platform_holds: impl Fn(&str) -> bool,
) -> Source {
    let kinds = kinds(runtime);
    if kinds.is_empty() {
        return Source::NotNeeded;
    }
    if let Some(k) = kinds.iter().find(|k| set_holds(k)) {
        return Source::Set(k);
    }
    if kinds.iter().filter_map(|k| env_var(k)).any(&machine_has) {
        return Source::TenantSecret;
    }
    if let Some(k) = kinds.iter().find(|k| platform_holds(k)) {
        return Source::Platform(k);
    }
    Source::Missing
}

/// What a `missing` turn's `model` stage says.
pub fn missing_reason(runtime: Runtime) -> String {
    format!(
        "no model provider credential for runtime {}: add {} to the conversation's credential set (or the account's \
         default set); this server has no platform credential for it",
        runtime.as_str(),
        kinds(runtime).join(" or ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> bool {
        false
    }

    #[test]
    fn each_runtime_reads_its_kinds_in_their_variables() {
        assert_eq!(kinds(Runtime::Claude), ["anthropic_api_key", "claude_code_oauth_token"]);
        assert_eq!(kinds(Runtime::Codex), ["openai_api_key"]);
        assert_eq!(kinds(Runtime::Gemini), ["gemini_api_key"]);
        assert_eq!(kinds(Runtime::Opencode), ["anthropic_api_key", "openai_api_key"]);
        assert!(kinds(Runtime::Acp).is_empty());
        for kind in crate::credentials::PROVIDERS {
            assert!(env_var(kind).is_some(), "{kind}");
        }
        assert_eq!(env_var("claude_code_oauth_token"), Some("CLAUDE_CODE_OAUTH_TOKEN"));
    }

    #[test]
    fn the_account_comes_before_the_platform() {
        let all = |_: &str| true;
        assert_eq!(decide(Runtime::Claude, all, all, all), Source::Set("anthropic_api_key"));
        assert_eq!(
            decide(Runtime::Claude, |k| k == "claude_code_oauth_token", all, all),
            Source::Set("claude_code_oauth_token")
        );
        assert_eq!(decide(Runtime::Claude, none, |v| v == "ANTHROPIC_API_KEY", all), Source::TenantSecret);
        assert_eq!(
            decide(Runtime::Claude, none, |v| v == "OPENAI_API_KEY", all),
            Source::Platform("anthropic_api_key")
        );
        assert_eq!(
            decide(Runtime::Opencode, none, none, |k| k == "openai_api_key"),
            Source::Platform("openai_api_key")
        );
        assert_eq!(decide(Runtime::Codex, |k| k == "anthropic_api_key", none, none), Source::Missing);
    }

    #[test]
    fn acp_needs_nothing_and_spends_nothing() {
        let s = decide(Runtime::Acp, none, none, none);
        assert_eq!(s, Source::NotNeeded);
        assert_eq!(s.inference(), Inference { origin: Origin::Own, scope: Scope::None, openai_grant_id: None });
    }

    #[test]
    fn the_inference_object_has_the_spec_shape() {
        let v = serde_json::to_value(Source::Platform("gemini_api_key").inference()).unwrap();
        assert_eq!(v, serde_json::json!({"origin": "platform", "scope": "platform", "openai_grant_id": null}));
        let v = serde_json::to_value(Source::TenantSecret.inference()).unwrap();
        assert_eq!(v["scope"], "tenant_secret");
        assert_eq!(serde_json::to_value(Source::Missing.inference()).unwrap()["scope"], "missing");
    }
}
