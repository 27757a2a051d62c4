//! Plain rules of an agent body (DESIGN section 5, spec 2.1): names, the
//! command, the model form each runtime accepts, and the PermissionPolicy and
//! SessionConfig maps, which conversations check again with these functions.

use axum::http::StatusCode;
use serde_json::{Map, Value};

use uuid::Uuid;

use super::MachineProvider;
use crate::error::ApiError;
use crate::http::extract::Validator;

pub const MAX_NAME: usize = 200;
pub const MAX_DESCRIPTION: usize = 2000;
/// Longest system prompt, in characters.
pub const MAX_SYSTEM_PROMPT: usize = 100_000;
/// Longest `provider/model_id`.
pub const MAX_MODEL: usize = 200;
/// Longest wait of a permission request (a year, in seconds).
pub const MAX_ASK_TIMEOUT: i64 = 31_536_000;
pub const MAX_SESSION_CONFIG_ENTRIES: usize = 16;
pub const MAX_SESSION_CONFIG_ID: usize = 64;
pub const MAX_SESSION_CONFIG_VALUE: usize = 200;
/// Verdicts of a permission policy.
pub const VERDICTS: [&str; 3] = ["auto_allow", "ask", "auto_deny"];

/// A name: 1 to 200 characters, not blank.
pub fn check_name(v: &mut Validator, name: &str) {
    v.check(!name.trim().is_empty(), "name", "can't be blank");
    v.check(name.chars().count() <= MAX_NAME, "name", "should be at most 200 character(s)");
}

/// `provider` and `runner_id`: a runner agent names its runner, no other
/// agent names one, and only the providers this server offers
/// (`enabled`, `sandbox.providers`) are chosen.
pub fn check_provider(
    v: &mut Validator,
    provider: Option<MachineProvider>,
    runner_id: Option<Uuid>,
    enabled: &[String],
) {
    match provider {
        Some(MachineProvider::Runner) => {
            v.check(runner_id.is_some(), "runner_id", "is required with provider `runner`")
        }
        Some(p) if !enabled.iter().any(|e| e == p.as_str()) => v.check(
            false,
            "provider",
            &format!("is not available on this server (available: {}, runner)", enabled.join(", ")),
        ),
        Some(_) | None => v.check(runner_id.is_none(), "runner_id", "is only for provider `runner`"),
    }
}

/// `command`: required for `acp`; when present, at least one argument and no empty one.
pub fn check_command(v: &mut Validator, runtime: &str, command: Option<&[String]>) {
    match command {
        None => v.check(runtime != "acp", "command", "can't be blank"),
        Some([]) => v.check(false, "command", "should have at least 1 item(s)"),
        Some(args) => {
            for (i, arg) in args.iter().enumerate() {
                v.check(!arg.is_empty(), &format!("command[{i}]"), "can't be blank");
            }
        }
    }
}

/// The one model provider a runtime drives; `None` for any (`opencode`).
fn driven_provider(runtime: &str) -> Option<&'static str> {
    match runtime {
        "claude" => Some("anthropic"),
        "codex" => Some("openai"),
        "gemini" => Some("google"),
        _ => None,
    }
}

/// A model for `runtime`: `provider/model_id` (every `/`-separated part
/// non-empty, no whitespace, at most 200 characters) whose provider the
/// runtime drives (`claude`: anthropic, `codex`: openai, `gemini`: google,
/// `opencode`: any). `acp` takes no model: its command picks one.
pub fn check_model(runtime: &str, model: &str) -> Result<(), String> {
    if runtime == "acp" {
        return Err("The acp runtime takes no model; its command chooses one.".into());
    }
    let well_formed = model.contains('/')
        && model.split('/').all(|part| !part.is_empty())
        && model.chars().count() <= MAX_MODEL
        && !model.chars().any(|c| c.is_whitespace() || c.is_control());
    if !well_formed {
        return Err("The model must have the form provider/model_id (at most 200 characters, no spaces).".into());
    }
    let provider = model.split('/').next().unwrap_or_default();
    match driven_provider(runtime) {
        Some(driven) if driven != provider => {
            Err(format!("The {runtime} runtime drives {driven} models, not {provider:?}."))
        }
        _ => Ok(()),
    }
}

/// A PermissionPolicy (spec 2.1): key (tool card title, ACP tool kind, or
/// `default`; not empty) -> `auto_allow`, `ask` or `auto_deny`, plus the
/// optional `ask_timeout`, an integer from 1 to 31536000.
pub fn validate_permission_policy(policy: &Map<String, Value>) -> Result<(), String> {
    for (key, value) in policy {
        if key == "ask_timeout" {
            if !value.as_i64().is_some_and(|n| (1..=MAX_ASK_TIMEOUT).contains(&n)) {
                return Err(format!("ask_timeout must be an integer between 1 and {MAX_ASK_TIMEOUT}"));
            }
            continue;
        }
        if key.is_empty() {
            return Err("keys can't be blank".into());
        }
        if !value.as_str().is_some_and(|verdict| VERDICTS.contains(&verdict)) {
            return Err(format!("{key:?} must be auto_allow, ask or auto_deny"));
        }
    }
    Ok(())
}

/// A SessionConfig (spec 2.1): at most 16 entries mapping an adapter option
/// id (1 to 64 letters, digits, `.`, `_`, `:`, `-`; never `model`) to a
/// string of 1 to 200 characters or a boolean. The message names the key.
pub fn validate_session_config(config: &Map<String, Value>) -> Result<(), String> {
    if config.len() > MAX_SESSION_CONFIG_ENTRIES {
        return Err(format!(
            "session_config has {} entries; at most {MAX_SESSION_CONFIG_ENTRIES} are allowed.",
            config.len()
        ));
    }
    for (id, value) in config {
        // An arbitrary key is shown cut short, so the message stays small.
        let shown: String = id.chars().take(MAX_SESSION_CONFIG_ID + 1).collect();
        if id == "model" {
            return Err("session_config key \"model\" is refused; set the model with the `model` field.".into());
        }
        let id_ok = (1..=MAX_SESSION_CONFIG_ID).contains(&id.chars().count())
            && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'));
        if !id_ok {
            return Err(format!(
                "session_config key {shown:?} is invalid: option ids are 1 to {MAX_SESSION_CONFIG_ID} letters, digits, `.`, `_`, `:` or `-`."
            ));
        }
        match value {
            Value::Bool(_) => {}
            Value::String(s) if (1..=MAX_SESSION_CONFIG_VALUE).contains(&s.chars().count()) => {}
            Value::String(_) => {
                return Err(format!(
                    "session_config key {shown:?}: the value should be 1 to {MAX_SESSION_CONFIG_VALUE} character(s)."
                ));
            }
            _ => return Err(format!("session_config key {shown:?}: the value must be a string or a boolean.")),
        }
    }
    Ok(())
}

/// 422 `session_config_invalid` with the message naming the key.
pub fn session_config_error(message: String) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "session_config_invalid", message)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn models() {
        assert!(check_model("claude", "anthropic/claude-sonnet-4-5").is_ok());
        assert!(check_model("codex", "openai/gpt-5").is_ok());
        assert!(check_model("gemini", "google/gemini-2.5-pro").is_ok());
        assert!(check_model("opencode", "openrouter/anthropic/claude").is_ok());
        for bad in ["claude", "/claude", "anthropic/", "anthropic//x", "anthropic/a b", ""] {
            assert!(check_model("opencode", bad).is_err(), "{bad}");
        }
        assert!(check_model("opencode", &format!("a/{}", "m".repeat(198))).is_ok());
        assert!(check_model("opencode", &format!("a/{}", "m".repeat(199))).is_err());
        assert!(check_model("claude", "openai/gpt-5").unwrap_err().contains("anthropic"));
        assert!(check_model("codex", "anthropic/claude").is_err());
        assert!(check_model("acp", "anthropic/claude").is_err());
    }

    #[test]
    fn permission_policies() {
        assert!(validate_permission_policy(&map(json!({}))).is_ok());
        let good = json!({"default": "ask", "execute": "auto_deny", "Read file": "auto_allow"});
        assert!(validate_permission_policy(&map(good)).is_ok());
        assert!(validate_permission_policy(&map(json!({"ask_timeout": 1}))).is_ok());
        assert!(validate_permission_policy(&map(json!({"ask_timeout": 31_536_000}))).is_ok());
        for bad in [
            json!({"ask_timeout": 0}),
            json!({"ask_timeout": 31_536_001}),
            json!({"ask_timeout": 5.0}),
            json!({"ask_timeout": "60"}),
            json!({"edit": "allow"}),
            json!({"edit": true}),
            json!({"": "ask"}),
        ] {
            assert!(validate_permission_policy(&map(bad.clone())).is_err(), "{bad}");
        }
    }

    #[test]
    fn session_configs() {
        assert!(validate_session_config(&map(json!({"effort": "high", "fast": true, "a.b_c:d-9": false}))).is_ok());
        let sixteen: Map<String, Value> = (0..16).map(|i| (format!("o{i}"), json!(true))).collect();
        assert!(validate_session_config(&sixteen).is_ok());
        let mut seventeen = sixteen;
        seventeen.insert("o16".into(), json!(true));
        assert!(validate_session_config(&seventeen).is_err());
        assert!(validate_session_config(&map(json!({"effort": "x".repeat(200)}))).is_ok());
        assert!(validate_session_config(&map(json!({"effort": "x".repeat(201)}))).unwrap_err().contains("effort"));
        assert!(validate_session_config(&map(json!({"effort": ""}))).unwrap_err().contains("effort"));
        assert!(validate_session_config(&map(json!({"effort": 3}))).unwrap_err().contains("effort"));
        assert!(validate_session_config(&map(json!({"model": "anthropic/x"}))).unwrap_err().contains("model"));
        assert!(validate_session_config(&map(json!({"i".repeat(64): true}))).is_ok());
        assert!(validate_session_config(&map(json!({"i".repeat(65): true}))).is_err());
        assert!(validate_session_config(&map(json!({"bad key": true}))).unwrap_err().contains("bad key"));
        assert_eq!(session_config_error("x".into()).error, "session_config_invalid");
    }

    #[test]
    fn commands() {
        let mut v = Validator::default();
        check_command(&mut v, "acp", None);
        check_command(&mut v, "claude", None);
        assert!(v.0.contains_key("command") && v.0.len() == 1);
        let mut v = Validator::default();
        check_command(&mut v, "acp", Some(&["a".into(), String::new()]));
        assert!(v.0.contains_key("command[1]"));
        let mut v = Validator::default();
        check_command(&mut v, "claude", Some(&[]));
        assert!(v.0.contains_key("command"));
    }
}
