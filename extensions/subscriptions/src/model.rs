//! What the API reads and writes (spec 2.5). Never a token.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

acs_platform::string_enum!(
    SubscriptionStatus,
    "`active`; `revoked` when the vendor refused a refresh; `expired` when the token ran out and cannot be \
     refreshed; `disconnected` when the owner disconnected it (tokens forgotten).",
    ["active", "revoked", "expired", "disconnected"]
);

/// A linked vendor subscription.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Subscription {
    pub id: Uuid,
    pub name: String,
    #[schema(value_type = SubscriptionStatus)]
    pub status: String,
    /// Set while the vendor says the subscription is spent: when it resets.
    #[serde(with = "time::serde::rfc3339::option")]
    pub exhausted_until: Option<OffsetDateTime>,
    pub account_email: Option<String>,
    pub plan: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_used_at: Option<OffsetDateTime>,
}

/// The list answer: not paginated.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionList {
    pub data: Vec<Subscription>,
    /// Subscriptions held, disconnected ones included.
    pub count: u64,
    /// How many the account may hold.
    pub limit: u64,
    /// Whether a new link may be started now (flag and broker on).
    pub linking_enabled: bool,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubscriptionUpdate {
    pub name: String,
}

/// Exactly one of `name` (a new link) or `grant_id` (a reconnect).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkAttemptCreate {
    pub name: Option<String>,
    pub grant_id: Option<Uuid>,
}

acs_platform::string_enum!(LinkAttemptKind, "`link` (a new subscription) or `reconnect`.", ["link", "reconnect"]);
acs_platform::string_enum!(
    LinkAttemptState,
    "spec 3.1: `pending`, then for good `completed`, `cancelled`, `expired` or `failed`.",
    ["pending", "completed", "cancelled", "expired", "failed"]
);

/// The subscription a failure names.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GrantRef {
    pub id: Uuid,
    pub name: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LinkFailure {
    /// `stale_grant`, `account_already_linked`, `grant_limit_reached`, `grant_not_found`, `name_taken`,
    /// `owner_ineligible`, `linking_disabled`, `tenant_key_unavailable`, `invalid_sign_in`,
    /// `authorization_failed`, `exchange_failed`, `internal_error`.
    pub reason: String,
    pub grant_id: Option<Uuid>,
    /// For `account_already_linked`: the subscription that holds the vendor account.
    pub grant: Option<GrantRef>,
}

/// A device-code sign-in (spec 2.5).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LinkAttempt {
    pub id: Uuid,
    #[schema(value_type = LinkAttemptKind)]
    pub kind: String,
    pub name: Option<String>,
    pub grant_id: Option<Uuid>,
    #[schema(value_type = LinkAttemptState)]
    pub state: String,
    /// The code the person enters at `verification_url`; null once the attempt ended.
    pub user_code: Option<String>,
    pub verification_url: Option<String>,
    /// Seconds between reads of this attempt.
    pub poll_interval: u64,
    /// True while the last poll of the vendor's sign-in service went unanswered.
    pub auth_unreachable: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    pub result_grant_id: Option<Uuid>,
    pub failure: Option<LinkFailure>,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}
