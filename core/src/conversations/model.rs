//! API objects of conversations and turns (spec 2.1, 2.2, 4.1).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::engine::{Delivery, WakeStatus};
use super::store::{ConversationRow, Labels, TurnRow};
use crate::agents::SandboxMode;
use crate::sandboxes::model::{ApiAccess, ConversationStatus};
use crate::time_fmt::from_micros;

/// A conversation: a thread between the caller and an agent, run on a sandbox.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Conversation {
    pub id: Uuid,
    pub agent_id: Uuid,
    /// The machine it runs on; null until one is assigned.
    pub sandbox_id: Option<Uuid>,
    pub status: ConversationStatus,
    #[schema(value_type = crate::agents::Runtime)]
    pub runtime: String,
    pub title: Option<String>,
    #[schema(value_type = BTreeMap<String, String>)]
    pub labels: Labels,
    /// `provider/model_id`; null follows the agent.
    pub model: Option<String>,
    /// The conversation's own session options (over the agent's).
    #[schema(value_type = Option<crate::agents::SessionConfig>)]
    pub session_config: Option<Map<String, Value>>,
    /// What the runtime advertised before the latest prompt (`id`, `category`, `type`, `options`,
    /// `currentValue` each); null until a turn has run.
    #[schema(value_type = Option<Vec<SessionConfigOption>>)]
    pub session_config_options: Option<Value>,
    /// The environment override the conversation is pinned to; null uses the agent's.
    pub environment_id: Option<Uuid>,
    /// The vault override; null uses the agent's.
    pub vault_id: Option<Uuid>,
    /// The credential set chosen at create; null follows the agent's, then the account default.
    pub inference_credential_id: Option<Uuid>,
    pub channel_id: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub ended_at: Option<OffsetDateTime>,
}

impl From<&ConversationRow> for Conversation {
    fn from(r: &ConversationRow) -> Conversation {
        Conversation {
            id: r.id,
            agent_id: r.agent_id,
            sandbox_id: r.sandbox_id,
            status: r.status,
            runtime: r.runtime.clone(),
            title: r.title.clone(),
            labels: r.labels.clone(),
            model: r.model.clone(),
            session_config: r.session_config.clone(),
            session_config_options: r.session_config_options.clone(),
            environment_id: r.environment_id,
            vault_id: r.vault_id,
            inference_credential_id: r.inference_credential_id,
            channel_id: r.channel_id.clone(),
            inserted_at: from_micros(r.created_at),
            updated_at: from_micros(r.updated_at),
            ended_at: r.ended_at.map(from_micros),
        }
    }
}

/// Token counts of a turn as the runtime reported them; a count it did not report is null, never zero.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct TurnUsage {
    pub input: Option<i64>,
    pub output: Option<i64>,
    pub cache_read: Option<i64>,
    pub cache_write: Option<i64>,
    /// Only for qualified reports.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub accounting: Option<Value>,
}

impl TurnUsage {
    /// Reads the stored usage object; anything else is no usage.
    fn from_stored(v: &Value) -> Option<TurnUsage> {
        let obj = v.as_object()?;
        let count = |k: &str| obj.get(k).and_then(Value::as_i64);
        Some(TurnUsage {
            input: count("input"),
            output: count("output"),
            cache_read: count("cache_read"),
            cache_write: count("cache_write"),
            accounting: obj.get("accounting").filter(|a| !a.is_null()).cloned(),
        })
    }
}

acs_platform::string_enum!(
    TurnStatus,
    "`running` until the turn ends `done`, `failed` or `interrupted`.",
    ["running", "done", "failed", "interrupted"]
);
acs_platform::string_enum!(
    TurnOrigin,
    "`api`, or `autonomous` for a turn the service opened itself (a schedule's run).",
    ["api", "autonomous"]
);
acs_platform::string_enum!(ImageMediaType, "The image's media type.", super::rules::IMAGE_MEDIA_TYPES);

/// One prompt and its reply.
#[derive(Debug, Clone, Serialize, ToSchema)]

pub struct Turn {
    pub id: Uuid,
    pub conversation_id: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub finished_at: Option<OffsetDateTime>,
    pub prompt: String,
    /// `running`, `done`, `failed` or `interrupted`.
    #[schema(value_type = TurnStatus)]
    pub status: String,
    /// `api`, or `autonomous` for a turn the service opened itself.
    #[schema(value_type = TurnOrigin)]
    pub origin: String,
    /// The value sent with the prompt, character for character.
    pub client_request_id: Option<String>,
    pub stop_reason: Option<String>,
    /// Set on a turn ended by a limit; read it before `exit_code`.
    pub limit_reason: Option<String>,
    pub exit_code: Option<i64>,
    /// `origin` (`own`/`platform`), `scope`, and the grant id; written when the turn starts.
    #[schema(value_type = Option<crate::inference::rules::Inference>)]
    pub inference: Option<Value>,
    /// The model asked for.
    pub model_selection: Option<String>,
    /// `requested`, `applied`, `skipped`, `status`, `error`.
    #[schema(value_type = Option<crate::conversations::engine::config::Selection>)]
    pub config_selection: Option<Value>,
    pub usage: Option<TurnUsage>,
}

impl From<&TurnRow> for Turn {
    fn from(t: &TurnRow) -> Turn {
        Turn {
            id: t.id,
            conversation_id: t.conversation_id,
            inserted_at: from_micros(t.inserted_at),
            finished_at: t.finished_at.map(from_micros),
            prompt: t.prompt.clone(),
            status: t.status.clone(),
            origin: t.origin.clone(),
            client_request_id: t.client_request_id.clone(),
            stop_reason: t.stop_reason.clone(),
            limit_reason: t.limit_reason.clone(),
            exit_code: t.exit_code,
            inference: t.inference.clone(),
            model_selection: t.model_selection.clone(),
            config_selection: t.config_selection.clone(),
            usage: t.usage.as_ref().and_then(TurnUsage::from_stored),
        }
    }
}

/// An image sent with a prompt.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ImageInput {
    /// Base64 of the image bytes (non-empty, at most 10 MB decoded).
    pub data: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    #[schema(value_type = ImageMediaType)]
    pub media_type: String,
}

/// Body of `POST /api/conversations`. Only `agent_id` is required; unknown fields are ignored.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct ConversationCreateRequest {
    pub agent_id: Uuid,
    /// The first turn's prompt; must contain non-whitespace words.
    pub prompt: Option<String>,
    /// At most 120 characters.
    pub title: Option<String>,
    /// At most 32; key 1 to 64 bytes, value at most 256 bytes, no NUL.
    #[schema(value_type = Option<BTreeMap<String, String>>)]
    pub labels: Option<Labels>,
    /// At most 255 characters; resumes the channel's latest live conversation (200).
    pub channel_id: Option<String>,
    /// With `channel_id`: open a new conversation instead of resuming.
    pub fresh: Option<bool>,
    /// 1 to 200 characters, no NUL; the caller's name for the first prompt. Ignored without `prompt`.
    #[schema(min_length = 1, max_length = 200)]
    pub client_request_id: Option<String>,
    pub environment_id: Option<Uuid>,
    pub vault_id: Option<Uuid>,
    /// The credential set to run on instead of the agent's (owned by the caller and allowed by the
    /// agent's `allowed_inference_credential_ids`); pinned across wakes.
    pub inference_credential_id: Option<Uuid>,
    /// `provider/model_id`, this conversation only.
    pub model: Option<String>,
    #[schema(value_type = Option<crate::agents::SessionConfig>)]
    pub session_config: Option<Value>,
    #[schema(value_type = Option<crate::agents::PermissionPolicy>)]
    pub permission_policy: Option<Map<String, Value>>,
    /// Need a non-blank `prompt`.
    pub images: Option<Vec<ImageInput>>,
    /// At a concurrency ceiling, wait in the sandbox queue (202 with a `SandboxRequest`) instead of
    /// 429/503. Starts with images or `sandbox_id` never wait.
    pub queue: Option<bool>,
    pub sandbox_api_access: Option<ApiAccess>,
    /// Accepted; attaching to an existing sandbox is not supported yet.
    pub sandbox_id: Option<Uuid>,
    /// Null takes the agent's.
    pub sandbox_mode: Option<SandboxMode>,
    /// Suffix of the machine name: 1 to 40 letters, digits, `-`, `_`, starting with a letter or digit.
    pub machine_name: Option<String>,
}

/// Body of `POST /api/conversations/{id}/prompts`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct PromptRequest {
    /// Must contain non-whitespace words (422 `invalid_prompt` when missing or blank).
    #[serde(default)]
    #[schema(required = true)]
    pub prompt: String,
    /// 1 to 200 characters, no NUL; stored on the turn as sent.
    #[schema(min_length = 1, max_length = 200)]
    pub client_request_id: Option<String>,
    /// For this turn only, over the conversation's and the agent's.
    #[schema(value_type = Option<crate::agents::SessionConfig>)]
    pub session_config: Option<Value>,
}

/// What happened to a prompt. It precedes the turn, so it carries no turn id.
#[derive(Debug, Serialize, ToSchema)]
pub struct PromptResponse {
    /// `accepted`: the turn opened; `queued`: it opens once the machine is ready.
    pub status: Delivery,
    pub conversation_id: Uuid,
    /// Repeated as sent.
    pub client_request_id: Option<String>,
}

/// Body of `PATCH /api/conversations/{id}/labels`: a null value removes the key; keys not named stay.
#[derive(Debug, Deserialize, ToSchema)]
pub struct LabelsPatch {
    pub labels: BTreeMap<String, Option<String>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ConversationWakeResponse {
    /// `awake`: the machine is up; `waking`: it is starting.
    pub status: WakeStatus,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InterruptResponse {
    /// False when no turn was running.
    pub interrupted: bool,
}

/// A conversation's turns, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct TurnListResponse {
    pub data: Vec<Turn>,
}

impl axum::response::IntoResponse for TurnListResponse {
    fn into_response(self) -> axum::response::Response {
        axum::Json(self).into_response()
    }
}

/// A session option the runtime advertised (ACP `configOptions`), as reported.
pub struct SessionConfigOption;

impl utoipa::PartialSchema for SessionConfigOption {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{AdditionalProperties, ArrayBuilder, ObjectBuilder, SchemaType, Type};
        let string = || ObjectBuilder::new().schema_type(Type::String);
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .property("id", string().description(Some("The key to use in `session_config`")))
            .property("name", string())
            .property("category", string())
            .property("type", string().description(Some("Such as `select` or `boolean`")))
            .property("options", ArrayBuilder::new().items(ObjectBuilder::new().schema_type(SchemaType::AnyValue)))
            .property(
                "currentValue",
                ObjectBuilder::new().schema_type(SchemaType::AnyValue).description(Some("The value in force")),
            )
            .required("id")
            .additional_properties(Some(AdditionalProperties::FreeForm(true)))
            .description(Some("An option the runtime advertised before the latest prompt."))
            .into()
    }
}

impl utoipa::ToSchema for SessionConfigOption {}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn usage_keeps_unreported_counts_null_and_accounting_only_when_present() {
        let u = TurnUsage::from_stored(&json!({"input": 12, "output": 3})).unwrap();
        assert_eq!(
            serde_json::to_value(&u).unwrap(),
            json!({"input": 12, "output": 3, "cache_read": null, "cache_write": null})
        );
        let u =
            TurnUsage::from_stored(&json!({"input": 1, "output": 2, "cache_read": 5, "accounting": {"q": 1}})).unwrap();
        assert_eq!(u.cache_read, Some(5));
        assert_eq!(u.accounting, Some(json!({"q": 1})));
        assert!(TurnUsage::from_stored(&json!("nonsense")).is_none());
    }

    #[test]
    fn a_turn_with_nothing_recorded_shows_every_field_as_null() {
        let row = TurnRow {
            id: Uuid::nil(),
            conversation_id: Uuid::nil(),
            prompt: "hi".into(),
            status: "running".into(),
            origin: "api".into(),
            client_request_id: None,
            stop_reason: None,
            limit_reason: None,
            exit_code: None,
            error: None,
            inference: None,
            model_selection: None,
            config_selection: None,
            usage: None,
            rpc_id: None,
            inserted_at: 0,
            finished_at: None,
        };
        let v = serde_json::to_value(Turn::from(&row)).unwrap();
        for field in [
            "finished_at",
            "client_request_id",
            "stop_reason",
            "limit_reason",
            "exit_code",
            "inference",
            "model_selection",
            "config_selection",
            "usage",
        ] {
            assert_eq!(v.get(field), Some(&Value::Null), "{field}");
        }
    }
}
