//! ACP messages as real agents send them. Lenient on purpose: structs the agent sends keep unknown fields
//! in `extra`, loosely specified parts stay `Value`, and unknown union kinds parse into an `Other` variant,
//! so a runtime that is newer or older than the schema never breaks a turn.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Unknown fields, kept so nothing an agent sends is lost.
pub type Extra = Map<String, Value>;

/// The protocol version this client speaks.
pub const PROTOCOL_VERSION: u16 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequest {
    pub protocol_version: u16,
    pub client_capabilities: ClientCapabilities,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    #[serde(default)]
    pub fs: FsCapabilities,
    #[serde(default)]
    pub terminal: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FsCapabilities {
    #[serde(default)]
    pub read_text_file: bool,
    #[serde(default)]
    pub write_text_file: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    #[serde(default)]
    pub protocol_version: Value,
    #[serde(default)]
    pub agent_capabilities: Value,
    #[serde(default)]
    pub auth_methods: Vec<AuthMethod>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthMethod {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticateRequest {
    pub method_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionRequest {
    pub cwd: String,
    pub mcp_servers: Vec<Value>,
    /// Runtime-specific session settings (Claude's adapter reads `systemPrompt` here).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionResponse {
    pub session_id: String,
    /// Absent on runtimes that only know `session/set_model` / `session/set_mode` (Gemini).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_options: Option<Vec<ConfigOption>>,
    /// Legacy model list (`{currentModelId, availableModels}`), which the newest schema dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<Value>,
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// One session setting the agent offers. Ids differ per runtime (`effort` vs `reasoning_effort`);
/// `category` (`model`, `thought_level`, `mode`, `model_config`) is the stable key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigOption {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// `select` or `boolean` today.
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub current_value: Value,
    /// A list of `{value, name}`, or of groups `{group, name, options: [{value, name}]}`.
    #[serde(default)]
    pub options: Value,
    #[serde(flatten)]
    pub extra: Extra,
}

impl ConfigOption {
    /// Every selectable value, groups flattened, in the agent's order.
    pub fn values(&self) -> Vec<&str> {
        fn collect<'a>(options: &'a Value, out: &mut Vec<&'a str>) {
            for option in options.as_array().into_iter().flatten() {
                match option.get("value").and_then(Value::as_str) {
                    Some(value) => out.push(value),
                    None => collect(option.get("options").unwrap_or(&Value::Null), out),
                }
            }
        }
        let mut out = Vec::new();
        collect(&self.options, &mut out);
        out
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptRequest {
    pub session_id: String,
    pub prompt: Vec<ContentBlock>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text(TextContent),
    Image(ImageContent),
    /// Kinds we do not model (resource links, audio, ...) pass through untouched.
    #[serde(untagged)]
    Other(Value),
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent { text: text.into(), extra: Extra::new() })
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    pub text: String,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    pub mime_type: String,
    /// Base64.
    pub data: String,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptResponse {
    /// `end_turn`, `max_tokens`, `max_turn_requests`, `refusal`, `cancelled`, or anything newer.
    pub stop_reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Gemini reports its tokens only here (`quota.token_count`); Claude adds `quota.model_usage`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Absent when not reported (never taken as zero).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_read_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_write_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetConfigOptionRequest {
    pub session_id: String,
    pub config_id: String,
    pub value: Value,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetConfigOptionResponse {
    /// The whole new list: options depend on each other (another model may drop `fast`).
    #[serde(default)]
    pub config_options: Vec<ConfigOption>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetModelRequest {
    pub session_id: String,
    pub model_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetModeRequest {
    pub session_id: String,
    pub mode_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelNotification {
    pub session_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionNotification {
    pub session_id: String,
    pub update: SessionUpdate,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "sessionUpdate", rename_all = "snake_case")]
pub enum SessionUpdate {
    AgentMessageChunk(ContentChunk),
    AgentThoughtChunk(ContentChunk),
    UserMessageChunk(ContentChunk),
    ToolCall(ToolCallUpdate),
    ToolCallUpdate(ToolCallUpdate),
    Plan(Plan),
    UsageUpdate(UsageUpdate),
    AvailableCommandsUpdate(Extra),
    CurrentModeUpdate(Extra),
    ConfigOptionUpdate(ConfigOptionUpdate),
    SessionInfoUpdate(Extra),
    /// Any kind this client does not know, or a known kind in a shape it cannot read; never an error.
    #[serde(untagged)]
    Other(Value),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContentChunk {
    pub content: ContentBlock,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Both `tool_call` and `tool_call_update`: only the id is certain, the rest arrives piecemeal.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallUpdate {
    pub tool_call_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `read`, `edit`, `execute`, `fetch`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `pending`, `in_progress`, `completed`, `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    #[serde(default)]
    pub entries: Vec<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageUpdate {
    /// Context tokens in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used: Option<u64>,
    /// Context window size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// `{amount, currency}` so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigOptionUpdate {
    #[serde(default)]
    pub config_options: Vec<ConfigOption>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermissionRequest {
    pub session_id: String,
    #[serde(default)]
    pub tool_call: Value,
    #[serde(default)]
    pub options: Vec<PermissionOption>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    pub option_id: String,
    #[serde(default)]
    pub name: String,
    /// `allow_once`, `allow_always`, `reject_once`, `reject_always`.
    #[serde(default)]
    pub kind: String,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestPermissionResponse {
    pub outcome: PermissionOutcome,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PermissionOutcome {
    Selected {
        #[serde(rename = "optionId")]
        option_id: String,
    },
    Cancelled,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn update(value: Value) -> SessionUpdate {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn claude_usage_update_keeps_cost() {
        let got = update(json!({"sessionUpdate": "usage_update", "used": 5210, "size": 200000,
            "cost": {"amount": 0.0123, "currency": "USD"}}));
        let SessionUpdate::UsageUpdate(usage) = got else { panic!("{got:?}") };
        assert_eq!((usage.used, usage.size), (Some(5210), Some(200000)));
        assert_eq!(usage.cost, Some(json!({"amount": 0.0123, "currency": "USD"})));
    }

    #[test]
    fn unknown_update_kind_is_kept_whole() {
        let raw = json!({"sessionUpdate": "compaction_update", "state": "started", "n": 3});
        assert_eq!(update(raw.clone()), SessionUpdate::Other(raw.clone()));
        assert_eq!(serde_json::to_value(SessionUpdate::Other(raw.clone())).unwrap(), raw);
    }

    #[test]
    fn known_kind_in_an_unreadable_shape_falls_back_to_other() {
        let raw = json!({"sessionUpdate": "tool_call_update", "status": "completed"});
        assert_eq!(update(raw.clone()), SessionUpdate::Other(raw));
    }

    #[test]
    fn message_chunks_and_unknown_content_blocks() {
        let got = update(json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}));
        assert_eq!(
            got,
            SessionUpdate::AgentMessageChunk(ContentChunk { content: ContentBlock::text("hi"), extra: Extra::new() })
        );
        let link = json!({"type": "resource_link", "uri": "file:///a", "name": "a"});
        let got = update(json!({"sessionUpdate": "user_message_chunk", "content": link}));
        let SessionUpdate::UserMessageChunk(chunk) = got else { panic!("{got:?}") };
        assert_eq!(chunk.content, ContentBlock::Other(link));
    }

    #[test]
    fn tool_call_updates_keep_raw_parts_and_meta() {
        let got = update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "toolu_1", "status": "completed",
            "rawOutput": {"stdout": "ok"}, "_meta": {"claudeCode": {"toolResponse": {}}}}));
        let SessionUpdate::ToolCallUpdate(call) = got else { panic!("{got:?}") };
        assert_eq!(call.tool_call_id, "toolu_1");
        assert_eq!(call.status.as_deref(), Some("completed"));
        assert_eq!(call.raw_output, Some(json!({"stdout": "ok"})));
        assert!(call.extra.contains_key("_meta"));
        let got =
            update(json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Terminal", "kind": "execute",
            "status": "pending"}));
        let SessionUpdate::ToolCall(call) = got else { panic!("{got:?}") };
        assert_eq!((call.title.as_deref(), call.kind.as_deref()), (Some("Terminal"), Some("execute")));
    }

    #[test]
    fn passthrough_updates_round_trip() {
        for raw in [
            json!({"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "init"}]}),
            json!({"sessionUpdate": "current_mode_update", "currentModeId": "plan"}),
            json!({"sessionUpdate": "session_info_update", "title": "Fix the build"}),
            json!({"sessionUpdate": "plan", "entries": [{"content": "a", "status": "pending", "priority": "high"}]}),
        ] {
            let parsed = update(raw.clone());
            assert!(!matches!(parsed, SessionUpdate::Other(_)), "{raw}");
            assert_eq!(serde_json::to_value(parsed).unwrap(), raw);
        }
    }

    #[test]
    fn codex_session_new_with_reasoning_effort() {
        let got: NewSessionResponse = serde_json::from_value(json!({"sessionId": "019a",
            "configOptions": [
                {"id": "mode", "name": "Approval Preset", "category": "mode", "type": "select", "currentValue": "read-only",
                 "options": [{"value": "read-only", "name": "Read Only"}, {"value": "auto", "name": "Default"}]},
                {"id": "reasoning_effort", "name": "Reasoning Effort", "category": "thought_level", "type": "select",
                 "currentValue": "medium", "options": [{"value": "low", "name": "Low"}, {"value": "high", "name": "High"}]}],
            "modes": {"currentModeId": "read-only", "availableModes": []}}))
        .unwrap();
        let options = got.config_options.unwrap();
        assert_eq!(options[1].id, "reasoning_effort");
        assert_eq!(options[1].category.as_deref(), Some("thought_level"));
        assert_eq!(options[1].current_value, json!("medium"));
        assert_eq!(options[1].values(), ["low", "high"]);
        assert!(got.models.is_none() && got.modes.is_some());
    }

    #[test]
    fn gemini_session_new_has_models_and_modes_only() {
        let got: NewSessionResponse = serde_json::from_value(json!({"sessionId": "s1",
            "models": {"currentModelId": "gemini-2.5-flash", "availableModels": [{"modelId": "auto", "name": "Auto"}]},
            "modes": {"currentModeId": "default", "availableModes": [{"id": "yolo", "name": "YOLO"}]}}))
        .unwrap();
        assert!(got.config_options.is_none());
        assert_eq!(got.models.unwrap()["currentModelId"], "gemini-2.5-flash");
    }

    #[test]
    fn grouped_and_boolean_config_options() {
        let grouped: ConfigOption =
            serde_json::from_value(json!({"id": "model", "type": "select", "currentValue": "a",
            "options": [{"group": "fast", "name": "Fast", "options": [{"value": "a", "name": "A"}]},
                        {"group": "big", "name": "Big", "options": [{"value": "b", "name": "B"}]}]}))
            .unwrap();
        assert_eq!(grouped.values(), ["a", "b"]);
        let boolean: ConfigOption =
            serde_json::from_value(json!({"id": "fast", "type": "boolean", "currentValue": true})).unwrap();
        assert_eq!((boolean.kind.as_str(), boolean.values().len()), ("boolean", 0));
    }

    #[test]
    fn prompt_response_with_usage_and_quota_meta() {
        let got: PromptResponse = serde_json::from_value(json!({"stopReason": "end_turn",
            "usage": {"inputTokens": 10, "outputTokens": 5, "cachedReadTokens": 2, "cachedWriteTokens": 0, "totalTokens": 17},
            "_meta": {"quota": {"token_count": {"input_tokens": 10, "output_tokens": 5}}}}))
        .unwrap();
        assert_eq!(got.stop_reason, "end_turn");
        let usage = got.usage.unwrap();
        assert_eq!((usage.input_tokens, usage.output_tokens, usage.total_tokens), (Some(10), Some(5), Some(17)));
        assert_eq!(got.meta.unwrap()["quota"]["token_count"]["input_tokens"], 10);
        let unknown: PromptResponse = serde_json::from_value(json!({"stopReason": "paused_for_lunch"})).unwrap();
        assert_eq!(unknown.stop_reason, "paused_for_lunch");
    }

    #[test]
    fn initialize_lists_auth_methods() {
        let got: InitializeResponse = serde_json::from_value(json!({"protocolVersion": 1,
            "agentCapabilities": {"loadSession": true},
            "authMethods": [{"id": "chatgpt", "name": "Login with ChatGPT"},
                            {"id": "openai-api-key", "name": "Use OPENAI_API_KEY", "description": "Requires OPENAI_API_KEY"}]}))
        .unwrap();
        assert_eq!(got.auth_methods[1].id, "openai-api-key");
        assert_eq!(got.auth_methods[1].description.as_deref(), Some("Requires OPENAI_API_KEY"));
        assert_eq!(got.agent_capabilities["loadSession"], true);
    }

    #[test]
    fn our_requests_serialize_in_wire_shape() {
        let init = InitializeRequest {
            protocol_version: PROTOCOL_VERSION,
            client_capabilities: ClientCapabilities::default(),
        };
        assert_eq!(
            serde_json::to_value(&init).unwrap(),
            json!({"protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}})
        );
        let image = ContentBlock::Image(ImageContent {
            mime_type: "image/png".into(),
            data: "AA==".into(),
            extra: Extra::new(),
        });
        let prompt = PromptRequest { session_id: "s".into(), prompt: vec![ContentBlock::text("hi"), image] };
        let wire = serde_json::to_value(&prompt).unwrap();
        assert_eq!(
            wire,
            json!({"sessionId": "s", "prompt": [{"type": "text", "text": "hi"},
            {"type": "image", "mimeType": "image/png", "data": "AA=="}]})
        );
        assert_eq!(serde_json::from_value::<PromptRequest>(wire).unwrap(), prompt);
        let set = SetConfigOptionRequest { session_id: "s".into(), config_id: "effort".into(), value: json!("high") };
        assert_eq!(
            serde_json::to_value(&set).unwrap(),
            json!({"sessionId": "s", "configId": "effort", "value": "high"})
        );
        let model = SetModelRequest { session_id: "s".into(), model_id: "gemini-2.5-pro".into() };
        assert_eq!(serde_json::to_value(&model).unwrap(), json!({"sessionId": "s", "modelId": "gemini-2.5-pro"}));
        let new = NewSessionRequest { cwd: "/workspace".into(), mcp_servers: vec![], meta: None };
        assert_eq!(serde_json::to_value(&new).unwrap(), json!({"cwd": "/workspace", "mcpServers": []}));
    }

    #[test]
    fn permission_request_and_outcomes() {
        let got: RequestPermissionRequest = serde_json::from_value(json!({"sessionId": "s",
            "toolCall": {"toolCallId": "t1", "title": "ls"},
            "options": [{"optionId": "allow-once", "name": "Allow", "kind": "allow_once"},
                        {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}))
        .unwrap();
        assert_eq!(got.options[1].kind, "reject_once");
        assert_eq!(got.tool_call["toolCallId"], "t1");
        let selected =
            RequestPermissionResponse { outcome: PermissionOutcome::Selected { option_id: "allow-once".into() } };
        assert_eq!(
            serde_json::to_value(&selected).unwrap(),
            json!({"outcome": {"outcome": "selected", "optionId": "allow-once"}})
        );
        let cancelled = RequestPermissionResponse { outcome: PermissionOutcome::Cancelled };
        assert_eq!(serde_json::to_value(&cancelled).unwrap(), json!({"outcome": {"outcome": "cancelled"}}));
    }

    #[test]
    fn config_option_update_replaces_the_list() {
        let got = update(json!({"sessionUpdate": "config_option_update",
            "configOptions": [{"id": "model", "type": "select", "currentValue": "haiku", "options": []}]}));
        let SessionUpdate::ConfigOptionUpdate(update) = got else { panic!("{got:?}") };
        assert_eq!(update.config_options[0].current_value, "haiku");
    }
}
