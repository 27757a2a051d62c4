//! The three real agents this one imitates (see research/acp-runtimes.md section 3).

use serde_json::{Value, json};

use crate::config::{Choice, ConfigOption};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// Claude: configOptions incl. `effort` and `fast`; no authenticate step.
    Claude,
    /// Codex: configOptions incl. `reasoning_effort`; `authenticate` `openai-api-key` first.
    Codex,
    /// Gemini: no configOptions, legacy `models` + `modes`; `authenticate` `gemini-api-key` first.
    Gemini,
}

const ON_OFF: &[(&str, &str)] = &[("on", "On"), ("off", "Off")];
const EFFORT: &[(&str, &str)] = &[("low", "Low"), ("medium", "Medium"), ("high", "High")];

impl Profile {
    pub fn from_name(name: &str) -> Option<Profile> {
        match name {
            "claude" => Some(Profile::Claude),
            "codex" => Some(Profile::Codex),
            "gemini" => Some(Profile::Gemini),
            _ => None,
        }
    }

    /// The method id `authenticate` must name before `session/new`, if any.
    pub fn auth_method(self) -> Option<&'static str> {
        match self {
            Profile::Claude => None,
            Profile::Codex => Some("openai-api-key"),
            Profile::Gemini => Some("gemini-api-key"),
        }
    }

    pub fn auth_methods_json(self) -> Value {
        match self {
            Profile::Claude => json!([]),
            Profile::Codex => json!([{"id": "openai-api-key", "name": "Use OPENAI_API_KEY",
                "description": "Requires setting the `OPENAI_API_KEY` environment variable."}]),
            Profile::Gemini => json!([{"id": "gemini-api-key", "name": "Use Gemini API key",
                "description": "Requires setting the `GEMINI_API_KEY` environment variable."}]),
        }
    }

    /// Fresh `configOptions` of a new session; empty means set_config_option is unsupported.
    pub fn config_options(self) -> Vec<ConfigOption> {
        let option = |id, name, category, current, values| ConfigOption {
            id,
            name,
            category,
            choice: Choice::new(current, values),
        };
        match self {
            Profile::Claude => vec![
                option(
                    "mode",
                    "Mode",
                    "mode",
                    "default",
                    &[("default", "Default"), ("acceptEdits", "Accept Edits"), ("plan", "Plan Mode")],
                ),
                option(
                    "model",
                    "Model",
                    "model",
                    "default",
                    &[("default", "Default"), ("sonnet", "Sonnet"), ("opus", "Opus"), ("haiku", "Haiku")],
                ),
                option("effort", "Effort", "thought_level", "medium", EFFORT),
                option("fast", "Fast mode", "model_config", "off", ON_OFF),
            ],
            Profile::Codex => vec![
                option(
                    "mode",
                    "Approval Preset",
                    "mode",
                    "read-only",
                    &[("read-only", "Read Only"), ("auto", "Default"), ("full-access", "Full Access")],
                ),
                option(
                    "model",
                    "Model",
                    "model",
                    "gpt-5.2-codex",
                    &[("gpt-5.2-codex", "gpt-5.2-codex"), ("gpt-5.4", "gpt-5.4"), ("gpt-5.4-mini", "gpt-5.4-mini")],
                ),
                option("reasoning_effort", "Reasoning Effort", "thought_level", "medium", EFFORT),
                option("fast-mode", "Fast mode", "model_config", "off", ON_OFF),
            ],
            Profile::Gemini => Vec::new(),
        }
    }

    /// Legacy `models` of session/new, answered by `session/set_model`.
    pub fn models(self) -> Option<Choice> {
        (self == Profile::Gemini).then(|| {
            Choice::new(
                "gemini-2.5-flash",
                &[
                    ("gemini-2.5-flash", "Gemini 2.5 Flash"),
                    ("gemini-2.5-pro", "Gemini 2.5 Pro"),
                    ("gemini-3-flash-preview", "Gemini 3 Flash Preview"),
                ],
            )
        })
    }

    /// Legacy `modes` of session/new, answered by `session/set_mode`.
    pub fn modes(self) -> Option<Choice> {
        (self == Profile::Gemini).then(|| {
            Choice::new(
                "default",
                &[("default", "Default"), ("autoEdit", "Auto Edit"), ("yolo", "YOLO"), ("plan", "Plan")],
            )
        })
    }
}
