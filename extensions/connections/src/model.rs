//! What the API reads and writes. Never a client secret or a token.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

/// An OAuth provider an account's people may connect to.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ConnectionProvider {
    pub id: Uuid,
    /// Names the provider in `/connections/{slug}/start`; unique per account.
    pub slug: String,
    pub name: String,
    pub issuer: Option<String>,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
    /// Where a deleted connection's token is revoked (filled by discovery).
    pub revocation_endpoint: Option<String>,
    /// How the client authenticates at the token endpoint.
    #[schema(value_type = TokenAuthMethod)]
    pub token_endpoint_auth_method: String,
    pub client_id: String,
    pub scopes: Vec<String>,
    /// Host patterns (exact or `*.`-prefixed) its tokens may be sent to.
    pub hosts: Vec<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

acs_platform::string_enum!(
    TokenAuthMethod,
    "How the client authenticates at the token endpoint.",
    ["client_secret_basic", "client_secret_post"]
);

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectionProviderCreate {
    /// Lowercase letters, digits and `-`, 1 to 63 characters.
    pub slug: String,
    pub name: String,
    /// The authorization server's issuer; discovery reads its metadata.
    pub issuer: Option<String>,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
    pub revocation_endpoint: Option<String>,
    /// `client_secret_basic` (default) or `client_secret_post`.
    #[schema(value_type = Option<TokenAuthMethod>)]
    pub token_endpoint_auth_method: Option<String>,
    pub client_id: String,
    /// Stored sealed; never returned.
    pub client_secret: String,
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Host patterns (exact or `*.`-prefixed) its tokens may be sent to; at least one.
    pub hosts: Vec<String>,
}

/// Fields not named keep their value; `null` clears an optional address.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectionProviderUpdate {
    pub slug: Option<String>,
    pub name: Option<String>,
    #[serde(default, deserialize_with = "acs_platform::http::extract::nullable")]
    #[schema(value_type = Option<String>)]
    pub issuer: Option<Option<String>>,
    #[serde(default, deserialize_with = "acs_platform::http::extract::nullable")]
    #[schema(value_type = Option<String>)]
    pub authorization_endpoint: Option<Option<String>>,
    #[serde(default, deserialize_with = "acs_platform::http::extract::nullable")]
    #[schema(value_type = Option<String>)]
    pub token_endpoint: Option<Option<String>>,
    #[serde(default, deserialize_with = "acs_platform::http::extract::nullable")]
    #[schema(value_type = Option<String>)]
    pub revocation_endpoint: Option<Option<String>>,
    #[schema(value_type = Option<TokenAuthMethod>)]
    pub token_endpoint_auth_method: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub scopes: Option<Vec<String>>,
    pub hosts: Option<Vec<String>>,
}

/// Where an owner is sent to connect an account of a provider.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConnectionProviderLink {
    pub slug: String,
    pub name: String,
    /// `<public url>/connections/{slug}/start`, opened in a signed-in browser.
    pub start_url: String,
}

acs_platform::string_enum!(
    ConnectionStatus,
    "`active`; `revoked` when the provider refused a refresh; `expired` when the token ran out and cannot be refreshed.",
    ["active", "revoked", "expired"]
);

/// A connection: tokens of one provider held for the account (never shown).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Connection {
    pub id: Uuid,
    /// The provider's slug.
    pub provider: String,
    #[schema(value_type = ConnectionStatus)]
    pub status: String,
    pub scopes: Vec<String>,
    /// When the access token expires, if the provider said.
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_refreshed_at: Option<OffsetDateTime>,
}
