//! Wire shapes of chat-relay identities (spec 2.8, "Hosted chat-relay identity").

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

/// Whom an identity answers: its owner (the key in `auth_tag`), the owner and
/// the allowlist, anyone, or nobody.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RespondTo {
    #[default]
    OwnerOnly,
    Allowlist,
    Anyone,
    Nobody,
}

impl RespondTo {
    pub fn as_str(self) -> &'static str {
        match self {
            RespondTo::OwnerOnly => "owner-only",
            RespondTo::Allowlist => "allowlist",
            RespondTo::Anyone => "anyone",
            RespondTo::Nobody => "nobody",
        }
    }

    pub fn parse(s: &str) -> Option<RespondTo> {
        serde_json::from_value(serde_json::Value::String(s.to_owned())).ok()
    }
}

/// The sandbox mode of the identity's conversations; null takes the agent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    Ephemeral,
    Persistent,
}

impl SandboxMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Ephemeral => "ephemeral",
            SandboxMode::Persistent => "persistent",
        }
    }

    pub fn parse(s: &str) -> Option<SandboxMode> {
        serde_json::from_value(serde_json::Value::String(s.to_owned())).ok()
    }
}

/// A hosted chat-relay identity. Its private key is never part of it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ChatRelayIdentity {
    pub id: Uuid,
    pub name: String,
    pub display_name: Option<String>,
    /// The agent that answers.
    pub agent_id: Uuid,
    /// Provision from this environment instead of the agent's.
    pub environment_id: Option<Uuid>,
    /// The vault the identity's conversations run with (created for it; it never holds the private key).
    pub vault_id: Uuid,
    /// The identity's public key, 64 hexadecimal characters.
    pub pubkey: String,
    pub relay_url: String,
    pub respond_to: RespondTo,
    /// Keys answered besides the owner in `allowlist` mode.
    pub respond_to_allowlist: Vec<String>,
    pub sandbox_mode: Option<SandboxMode>,
    /// Whether the harness keeps a connection to the relay for it.
    pub enabled: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// The provision request: creates the identity, or updates the caller's
/// identity with the same `pubkey`. Deliberately not `Debug`: it holds the private key.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatRelayIdentityProvision {
    /// 1 to 200 characters.
    pub name: String,
    /// `wss://` (also `ws://` where `chat_relay.allow_insecure_relays` is on).
    pub relay_url: String,
    pub agent_id: Uuid,
    /// 64 hexadecimal characters: the public key of `private_key_nsec`.
    pub pubkey: String,
    /// Bech32 `nsec1...`: sealed on the server, never returned, never in a sandbox.
    pub private_key_nsec: String,
    /// The owner attestation tag, a JSON array string: `["auth","<owner pubkey hex>", ...]`.
    pub auth_tag: String,
    pub display_name: Option<String>,
    /// Omitted clears a previous value.
    pub environment_id: Option<Uuid>,
    /// Omitted means `owner-only`.
    pub respond_to: Option<RespondTo>,
    /// 64-hex keys; required non-empty in `allowlist` mode.
    pub respond_to_allowlist: Option<Vec<String>>,
    /// Omitted clears a previous value.
    pub sandbox_mode: Option<SandboxMode>,
}

/// A change to an identity; fields not named keep their value. The key pair
/// and the owner change by provisioning again.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatRelayIdentityUpdate {
    pub name: Option<String>,
    /// Null clears it.
    #[serde(default, deserialize_with = "acs_platform::http::extract::nullable")]
    #[schema(value_type = Option<String>)]
    pub display_name: Option<Option<String>>,
    pub relay_url: Option<String>,
    pub agent_id: Option<Uuid>,
    /// Null clears it.
    #[serde(default, deserialize_with = "acs_platform::http::extract::nullable")]
    #[schema(value_type = Option<Uuid>)]
    pub environment_id: Option<Option<Uuid>>,
    pub respond_to: Option<RespondTo>,
    pub respond_to_allowlist: Option<Vec<String>>,
    /// Null clears it.
    #[serde(default, deserialize_with = "acs_platform::http::extract::nullable")]
    #[schema(value_type = Option<SandboxMode>)]
    pub sandbox_mode: Option<Option<SandboxMode>>,
    pub enabled: Option<bool>,
}
