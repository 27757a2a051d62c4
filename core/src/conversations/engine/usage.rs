//! A turn's `usage` (spec 2.2 `TurnUsage`) from what the runtime reported:
//! the prompt answer's token counts, and the last `usage_update`.

use serde_json::{Map, Value, json};

use crate::acp::types::{PromptResponse, UsageUpdate};

/// Counts only as reported (an unreported count stays absent, never zero);
/// `accounting` only for a qualified report: a `usage_update` with a cost
/// (a number `amount` and a `currency`). `_meta` reports such as Gemini's
/// `quota` are metadata, not measured counts, and are not read. `None` when
/// neither counts nor a qualified report came.
pub fn of(response: &PromptResponse, report: Option<&UsageUpdate>) -> Option<Value> {
    let mut usage = Map::new();
    if let Some(u) = &response.usage {
        for (key, count) in [
            ("input", u.input_tokens),
            ("output", u.output_tokens),
            ("cache_read", u.cached_read_tokens),
            ("cache_write", u.cached_write_tokens),
        ] {
            if let Some(n) = count {
                usage.insert(key.into(), json!(n));
            }
        }
    }
    if let Some(accounting) = report.and_then(accounting) {
        usage.insert("accounting".into(), accounting);
    }
    (!usage.is_empty()).then_some(Value::Object(usage))
}

/// `{cost: {amount, currency}, used?, size?}` from a report with a cost.
fn accounting(report: &UsageUpdate) -> Option<Value> {
    let cost = report.cost.as_ref()?;
    let amount = cost.get("amount").filter(|a| a.is_number())?;
    let currency = cost.get("currency").and_then(Value::as_str)?;
    let mut accounting = json!({"cost": {"amount": amount, "currency": currency}});
    for (key, value) in [("used", report.used), ("size", report.size)] {
        if let Some(n) = value {
            accounting[key] = json!(n);
        }
    }
    Some(accounting)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(usage: Value) -> PromptResponse {
        serde_json::from_value(json!({"stopReason": "end_turn", "usage": usage})).unwrap()
    }

    fn report(v: Value) -> UsageUpdate {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn counts_are_kept_as_reported_and_missing_ones_stay_absent() {
        let r = response(json!({"inputTokens": 10, "outputTokens": 5, "cachedReadTokens": 2}));
        assert_eq!(of(&r, None), Some(json!({"input": 10, "output": 5, "cache_read": 2})));
        assert_eq!(of(&response(json!({"outputTokens": 5})), None), Some(json!({"output": 5})));
        assert_eq!(of(&PromptResponse::default(), None), None);
    }

    #[test]
    fn accounting_only_for_a_report_with_a_cost() {
        let none = PromptResponse::default();
        let costed = report(json!({"used": 10, "size": 200, "cost": {"amount": 0.5, "currency": "USD"}}));
        assert_eq!(
            of(&none, Some(&costed)),
            Some(json!({"accounting": {"cost": {"amount": 0.5, "currency": "USD"}, "used": 10, "size": 200}}))
        );
        assert_eq!(of(&none, Some(&report(json!({"used": 10, "size": 200})))), None);
        assert_eq!(of(&none, Some(&report(json!({"cost": {"amount": "lots"}})))), None);
        let quota: PromptResponse =
            serde_json::from_value(json!({"stopReason": "end_turn", "_meta": {"quota": {"token_count": {}}}})).unwrap();
        assert_eq!(of(&quota, None), None);
    }
}
