//! The `Webhook` kind of a manifest (spec 4.5): keyed by `spec.url`, so a
//! changed URL makes a second endpoint and the first keeps delivering until
//! it is deleted. A created endpoint's signing secret is in its row, once.
//! Written through the API in process, as the caller (a full-scope key).

use axum::http::Method;
use serde_json::{Value, json};

use acs_platform::apply::{ApplyCtx, ApplyKind, Document, Outcome, Row, unknown_keys, update};
use acs_platform::boxed::BoxFuture;

const KEYS: &[&str] = &["url", "event_types", "description"];

pub(crate) struct WebhookKind;

impl ApplyKind for WebhookKind {
    fn kind(&self) -> &'static str {
        "Webhook"
    }

    fn needs_full_scope(&self) -> bool {
        true
    }

    fn check(&self, doc: &Document) -> Result<(), String> {
        let unknown = unknown_keys(&doc.spec, KEYS);
        if !unknown.is_empty() {
            return Err(format!("unknown keys in spec: {}", unknown.join(", ")));
        }
        match doc.spec.get("url") {
            Some(Value::String(u)) if !u.trim().is_empty() => Ok(()),
            _ => Err("spec.url is required".into()),
        }
    }

    fn apply<'a>(&'a self, ctx: &'a ApplyCtx, doc: &'a Document) -> BoxFuture<'a, Row> {
        Box::pin(async move { apply(ctx, doc).await.unwrap_or_else(|why| Row::error(doc, why)) })
    }
}

async fn apply(ctx: &ApplyCtx, doc: &Document) -> Result<Row, String> {
    let url = doc.spec.get("url").and_then(Value::as_str).unwrap_or_default();
    let all = ctx.call(Method::GET, "/api/webhooks", None).await;
    if !all.ok() {
        return Err(all.message());
    }
    let current = all.data().as_array().into_iter().flatten().find(|w| w["url"].as_str() == Some(url)).cloned();
    let mut wanted = doc.spec.clone();
    match current {
        Some(endpoint) => {
            wanted.remove("url");
            update(ctx, doc, "/api/webhooks", &endpoint, wanted).await
        }
        None if ctx.dry_run => Ok(Row::new(doc, Outcome::Created, None)),
        None => {
            let a = ctx.call(Method::POST, "/api/webhooks", Some(&json!(wanted))).await;
            if !a.ok() {
                return Err(a.message());
            }
            let mut row = Row::new(doc, Outcome::Created, a.data()["id"].as_str().map(str::to_owned));
            row.signing_secret = a.data()["secret"].as_str().map(str::to_owned);
            Ok(row)
        }
    }
}
