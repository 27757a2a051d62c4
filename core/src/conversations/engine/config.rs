//! The model and session config a turn runs with (spec 4.1, session config
//! rules): what was asked for, what the runtime already has in force, and
//! what must be sent before the prompt. The rules are plain functions; the
//! one async step, [`apply`], sends what they decide.

use serde_json::{Map, Value, json};

use super::session::Session;
use crate::acp::rpc::RpcError;
use crate::acp::types::ConfigOption;

/// The requested session config: the agent's, then the conversation's, then
/// the prompt's, key by key (a later layer wins for the keys it names).
pub fn requested(layers: &[Option<&Map<String, Value>>]) -> Map<String, Value> {
    let mut merged = Map::new();
    for layer in layers.iter().flatten() {
        merged.extend(layer.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    merged
}

/// The id a runtime knows a model by: `provider/model_id` without its provider, except on
/// OpenCode, which drives several providers and names its models with theirs.
pub fn model_id<'a>(runtime: &str, model: &'a str) -> &'a str {
    if runtime == "opencode" {
        return model;
    }
    model.split_once('/').map_or(model, |(_, id)| id)
}

/// How a model reaches the runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelStep {
    /// Already the session's model: nothing is sent.
    InForce,
    /// Through this config option (category `model`).
    Option(String),
    /// Through `session/set_model`, for a runtime without a model option (Gemini).
    SetModel,
}

/// The step for `id` given the session's options and, for runtimes without a
/// model option, the model the legacy `models` list says is current. An id
/// the option does not list is still sent: the runtime is the judge of its
/// catalog (spec: the model id is not checked against one).
pub fn model_step(options: Option<&[ConfigOption]>, legacy_current: Option<&str>, id: &str) -> ModelStep {
    match options.into_iter().flatten().find(|o| o.category.as_deref() == Some("model")) {
        Some(o) if o.current_value.as_str() == Some(id) => ModelStep::InForce,
        Some(o) => ModelStep::Option(o.id.clone()),
        None if legacy_current == Some(id) => ModelStep::InForce,
        None => ModelStep::SetModel,
    }
}

/// What to do with one requested option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigStep {
    /// The runtime does not offer the option: skipped, the turn goes on.
    Skip,
    /// Its current value is the one asked for: not resent.
    InForce,
    Send,
}

pub fn config_step(options: Option<&[ConfigOption]>, id: &str, value: &Value) -> ConfigStep {
    match options.into_iter().flatten().find(|o| o.id == id) {
        None => ConfigStep::Skip,
        Some(o) if o.current_value == *value => ConfigStep::InForce,
        Some(_) => ConfigStep::Send,
    }
}

/// The current value of option `id` in `options`.
fn current(options: &[ConfigOption], id: &str) -> Option<Value> {
    options.iter().find(|o| o.id == id).map(|o| o.current_value.clone())
}

/// A turn's `config_selection`.
#[derive(Debug, Clone, PartialEq, utoipa::ToSchema)]
#[schema(as = ConfigSelection)]
pub struct Selection {
    /// Option id -> the value asked for (agent, conversation and prompt merged).
    #[schema(value_type = Object)]
    pub requested: Map<String, Value>,
    /// Option id -> the value the runtime confirmed (sent now, or already in force).
    #[schema(value_type = Object)]
    pub applied: Map<String, Value>,
    /// Option ids the runtime does not offer.
    pub skipped: Vec<String>,
    /// `applied`, `failed` (a value was refused), or `not_applied` (the model failed first).
    #[schema(value_type = SelectionStatus)]
    pub status: &'static str,
    pub error: Option<String>,
}

acs_platform::string_enum!(
    SelectionStatus,
    "`applied`, `failed` (a value was refused), or `not_applied` (the model failed first).",
    ["applied", "failed", "not_applied"]
);

impl Selection {
    pub fn new(requested: Map<String, Value>) -> Selection {
        Selection { requested, applied: Map::new(), skipped: Vec::new(), status: "not_applied", error: None }
    }

    pub fn to_value(&self) -> Value {
        json!({"requested": self.requested, "applied": self.applied, "skipped": self.skipped,
            "status": self.status, "error": self.error})
    }
}

/// A `model` or `config` stage event to write, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub stage: &'static str,
    pub failed: bool,
    pub data: Value,
}

/// What [`apply`] did: the events to write, the selection, and the
/// runtime's message when it refused (the turn fails before its prompt).
#[derive(Debug)]
pub struct Applied {
    pub reports: Vec<Report>,
    pub selection: Selection,
    pub refused: Option<String>,
}

fn message(e: RpcError) -> String {
    match e {
        RpcError::Remote { message, .. } => message,
        other => other.to_string(),
    }
}

/// Sends the model (when not in force), then each requested option (when
/// offered and not in force), keeping the session's option list current
/// from every answer (options depend on the model, so the whole list is
/// replaced). Stops at the first refusal.
pub async fn apply(
    session: &mut Session,
    runtime: &str,
    model: Option<&str>,
    requested: Map<String, Value>,
) -> Applied {
    let mut out = Applied { reports: Vec::new(), selection: Selection::new(requested), refused: None };
    if let Some(model) = model {
        let id = model_id(runtime, model);
        let sent = match model_step(session.options.as_deref(), session.model.as_deref(), id) {
            ModelStep::InForce => None,
            ModelStep::Option(option) => {
                Some(session.client.set_config(&option, json!(id)).await.map(|o| session.options = Some(o)))
            }
            ModelStep::SetModel => Some(session.client.set_model(id).await),
        };
        match sent {
            None => {}
            Some(Ok(())) => {
                session.model = Some(id.to_owned());
                out.reports.push(Report { stage: "model", failed: false, data: json!({"model": model}) });
            }
            Some(Err(e)) => {
                let error = message(e);
                out.reports.push(Report {
                    stage: "model",
                    failed: true,
                    data: json!({"model": model, "error": error}),
                });
                out.refused = Some(error);
                return out;
            }
        }
    }
    let wanted: Vec<(String, Value)> = out.selection.requested.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    for (id, value) in wanted {
        match config_step(session.options.as_deref(), &id, &value) {
            ConfigStep::Skip => {
                out.reports.push(Report {
                    stage: "config",
                    failed: false,
                    data: json!({"outcome": "skipped", "id": id}),
                });
                out.selection.skipped.push(id);
            }
            ConfigStep::InForce => {
                out.selection.applied.insert(id, value);
            }
            ConfigStep::Send => match session.client.set_config(&id, value.clone()).await {
                Ok(options) => {
                    let confirmed = current(&options, &id).unwrap_or(value);
                    session.options = Some(options);
                    let data = json!({"outcome": "applied", "id": id, "value": confirmed});
                    out.reports.push(Report { stage: "config", failed: false, data });
                    out.selection.applied.insert(id, confirmed);
                }
                Err(e) => {
                    let error = message(e);
                    let data = json!({"id": id, "value": value, "error": error});
                    out.reports.push(Report { stage: "config", failed: true, data });
                    out.selection.status = "failed";
                    out.selection.error = Some(error.clone());
                    out.refused = Some(error);
                    return out;
                }
            },
        }
    }
    out.selection.status = "applied";
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn option(id: &str, category: &str, current: &str) -> ConfigOption {
        ConfigOption {
            id: id.into(),
            category: Some(category.into()),
            kind: "select".into(),
            current_value: json!(current),
            ..ConfigOption::default()
        }
    }

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn later_layers_win_key_by_key() {
        let agent = map(json!({"effort": "low", "fast": "on"}));
        let conv = map(json!({"effort": "high"}));
        let prompt = map(json!({"fast": "off", "mode": "plan"}));
        let got = requested(&[Some(&agent), Some(&conv), Some(&prompt)]);
        assert_eq!(Value::Object(got), json!({"effort": "high", "fast": "off", "mode": "plan"}));
        assert!(requested(&[None, None, None]).is_empty());
        assert_eq!(Value::Object(requested(&[None, Some(&conv), None])), json!({"effort": "high"}));
    }

    #[test]
    fn the_model_id_drops_only_the_provider() {
        assert_eq!(model_id("claude", "anthropic/sonnet"), "sonnet");
        assert_eq!(model_id("codex", "openrouter/anthropic/claude"), "anthropic/claude");
        assert_eq!(model_id("gemini", "bare"), "bare");
        assert_eq!(model_id("opencode", "anthropic/claude-sonnet-4-5"), "anthropic/claude-sonnet-4-5");
    }

    #[test]
    fn a_model_goes_through_the_model_option_else_set_model() {
        let opts = vec![option("mode", "mode", "default"), option("model", "model", "default")];
        assert_eq!(model_step(Some(&opts), None, "sonnet"), ModelStep::Option("model".into()));
        assert_eq!(model_step(Some(&opts), None, "default"), ModelStep::InForce);
        // Not among the option's values: still sent, the runtime decides.
        assert_eq!(model_step(Some(&opts), None, "no-such-model"), ModelStep::Option("model".into()));
        // No options (Gemini), or none of category `model`: the legacy call.
        assert_eq!(model_step(None, Some("gemini-2.5-flash"), "gemini-2.5-pro"), ModelStep::SetModel);
        assert_eq!(model_step(None, Some("gemini-2.5-pro"), "gemini-2.5-pro"), ModelStep::InForce);
        assert_eq!(model_step(Some(&opts[..1]), None, "x"), ModelStep::SetModel);
    }

    #[test]
    fn options_in_force_are_not_resent_and_unknown_ones_skipped() {
        let opts = vec![option("effort", "thought_level", "medium"), option("fast", "model_config", "off")];
        assert_eq!(config_step(Some(&opts), "effort", &json!("medium")), ConfigStep::InForce);
        assert_eq!(config_step(Some(&opts), "effort", &json!("high")), ConfigStep::Send);
        assert_eq!(config_step(Some(&opts), "reasoning_effort", &json!("high")), ConfigStep::Skip);
        assert_eq!(config_step(None, "effort", &json!("high")), ConfigStep::Skip);
        // A boolean is compared as sent: "on" is not `true`.
        assert_eq!(config_step(Some(&opts), "fast", &json!(true)), ConfigStep::Send);
    }

    #[test]
    fn a_selection_shows_every_field() {
        let mut s = Selection::new(map(json!({"effort": "high"})));
        assert_eq!(s.to_value()["status"], "not_applied");
        s.applied.insert("effort".into(), json!("high"));
        s.status = "applied";
        assert_eq!(
            s.to_value(),
            json!({"requested": {"effort": "high"}, "applied": {"effort": "high"}, "skipped": [],
                "status": "applied", "error": null})
        );
    }
}
