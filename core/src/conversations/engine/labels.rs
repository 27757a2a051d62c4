//! `_service/labels` from an agent inside a turn (spec 4.1, labels rules):
//! merged into its conversation by the same rules as the labels route, never
//! in the transcript; a stamp that breaks a rule is logged and dropped. What
//! the agent sends is redacted like its output first: a secret of the
//! machine in a key or a value is stored as `[REDACTED]`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::turn::TurnCtx;

pub const METHOD: &str = "_service/labels";

/// The changes a stamp asks for: key -> value, or null to remove; `None`
/// when `labels` is not an object of strings and nulls.
fn changes(params: &Value) -> Option<BTreeMap<String, Option<String>>> {
    params
        .get("labels")?
        .as_object()?
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => Some((k.clone(), Some(s.clone()))),
            Value::Null => Some((k.clone(), None)),
            _ => None,
        })
        .collect()
}

/// Applies one stamp to the turn's conversation.
pub async fn stamp(ctx: &TurnCtx, params: &Value) {
    let Some(changes) = changes(params) else {
        tracing::warn!(conversation = %ctx.conversation_id, "dropped a _service/labels stamp: labels is not a map of strings");
        return;
    };
    let changes = crate::conversations::rules::redact_labels(changes, ctx.transcript.redactor());
    match crate::conversations::merge_labels(&ctx.state, ctx.conversation_id, &changes).await {
        Ok(()) => {
            crate::events::signal::conversations_changed(&ctx.state, ctx.scope.account_id, Some(ctx.sandbox_id)).await
        }
        Err(e) => tracing::warn!(conversation = %ctx.conversation_id, "dropped a _service/labels stamp: {}", e.body()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_stamp_is_a_map_of_strings_and_nulls() {
        let got = changes(&json!({"sessionId": "s", "labels": {"a": "1", "b": null}})).unwrap();
        assert_eq!(got, BTreeMap::from([("a".into(), Some("1".into())), ("b".into(), None)]));
        assert!(changes(&json!({"labels": {"a": 1}})).is_none());
        assert!(changes(&json!({"labels": ["a"]})).is_none());
        assert!(changes(&json!({})).is_none());
    }
}
