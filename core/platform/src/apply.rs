//! The bulk-apply contract (spec 4.5, DESIGN 9.8): a manifest's documents
//! `{kind, name, spec}` reconciled kind by kind through the API, in process,
//! as the caller. Core applies its five kinds; an extension adds a kind of
//! its own ([`ApplyKind`], from `Extension::apply_kinds`), which core runs
//! after its own without naming it.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::http::Method;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::boxed::BoxFuture;
use crate::http::answer::Answer;

/// One manifest document.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Document {
    /// `Environment`, `Vault`, `Agent`, `Teammate`, `Schedule` or `Webhook`.
    pub kind: String,
    /// The key of the record (a Webhook is keyed by `spec.url`; its name is optional).
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub spec: Map<String, Value>,
}

/// What applying a document did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Created,
    Updated,
    Unchanged,
    /// An inline secret, written again on every apply.
    Upserted,
    Error,
}

/// A result row.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Row {
    pub kind: String,
    pub name: String,
    pub result: Outcome,
    /// The record's id (absent on a dry run's `created`, and on errors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Why the document failed, in the API's words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A created webhook endpoint's signing secret, shown this once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing_secret: Option<String>,
}

impl Row {
    pub fn new(doc: &Document, result: Outcome, id: Option<String>) -> Row {
        Row { kind: doc.kind.clone(), name: doc.name.clone(), result, id, error: None, signing_secret: None }
    }

    pub fn error(doc: &Document, message: impl Into<String>) -> Row {
        Row { error: Some(message.into()), ..Row::new(doc, Outcome::Error, None) }
    }
}

/// The API in process, as the caller of the apply.
pub type Caller = Arc<dyn Fn(Method, String, Option<Value>) -> BoxFuture<'static, Answer> + Send + Sync>;

/// The caller, and what the manifest made so far.
pub struct ApplyCtx {
    pub caller: Caller,
    pub dry_run: bool,
    /// Ids of the documents applied so far, by (kind, name): names resolve
    /// against the manifest first (`None`: made on a dry run, or failed).
    pub made: BTreeMap<(String, String), Option<String>>,
}

impl ApplyCtx {
    pub async fn call(&self, method: Method, path: impl AsRef<str>, body: Option<&Value>) -> Answer {
        (self.caller)(method, path.as_ref().to_owned(), body.cloned()).await
    }
}

/// The enabled extensions' kinds, in the server's slots.
#[derive(Default)]
pub struct ApplyKinds(pub Vec<Arc<dyn ApplyKind>>);

/// The keys of `spec` outside `allowed`, for the refusal before any write.
pub fn unknown_keys(spec: &Map<String, Value>, allowed: &[&str]) -> Vec<String> {
    spec.keys().filter(|k| !allowed.contains(&k.as_str())).cloned().collect()
}

/// Whether every key of `wanted` already has that value in `record`.
pub fn same(record: &Value, wanted: &Map<String, Value>) -> bool {
    wanted.iter().all(|(k, v)| record.get(k).unwrap_or(&Value::Null) == v)
}

/// An existing record: left as it is when it already holds `wanted`, else
/// patched at `{list}/{id}` (not on a dry run). `updated` or `unchanged`.
pub async fn update(
    ctx: &ApplyCtx,
    doc: &Document,
    list: &str,
    record: &Value,
    wanted: Map<String, Value>,
) -> Result<Row, String> {
    let id = record["id"].as_str().map(str::to_owned);
    if same(record, &wanted) {
        return Ok(Row::new(doc, Outcome::Unchanged, id));
    }
    if !ctx.dry_run {
        let path = format!("{list}/{}", id.as_deref().unwrap_or_default());
        let a = ctx.call(Method::PATCH, path, Some(&Value::Object(wanted))).await;
        if !a.ok() {
            return Err(a.message());
        }
    }
    Ok(Row::new(doc, Outcome::Updated, id))
}

/// A kind an extension applies.
pub trait ApplyKind: Send + Sync {
    fn kind(&self) -> &'static str;

    /// Whether a manifest holding this kind needs a full-scope key (checked before any write).
    fn needs_full_scope(&self) -> bool {
        false
    }

    /// Refuses a malformed document before anything is written.
    fn check(&self, doc: &Document) -> Result<(), String>;

    fn apply<'a>(&'a self, ctx: &'a ApplyCtx, doc: &'a Document) -> BoxFuture<'a, Row>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_keys_and_sameness() {
        let spec = json!({"a": 1, "b": null, "zz": true});
        let spec = spec.as_object().unwrap();
        assert_eq!(unknown_keys(spec, &["a", "b"]), ["zz"]);
        assert!(same(&json!({"a": 1, "c": 2}), json!({"a": 1, "b": null}).as_object().unwrap()));
        assert!(!same(&json!({"a": 2}), json!({"a": 1}).as_object().unwrap()));
    }
}
