//! `POST /api/apply` (spec 4.5 "Bulk apply", DESIGN 9.8): a manifest's
//! documents reconciled in the order Environment, Vault, Agent, Teammate,
//! Schedule, then the extensions' kinds (the webhooks extension's Webhook).
//! Each document is read, compared and written through the API in process
//! as the caller, so every rule, refusal and audit row is the API's own;
//! this module adds the manifest's rules: names resolved against the
//! manifest first, unknown keys refused before a write, additive (a missing
//! document deletes nothing), one document's error undoing no other, a dry
//! run that writes nothing.

mod kinds;

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::http::Method;
use serde::Deserialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{Principal, Scope};
use crate::console::Api;
use crate::error::{ApiError, ApiResult};
use crate::http::middleware::ClientIp;
use crate::http::{Data, Json, Query, ok};
use crate::state::AppState;
use acs_platform::apply::{ApplyCtx, ApplyKinds, Document, Row};

/// Documents in one manifest at most.
pub const MAX_DOCUMENTS: usize = 1000;

/// `ApplyRequest`: the manifest's documents, in any order.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyRequest {
    pub documents: Vec<Document>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ApplyQuery {
    /// Report what would happen; write nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// Applies a manifest: one result row per document (and one per inline
/// secret), in the order applied. A document's error fails that document only.
#[utoipa::path(post, path = "/api/apply", operation_id = "applyManifest", tag = "apply", params(ApplyQuery),
    request_body = ApplyRequest,
    responses((status = 200, description = "One row per document", body = Data<Vec<Row>>),
        (status = 403, description = "`insufficient_scope`: a manifest with a Webhook needs a full-scope key", body = crate::error::ErrorBody),
        (status = 422, description = "`validation_failed`: no documents, or more than 1000", body = crate::error::ErrorBody)))]
async fn apply_manifest(
    State(state): State<AppState>,
    p: Principal,
    Extension(api): Extension<Api>,
    ip: Option<Extension<ClientIp>>,
    Query(q): Query<ApplyQuery>,
    Json(req): Json<ApplyRequest>,
) -> ApiResult<Data<Vec<Row>>> {
    if req.documents.is_empty() || req.documents.len() > MAX_DOCUMENTS {
        return Err(ApiError::invalid("documents", "must hold 1 to 1000 documents"));
    }
    let extra = state.get::<ApplyKinds>().map(|k| k.0.clone()).unwrap_or_default();
    // Refused before any write: a kind that needs a full-scope key, asked by another.
    let needs_full = req.documents.iter().any(|d| extra.iter().any(|k| k.kind() == d.kind && k.needs_full_scope()));
    if needs_full && p.scope != Scope::Full {
        return Err(ApiError::insufficient_scope());
    }
    let ip = ip.map(|Extension(ClientIp(ip))| ip).unwrap_or(p.ip);
    let caller = p.clone();
    let ctx = ApplyCtx {
        caller: Arc::new(move |method: Method, path: String, body: Option<Value>| {
            let (api, caller) = (api.clone(), caller.clone());
            Box::pin(async move { api.call(caller, ip, method, &path, body.as_ref()).await })
        }),
        dry_run: q.dry_run,
        made: BTreeMap::new(),
    };
    Ok(ok(run(ctx, req.documents, &extra).await))
}

/// Applies the documents kind by kind, in the manifest's order within a kind.
async fn run(mut ctx: ApplyCtx, docs: Vec<Document>, extra: &[Arc<dyn acs_platform::apply::ApplyKind>]) -> Vec<Row> {
    let mut rows = Vec::new();
    let known = |k: &str| kinds::ORDER.contains(&k) || extra.iter().any(|e| e.kind() == k);
    for doc in docs.iter().filter(|d| !known(&d.kind)) {
        let mut names: Vec<&str> = kinds::ORDER.to_vec();
        names.extend(extra.iter().map(|e| e.kind()));
        rows.push(Row::error(doc, format!("unknown kind {:?}; use one of {}", doc.kind, names.join(", "))));
    }
    for kind in kinds::ORDER {
        for doc in docs.iter().filter(|d| d.kind == kind) {
            let out = kinds::apply(&ctx, doc).await;
            remember(&mut ctx, doc, out.first());
            rows.extend(out);
        }
    }
    for k in extra {
        for doc in docs.iter().filter(|d| d.kind == k.kind()) {
            let row = match k.check(doc) {
                Ok(()) => k.apply(&ctx, doc).await,
                Err(why) => Row::error(doc, why),
            };
            remember(&mut ctx, doc, Some(&row));
            rows.push(row);
        }
    }
    rows
}

/// Notes what a document made, for the names after it; a failed document
/// is not noted, so its name resolves to an existing record, if any.
fn remember(ctx: &mut ApplyCtx, doc: &Document, row: Option<&Row>) {
    if let Some(row) = row.filter(|r| r.result != acs_platform::apply::Outcome::Error) {
        ctx.made.insert((doc.kind.clone(), doc.name.clone()), row.id.clone());
    }
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(apply_manifest))
}
