//! Wire shapes of webhook endpoints and deliveries.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

/// A webhook endpoint (spec 2.7). The signing secret is never part of it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebhookEndpoint {
    pub id: Uuid,
    pub url: String,
    /// Filters: exact types, `conversation.<stage>.*` or `*`.
    pub event_types: Vec<String>,
    /// `active` or `disabled`.
    #[schema(value_type = EndpointStatus)]
    pub status: String,
    pub description: Option<String>,
    /// Events in a row that exhausted their attempts; any accepted delivery clears it.
    pub consecutive_failures: i64,
    #[serde(with = "time::serde::rfc3339::option")]
    pub disabled_at: Option<OffsetDateTime>,
    pub disabled_reason: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// An endpoint with its signing secret: the answer of create and rotate, shown once.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookEndpointWithSecret {
    #[serde(flatten)]
    pub endpoint: WebhookEndpoint,
    /// `whsec_...`; the HMAC key of `Service-Signature` (the whole string).
    pub secret: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookEndpointCreateRequest {
    /// `https://` (or `http://` where the instance permits it), no credentials.
    pub url: String,
    /// Default: `conversation.turn.done`, `conversation.turn.failed`, `conversation.provision.failed`.
    pub event_types: Option<Vec<String>>,
    /// At most 500 characters.
    pub description: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum EndpointStatus {
    Active,
    Disabled,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookEndpointUpdateRequest {
    pub url: Option<String>,
    pub event_types: Option<Vec<String>>,
    /// Null clears it.
    #[serde(default, deserialize_with = "acs_platform::http::extract::nullable")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    /// `disabled` switches delivery off; `active` resumes it.
    pub status: Option<EndpointStatus>,
}

/// One HTTP attempt of a delivery.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebhookAttempt {
    /// 1-based, as sent in `Service-Delivery-Attempt`.
    pub attempt: i64,
    /// `automatic`, `redeliver` or `test`.
    #[schema(value_type = AttemptTrigger)]
    pub trigger: String,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    pub response_status: Option<i64>,
    /// The first 4096 bytes of the answer.
    pub response_body: Option<String>,
    /// `address_refused`, `dns_failed`, `connect_failed`, `timeout` or `request_failed`;
    /// null when an answer came back.
    #[schema(value_type = Option<AttemptError>)]
    pub error: Option<String>,
    pub error_message: Option<String>,
    pub latency_ms: i64,
}

/// One event for one endpoint, with every attempt made.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebhookDelivery {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    /// The log event id (the payload's `id`).
    pub event_id: String,
    pub event_type: String,
    /// `pending`, `succeeded` or `failed`.
    #[schema(value_type = DeliveryStatus)]
    pub status: String,
    pub attempt_count: i64,
    #[serde(with = "time::serde::rfc3339::option")]
    pub next_attempt_at: Option<OffsetDateTime>,
    /// The body sent on every attempt.
    pub payload: serde_json::Value,
    pub attempts: Vec<WebhookAttempt>,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryPageMeta {
    pub limit: i64,
    pub has_more: bool,
    /// The last delivery id of this page; pass it as `before` for older ones.
    pub next_cursor: Option<Uuid>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookDeliveryList {
    pub data: Vec<WebhookDelivery>,
    pub meta: DeliveryPageMeta,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeliveryQuery {
    /// 1 to 200 (default 50).
    pub limit: Option<i64>,
    /// Deliveries older than this one (`meta.next_cursor`).
    pub before: Option<Uuid>,
    /// `pending`, `succeeded` or `failed`.
    #[param(inline)]
    pub status: Option<DeliveryStatus>,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryStatus {
    Pending,
    Succeeded,
    Failed,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Succeeded => "succeeded",
            DeliveryStatus::Failed => "failed",
        }
    }
}

acs_platform::string_enum!(AttemptTrigger, "What sent the attempt.", ["automatic", "redeliver", "test"]);
acs_platform::string_enum!(
    AttemptError,
    "Why no answer came back.",
    ["address_refused", "dns_failed", "connect_failed", "timeout", "request_failed"]
);
