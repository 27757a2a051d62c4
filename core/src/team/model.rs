//! API objects of the team and its schedules (spec 2.6).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::store::ScheduleRow;
use crate::agents::Agent;
use crate::conversations::engine::Delivery;
use crate::conversations::model::{Conversation, Turn};
use crate::queue::model::SandboxRequest;
use crate::time_fmt::from_micros;

/// An agent on the account's team, with a stable conversation.
#[derive(Debug, Serialize, ToSchema)]
pub struct Teammate {
    /// The agent as `GET /api/agents/{id}` shows it.
    pub agent: Agent,
    pub agent_id: Uuid,
    /// The environment its conversations run in; null uses the agent's.
    pub environment_id: Option<Uuid>,
    /// The vault its conversations use; null uses the agent's.
    pub vault_id: Option<Uuid>,
    /// The newest live team conversation, else the newest finished; null before the first.
    pub conversation: Option<Conversation>,
    /// The newest turn of that conversation.
    pub last_turn: Option<Turn>,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// Body of `PUT /api/team/{agent_id}`: the whole teammate; an omitted binding is cleared.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TeammateRequest {
    /// Environment of its conversations (must be allowed by the agent); null uses the agent's.
    pub environment_id: Option<Uuid>,
    /// Vault of its conversations (must be allowed by the agent); null uses the agent's.
    pub vault_id: Option<Uuid>,
}

/// Body of `POST /api/team/{agent_id}/messages`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TeamMessageRequest {
    /// Must contain non-whitespace words.
    #[serde(default)]
    pub prompt: String,
    /// Merged into the receiving conversation before the turn is queued (the labels rules).
    #[schema(value_type = Option<BTreeMap<String, String>>)]
    pub labels: Option<BTreeMap<String, String>>,
    /// 1 to 200 characters, no NUL; stored on the turn as sent.
    #[schema(min_length = 1, max_length = 200)]
    pub client_request_id: Option<String>,
}

/// What happened to a team message. It precedes the turn, so it carries no turn id.
#[derive(Debug, Serialize, ToSchema)]
pub struct TeamMessageResponse {
    /// `accepted`: the turn opened; `queued`: it opens later (the machine must wake, or the
    /// new conversation waits in the sandbox queue: see `sandbox_request`).
    pub status: Delivery,
    /// The receiving conversation; null while it waits in the sandbox queue.
    pub conversation_id: Option<Uuid>,
    /// Repeated as sent.
    pub client_request_id: Option<String>,
    /// The queued start when the new conversation waits in the sandbox queue, else null.
    pub sandbox_request: Option<SandboxRequest>,
}

/// A teammate's cron schedule.
#[derive(Debug, Serialize, ToSchema)]
pub struct TeamSchedule {
    pub id: Uuid,
    pub agent_id: Uuid,
    /// At most 120 characters.
    pub name: Option<String>,
    /// Five fields in UTC, or `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly`.
    pub cron: String,
    pub prompt: String,
    /// True: each run opens a fresh conversation; false: runs go into the teammate's own conversation.
    pub one_off: bool,
    pub enabled: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_run_at: Option<OffsetDateTime>,
    /// Null while disabled.
    #[serde(with = "time::serde::rfc3339::option")]
    pub next_run_at: Option<OffsetDateTime>,
    /// The conversation of the last run; null when it failed or never ran.
    pub last_conversation_id: Option<Uuid>,
    /// Why the last run failed (such as `teammate was busy`); null after a good run.
    pub last_error: Option<String>,
}

impl From<&ScheduleRow> for TeamSchedule {
    fn from(s: &ScheduleRow) -> TeamSchedule {
        TeamSchedule {
            id: s.id,
            agent_id: s.agent_id,
            name: s.name.clone(),
            cron: s.cron.clone(),
            prompt: s.prompt.clone(),
            one_off: s.one_off,
            enabled: s.enabled,
            inserted_at: from_micros(s.inserted_at),
            updated_at: from_micros(s.updated_at),
            last_run_at: s.last_run_at.map(from_micros),
            next_run_at: s.next_run_at.map(from_micros),
            last_conversation_id: s.last_conversation_id,
            last_error: s.last_error.clone(),
        }
    }
}

/// `TeamScheduleCreateRequest`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TeamScheduleCreateRequest {
    /// Five fields in UTC, or a name such as `@daily` (`@reboot` is refused).
    pub cron: String,
    /// 1 to 20000 characters.
    pub prompt: String,
    /// Default true.
    pub enabled: Option<bool>,
    /// At most 120 characters.
    pub name: Option<String>,
    /// Default false.
    pub one_off: Option<bool>,
}

/// Body of `PATCH .../schedules/{id}`: an omitted field is unchanged; `name: null` clears the name.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct TeamScheduleUpdateRequest {
    pub cron: Option<String>,
    pub prompt: Option<String>,
    pub enabled: Option<bool>,
    #[serde(default, deserialize_with = "crate::http::extract::nullable")]
    #[schema(value_type = Option<String>)]
    pub name: Option<Option<String>>,
    pub one_off: Option<bool>,
}
