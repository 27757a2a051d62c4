//! Selectable session settings: ACP `configOptions` and the legacy `models` / `modes` lists.

use serde_json::{Value, json};

use crate::rpc::RpcError;

/// A current value out of a fixed list of `(id, display name)` pairs.
#[derive(Debug, Clone)]
pub struct Choice {
    pub current: String,
    pub values: &'static [(&'static str, &'static str)],
}

impl Choice {
    pub fn new(current: &str, values: &'static [(&'static str, &'static str)]) -> Self {
        Choice { current: current.to_owned(), values }
    }

    /// Switches to `value`; a value outside the list is -32602 naming it and what it was meant for.
    pub fn select(&mut self, value: &str, what: &str) -> Result<(), RpcError> {
        if !self.values.iter().any(|(id, _)| *id == value) {
            return Err(RpcError::invalid_params(format!("invalid value `{value}` for {what}")));
        }
        self.current = value.to_owned();
        Ok(())
    }

    /// The `models` object of session/new (Gemini's legacy shape).
    pub fn models_json(&self) -> Value {
        let available: Vec<Value> = self.values.iter().map(|(id, name)| json!({"modelId": id, "name": name})).collect();
        json!({"currentModelId": self.current, "availableModels": available})
    }

    /// The `modes` object of session/new.
    pub fn modes_json(&self) -> Value {
        let available: Vec<Value> = self.values.iter().map(|(id, name)| json!({"id": id, "name": name})).collect();
        json!({"currentModeId": self.current, "availableModes": available})
    }
}

/// One entry of `configOptions`; always a `select`.
#[derive(Debug, Clone)]
pub struct ConfigOption {
    pub id: &'static str,
    pub name: &'static str,
    pub category: &'static str,
    pub choice: Choice,
}

impl ConfigOption {
    pub fn to_json(&self) -> Value {
        let options: Vec<Value> =
            self.choice.values.iter().map(|(value, name)| json!({"value": value, "name": name})).collect();
        json!({
            "id": self.id,
            "name": self.name,
            "category": self.category,
            "type": "select",
            "currentValue": self.choice.current,
            "options": options,
        })
    }
}

pub fn options_json(options: &[ConfigOption]) -> Value {
    Value::Array(options.iter().map(ConfigOption::to_json).collect())
}

/// Applies `session/set_config_option`: unknown id or a value not offered is -32602.
pub fn set_option(options: &mut [ConfigOption], id: &str, value: &Value) -> Result<(), RpcError> {
    let option = options
        .iter_mut()
        .find(|o| o.id == id)
        .ok_or_else(|| RpcError::invalid_params(format!("unknown config option `{id}`")))?;
    let Some(value) = value.as_str() else {
        return Err(RpcError::invalid_params(format!(
            "invalid value {value} for config option `{id}`: expected a string"
        )));
    };
    option.choice.select(value, &format!("config option `{id}`"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::INVALID_PARAMS;

    fn effort() -> Vec<ConfigOption> {
        let choice = Choice::new("medium", &[("low", "Low"), ("medium", "Medium"), ("high", "High")]);
        vec![ConfigOption { id: "effort", name: "Effort", category: "thought_level", choice }]
    }

    #[test]
    fn set_option_changes_current_value() {
        let mut options = effort();
        set_option(&mut options, "effort", &json!("high")).unwrap();
        assert_eq!(options_json(&options)[0]["currentValue"], "high");
    }

    #[test]
    fn set_option_rejects_unknown_id_and_value() {
        let mut options = effort();
        let err = set_option(&mut options, "speed", &json!("high")).unwrap_err();
        assert_eq!((err.code, err.message.as_str()), (INVALID_PARAMS, "unknown config option `speed`"));
        let err = set_option(&mut options, "effort", &json!("max")).unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (INVALID_PARAMS, "invalid value `max` for config option `effort`")
        );
        let err = set_option(&mut options, "effort", &json!(true)).unwrap_err();
        assert_eq!(err.code, INVALID_PARAMS);
        assert_eq!(options[0].choice.current, "medium");
    }

    #[test]
    fn option_json_has_the_acp_shape() {
        let json = effort()[0].to_json();
        assert_eq!(
            json,
            json!({"id": "effort", "name": "Effort", "category": "thought_level", "type": "select",
                   "currentValue": "medium", "options": [{"value": "low", "name": "Low"},
                   {"value": "medium", "name": "Medium"}, {"value": "high", "name": "High"}]})
        );
    }
}
