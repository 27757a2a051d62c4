//! Core's five kinds: how each document is found, compared and written.

use axum::http::Method;
use serde_json::{Map, Value, json};

use acs_platform::apply::{ApplyCtx, Document, Outcome, Row, same, unknown_keys, update};

/// Core's kinds, in the order they are applied.
pub const ORDER: [&str; 5] = ["Environment", "Vault", "Agent", "Teammate", "Schedule"];

const ENVIRONMENT: &[&str] = &[
    "env_vars",
    "metadata",
    "networking_config",
    "networking_type",
    "packages",
    "repositories",
    "setup_script",
    "setup_timeout_seconds",
    "secrets",
];
const VAULT: &[&str] = &["description", "metadata", "secrets"];
const AGENT: &[&str] = &[
    "allowed_environment_ids",
    "allowed_inference_credential_ids",
    "allowed_vault_ids",
    "command",
    "description",
    "execution_limits",
    "inference_credential_id",
    "mcp_servers",
    "metadata",
    "model",
    "permission_policy",
    "provider",
    "runner",
    "runner_id",
    "runtime",
    "sandbox_mode",
    "session_config",
    "skills",
    "system_prompt",
    "environment",
    "vault",
];
const TEAMMATE: &[&str] = &["environment", "vault"];
const SCHEDULE: &[&str] = &["agent", "cron", "prompt", "enabled", "one_off"];

/// Stands in, on a dry run, for the id of a record the manifest would make.
const TO_BE_MADE: &str = "(to be made)";

pub async fn apply(ctx: &ApplyCtx, doc: &Document) -> Vec<Row> {
    if doc.name.trim().is_empty() {
        return vec![Row::error(doc, "name is required")];
    }
    let allowed = match doc.kind.as_str() {
        "Environment" => ENVIRONMENT,
        "Vault" => VAULT,
        "Agent" => AGENT,
        "Teammate" => TEAMMATE,
        _ => SCHEDULE,
    };
    let unknown = unknown_keys(&doc.spec, allowed);
    if !unknown.is_empty() {
        return vec![Row::error(doc, format!("unknown keys in spec: {}", unknown.join(", ")))];
    }
    let done = match doc.kind.as_str() {
        "Environment" => holder(ctx, doc, "/api/environments").await,
        "Vault" => holder(ctx, doc, "/api/vaults").await,
        "Agent" => agent(ctx, doc).await.map(|r| vec![r]),
        "Teammate" => teammate(ctx, doc).await.map(|r| vec![r]),
        _ => schedule(ctx, doc).await.map(|r| vec![r]),
    };
    done.unwrap_or_else(|why| vec![Row::error(doc, why)])
}

/// The one record named `name` in the list at `path` (an error when several are).
async fn by_name(ctx: &ApplyCtx, path: &str, name: &str) -> Result<Option<Value>, String> {
    let all = ctx.call(Method::GET, path, None).await;
    if !all.ok() {
        return Err(all.message());
    }
    let mut found = all.data().as_array().into_iter().flatten().filter(|r| r["name"].as_str() == Some(name));
    match (found.next(), found.next()) {
        (Some(one), None) => Ok(Some(one.clone())),
        (None, _) => Ok(None),
        (Some(_), Some(_)) => Err(format!("more than one record is named {name:?}")),
    }
}

/// The id `name` refers to: a document of the manifest first, then an existing record.
async fn resolve(ctx: &ApplyCtx, kind: &str, path: &str, name: &str) -> Result<String, String> {
    if let Some(made) = ctx.made.get(&(kind.to_owned(), name.to_owned())) {
        return Ok(made.clone().unwrap_or_else(|| TO_BE_MADE.to_owned()));
    }
    match by_name(ctx, path, name).await? {
        Some(r) => Ok(r["id"].as_str().unwrap_or_default().to_owned()),
        None => Err(format!("no {} named {name:?} in the manifest or the account", kind.to_lowercase())),
    }
}

/// Finds the record named like the document in `list`; leaves it, patches
/// what differs, or creates it (`POST list`).
async fn upsert(ctx: &ApplyCtx, doc: &Document, list: &str, wanted: Map<String, Value>) -> Result<Row, String> {
    match by_name(ctx, list, &doc.name).await? {
        Some(record) => update(ctx, doc, list, &record, wanted).await,
        None if ctx.dry_run => Ok(Row::new(doc, Outcome::Created, None)),
        None => {
            let mut body = wanted;
            body.insert("name".into(), json!(doc.name));
            let a = ctx.call(Method::POST, list, Some(&Value::Object(body))).await;
            match a.data()["id"].as_str().filter(|_| a.ok()) {
                Some(id) => Ok(Row::new(doc, Outcome::Created, Some(id.to_owned()))),
                None => Err(a.message()),
            }
        }
    }
}

/// An environment or a vault, then its inline secrets (written every time: `upserted`).
async fn holder(ctx: &ApplyCtx, doc: &Document, list: &str) -> Result<Vec<Row>, String> {
    let mut wanted = doc.spec.clone();
    let secrets = match wanted.remove("secrets") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => return Err("secrets must be a map of name to value".into()),
    };
    if let Some((k, _)) = secrets.iter().find(|(_, v)| !v.is_string()) {
        return Err(format!("secret {k:?} must be a string"));
    }
    let row = upsert(ctx, doc, list, wanted).await?;
    let mut rows = vec![row.clone()];
    for (key, value) in &secrets {
        let named = Document { name: format!("{}/secrets/{key}", doc.name), ..doc.clone() };
        if ctx.dry_run {
            rows.push(Row::new(&named, Outcome::Upserted, None));
            continue;
        }
        let path = format!("{list}/{}/secrets/{}", row.id.as_deref().unwrap_or_default(), crate::console::seg(key));
        let a = ctx.call(Method::PUT, path, Some(&json!({"value": value}))).await;
        rows.push(if a.ok() { Row::new(&named, Outcome::Upserted, None) } else { Row::error(&named, a.message()) });
    }
    Ok(rows)
}

/// `environment` and `vault` by name become `environment_id` and `vault_id`
/// (null when `whole` and absent: a teammate document is the whole teammate).
async fn bindings(ctx: &ApplyCtx, spec: &mut Map<String, Value>, whole: bool) -> Result<(), String> {
    for (key, kind, list) in [("environment", "Environment", "/api/environments"), ("vault", "Vault", "/api/vaults")] {
        let id = match spec.remove(key) {
            Some(Value::String(name)) => json!(resolve(ctx, kind, list, &name).await?),
            Some(Value::Null) => Value::Null,
            None if whole => Value::Null,
            None => continue,
            Some(_) => return Err(format!("{key} must name a {}", kind.to_lowercase())),
        };
        spec.insert(format!("{key}_id"), id);
    }
    Ok(())
}

async fn agent(ctx: &ApplyCtx, doc: &Document) -> Result<Row, String> {
    let mut wanted = doc.spec.clone();
    bindings(ctx, &mut wanted, false).await?;
    // A runner is not a kind of manifest: `runner` names one of the account's.
    if let Some(runner) = wanted.remove("runner") {
        let id = match runner {
            Value::String(name) => json!(resolve(ctx, "Runner", "/api/runners", &name).await?),
            Value::Null => Value::Null,
            _ => return Err("runner must name a runner".into()),
        };
        wanted.insert("runner_id".into(), id);
    }
    upsert(ctx, doc, "/api/agents", wanted).await
}

/// The whole teammate: `name` is its agent's.
async fn teammate(ctx: &ApplyCtx, doc: &Document) -> Result<Row, String> {
    let agent = resolve(ctx, "Agent", "/api/agents", &doc.name).await?;
    let mut wanted = doc.spec.clone();
    bindings(ctx, &mut wanted, true).await?;
    let team = ctx.call(Method::GET, "/api/team", None).await;
    if !team.ok() {
        return Err(team.message());
    }
    let current =
        team.data().as_array().into_iter().flatten().find(|t| t["agent_id"].as_str() == Some(&agent)).cloned();
    let outcome = match &current {
        Some(t) if same(t, &wanted) => return Ok(Row::new(doc, Outcome::Unchanged, Some(agent))),
        Some(_) => Outcome::Updated,
        None => Outcome::Created,
    };
    if !ctx.dry_run {
        let a = ctx.call(Method::PUT, format!("/api/team/{agent}"), Some(&Value::Object(wanted))).await;
        if !a.ok() {
            return Err(a.message());
        }
    }
    Ok(Row::new(doc, outcome, (agent != TO_BE_MADE).then_some(agent)))
}

async fn schedule(ctx: &ApplyCtx, doc: &Document) -> Result<Row, String> {
    let mut wanted = doc.spec.clone();
    let agent = match wanted.remove("agent") {
        Some(Value::String(name)) => resolve(ctx, "Agent", "/api/agents", &name).await?,
        _ => return Err("spec.agent must name the teammate's agent".into()),
    };
    if agent == TO_BE_MADE {
        // A dry run whose agent the manifest would make: nothing to compare with yet.
        return Ok(Row::new(doc, Outcome::Created, None));
    }
    upsert(ctx, doc, &format!("/api/team/{agent}/schedules"), wanted).await
}
