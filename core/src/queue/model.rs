//! API objects of the sandbox queue (spec 4.2).

use serde::Serialize;
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

/// Where a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = SandboxRequestStatus)]
pub enum Status {
    /// Waiting for a place under the ceilings.
    Queued,
    /// The conversation opened (`conversation_id`).
    Started,
    /// Ended without a start; `error` says why.
    Failed,
    /// Cancelled by its owner while queued.
    Cancelled,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Queued => "queued",
            Status::Started => "started",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }
}

/// `SandboxRequest`: a start that met a concurrency ceiling and waits in the
/// account's line, or what became of it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SandboxRequest {
    pub id: Uuid,
    /// `queued`, `started`, `failed` or `cancelled`.
    #[schema(value_type = Status)]
    pub status: String,
    /// One-based place in the account's line while `queued`; null otherwise.
    pub position: Option<i64>,
    /// The conversation the start opened or resumed; also set on `prompt_delivery_unknown`.
    pub conversation_id: Option<Uuid>,
    /// Why it failed: `queue_wait_expired`, `permission_policy_requires_fresh_conversation`,
    /// `prompt_delivery_unknown`, or the code the start was refused with (`insufficient_credits`,
    /// `not_found`, ...).
    pub error: Option<String>,
    pub agent_id: Uuid,
    pub channel_id: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    /// A request still queued then ends `failed` with `queue_wait_expired`.
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}
