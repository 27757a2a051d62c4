//! Inference resolution (spec 2.2 `inference`, 4.3): which model-provider
//! credential a turn runs on. At turn start the conversation's launch
//! selection, else the agent's set, else the account's default set is the
//! account's source; a machine environment that already holds the variable
//! the program reads comes next; the deployment's platform credentials
//! (`[inference] platform`) last. The credential reaches the agent only as
//! the environment variable its program reads, set when the agent process
//! starts (docs/credits.md).

pub mod rules;

use std::collections::{BTreeMap, BTreeSet};

use axum::http::StatusCode;
use sqlx::Row;
use uuid::Uuid;

use self::rules::{Inference, Source};
use crate::agents::Agent;
use crate::agents::credentials::{credential_set_allowed, resolve_credential_set};
use crate::config::PlatformCredentials;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// A turn's resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub inference: Inference,
    /// The variable the agent program reads and its value, when the service
    /// sets one (a credential-set or platform credential).
    pub credential: Option<(String, String)>,
    /// Why the turn has no credential (scope `missing`).
    pub missing: Option<String>,
}

impl Resolved {
    /// What the agent process gets on top of the machine's environment.
    pub fn env(&self) -> BTreeMap<String, String> {
        self.credential.iter().cloned().collect()
    }

    /// Tells apart the credentials an agent process may have been started
    /// with (a digest, never the value).
    pub fn fingerprint(&self) -> String {
        match &self.credential {
            Some((var, value)) => format!("{var}:{}", crate::auth::token::digest(value)),
            None => String::new(),
        }
    }
}

fn platform_value<'a>(p: &'a PlatformCredentials, kind: &str) -> Option<&'a str> {
    let v = match kind {
        "anthropic_api_key" => &p.anthropic_api_key,
        "claude_code_oauth_token" => &p.claude_code_oauth_token,
        "openai_api_key" => &p.openai_api_key,
        "gemini_api_key" => &p.gemini_api_key,
        _ => return None,
    };
    v.as_deref().filter(|v| !v.trim().is_empty())
}

/// What resolution reads of the conversation a turn runs in.
#[derive(Debug, Clone, Copy)]
pub struct Holder {
    pub account_id: Uuid,
    pub sandbox_id: Option<Uuid>,
    /// The conversation's own credential set choice.
    pub inference_credential_id: Option<Uuid>,
}

/// The names of the variables the conversation's machine holds (its
/// environment's variables and secrets, its vault's secrets).
async fn machine_vars(state: &AppState, conv: &Holder) -> ApiResult<BTreeSet<String>> {
    let Some(row) = (match conv.sandbox_id {
        Some(id) => crate::sandboxes::store::get(&state.db, id).await?,
        None => None,
    }) else {
        return Ok(BTreeSet::new());
    };
    let env = match row.environment_id {
        Some(e) => Some(crate::environments::get_environment(state, row.account_id, e).await?),
        None => None,
    };
    let material = crate::sandboxes::service::material(state, &row, env.as_ref()).await?;
    Ok(material.env.into_keys().collect())
}

/// Resolves the credential of a turn about to start on `conv` with `agent`.
pub async fn resolve(state: &AppState, conv: &Holder, agent: &Agent) -> ApiResult<Resolved> {
    let runtime = agent.spec.runtime;
    let kinds = rules::kinds(runtime);
    let set_id = match resolve_credential_set(conv.inference_credential_id, agent.spec.inference_credential_id, None) {
        Some(id) => Some(id),
        None if !kinds.is_empty() => crate::credentials::default_set_id(&state.db.pool, conv.account_id).await?,
        None => None,
    };
    if runtime == crate::agents::Runtime::Codex
        && let Some(set) = set_id
        && let Some(grant_id) = named_grant(state, set).await?
    {
        return on_grant(state, conv.account_id, grant_id).await;
    }
    let mut held = BTreeMap::new();
    if let Some(set) = set_id {
        for kind in kinds {
            let stored = crate::credentials::credential_value(state, conv.account_id, set, kind).await?;
            let value = match stored {
                Some(v) => Some(v),
                // A source an extension supplies (a linked subscription, say).
                None => state.extensions.credential(state, conv.account_id, set, kind).await.map_err(|error| {
                    tracing::error!(%error, provider = kind, "an extension's credential source failed");
                    ApiError::internal()
                })?,
            };
            if let Some(v) = value {
                held.insert(*kind, v);
            }
        }
    }
    // The machine's variables matter only when the set holds nothing usable.
    let vars = if held.is_empty() && !kinds.is_empty() { machine_vars(state, conv).await? } else { BTreeSet::new() };
    let platform = &state.config().inference.platform;
    let source = rules::decide(
        runtime,
        |k| held.contains_key(k),
        |v| vars.contains(v),
        |k| platform_value(platform, k).is_some(),
    );
    let credential = match source {
        Source::Set(k) => held.remove(k).map(|v| (k, v)),
        Source::Platform(k) => platform_value(platform, k).map(|v| (k, v.to_owned())),
        _ => None,
    }
    .and_then(|(k, v)| rules::env_var(k).map(|var| (var.to_owned(), v)));
    let missing = (source == Source::Missing).then(|| rules::missing_reason(runtime));
    Ok(Resolved { inference: source.inference(), credential, missing })
}

/// At launch: a codex agent whose set names a subscription starts only when
/// the subscription can be used now (spec 4.3: launch and turn answer 409
/// `openai_grant_unusable`).
pub async fn check_grant(state: &AppState, account_id: Uuid, agent: &Agent, launch_set: Option<Uuid>) -> ApiResult<()> {
    if agent.spec.runtime != crate::agents::Runtime::Codex {
        return Ok(());
    }
    let set = match resolve_credential_set(launch_set, agent.spec.inference_credential_id, None) {
        Some(id) => Some(id),
        None => crate::credentials::default_set_id(&state.db.pool, account_id).await?,
    };
    if let Some(set) = set
        && let Some(grant_id) = named_grant(state, set).await?
    {
        on_grant(state, account_id, grant_id).await?;
    }
    Ok(())
}

/// What a codex machine holds as its key while it runs on a subscription:
/// the broker replaces it with the subscription's token on the way out.
pub const GRANT_PLACEHOLDER: &str = "acs-subscription-attached-by-the-broker";

/// The subscription a set names, if any.
async fn named_grant(state: &AppState, set: Uuid) -> ApiResult<Option<Uuid>> {
    let row = sqlx::query("SELECT openai_grant_id FROM inference_credential_sets WHERE id = $1")
        .bind(set.to_string())
        .fetch_optional(&state.db.pool)
        .await?;
    Ok(match row {
        Some(r) => crate::db::RowExt::opt_uuid(&r, "openai_grant_id")?,
        None => None,
    })
}

/// A codex turn on a set that names a subscription runs on it or not at all
/// (spec 2.5: nothing falls back to a key, another subscription or the platform).
async fn on_grant(state: &AppState, account_id: Uuid, grant_id: Uuid) -> ApiResult<Resolved> {
    use crate::extension::GrantUse;
    let source = crate::credentials::openai_grants(state);
    let failed = |e: crate::boxed::BoxError| {
        tracing::error!(grant = %grant_id, "the subscription was not read: {e}");
        ApiError::internal()
    };
    let summary = match &source {
        Some(s) => s.grant(state, account_id, grant_id).await.map_err(failed)?,
        None => None,
    };
    let verdict = match (&source, &summary) {
        (Some(_), None) | (None, _) => GrantUse::Unusable { reason: "not_found", until: None },
        _ if !state.feature_enabled(crate::features::BROKERAGE) => {
            GrantUse::Unusable { reason: "broker_required", until: None }
        }
        (Some(s), Some(_)) => s.usable(state, account_id, grant_id).await.map_err(failed)?,
    };
    match verdict {
        GrantUse::Usable => Ok(Resolved {
            inference: Inference {
                origin: rules::Origin::Own,
                scope: rules::Scope::Grant,
                openai_grant_id: Some(grant_id),
            },
            credential: rules::env_var("openai_api_key").map(|var| (var.to_owned(), GRANT_PLACEHOLDER.to_owned())),
            missing: None,
        }),
        GrantUse::Unusable { reason, until } => Err(grant_unusable(grant_id, summary, reason, until)),
    }
}

fn grant_unusable(
    grant_id: Uuid,
    grant: Option<crate::extension::GrantSummary>,
    reason: &str,
    until: Option<time::OffsetDateTime>,
) -> ApiError {
    let until = until.and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok());
    ApiError::conflict(
        "openai_grant_unusable",
        format!("The subscription this credential set names cannot be used now ({reason})."),
    )
    .with("grant_id", grant_id.to_string())
    .with("grant", serde_json::to_value(grant).unwrap_or_default())
    .with("reason", reason)
    .with("until", until.map_or(serde_json::Value::Null, serde_json::Value::String))
}

/// Checks a create body's `inference_credential_id` (spec 4.1 create rule
/// 3): the caller's own set (404 `inference_credential_not_found`), allowed
/// by the agent (422 `inference_credential_not_allowed`), holding a
/// credential the agent's runtime reads (422 `inference_credential_unusable`).
pub async fn check_selection(state: &AppState, account_id: Uuid, agent: &Agent, set_id: Uuid) -> ApiResult<()> {
    let found = sqlx::query("SELECT id FROM inference_credential_sets WHERE id = $1 AND account_id = $2")
        .bind(set_id.to_string())
        .bind(account_id.to_string())
        .fetch_optional(&state.db.pool)
        .await?;
    if found.is_none() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "inference_credential_not_found",
            "No inference credential set of this account has this id.",
        ));
    }
    let spec = &agent.spec;
    if !credential_set_allowed(spec.allowed_inference_credential_ids.as_deref(), spec.inference_credential_id, set_id) {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "inference_credential_not_allowed",
            "The agent's allowed_inference_credential_ids does not permit this credential set.",
        ));
    }
    let kinds = rules::kinds(spec.runtime);
    if kinds.is_empty() {
        return Ok(());
    }
    let held = sqlx::query("SELECT provider FROM inference_credentials WHERE set_id = $1 AND account_id = $2")
        .bind(set_id.to_string())
        .bind(account_id.to_string())
        .fetch_all(&state.db.pool)
        .await?;
    let held: Vec<String> = held.iter().map(|r| r.try_get("provider")).collect::<Result<_, _>>()?;
    if kinds.iter().any(|k| held.iter().any(|h| h == k)) {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "inference_credential_unusable",
        format!(
            "The credential set holds no credential runtime {} reads ({}).",
            spec.runtime.as_str(),
            kinds.join(" or ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_values_that_are_blank_count_as_unset() {
        let p = PlatformCredentials {
            anthropic_api_key: Some("  ".into()),
            openai_api_key: Some("sk".into()),
            ..Default::default()
        };
        assert_eq!(platform_value(&p, "anthropic_api_key"), None);
        assert_eq!(platform_value(&p, "openai_api_key"), Some("sk"));
        assert_eq!(platform_value(&p, "gemini_api_key"), None);
    }

    #[test]
    fn the_fingerprint_never_shows_the_value() {
        let r = Resolved {
            inference: Source::Set("anthropic_api_key").inference(),
            credential: Some(("ANTHROPIC_API_KEY".into(), "sk-ant-secret".into())),
            missing: None,
        };
        assert!(r.fingerprint().starts_with("ANTHROPIC_API_KEY:"));
        assert!(!r.fingerprint().contains("secret"));
        assert_eq!(r.env().get("ANTHROPIC_API_KEY").map(String::as_str), Some("sk-ant-secret"));
    }
}
