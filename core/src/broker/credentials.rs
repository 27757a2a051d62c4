//! The bindings as the broker reads them: which hosts of a machine's account
//! are bound, and the header value for one request. The account's bindings
//! are kept a second (another replica's change shows within it; this
//! server's own at once), values are read per request, so a binding changed
//! while a turn runs applies to its next request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use hyper::header::{HeaderName, HeaderValue};
use sqlx::Row;
use uuid::Uuid;

use super::model::{Binding, Source};
use super::{rules, store};
use crate::egress::broker::{Attachment, BoxFuture, Credentials};
use crate::extension::GrantSource;
use crate::state::{AppState, WeakState};
use crate::time_fmt::now_micros;

const BINDINGS_TTL: Duration = Duration::from_secs(1);
/// Entries kept per cache before it starts over (machines and accounts come and go).
const MAX_CACHED: usize = 100_000;

type Cached = (Instant, Arc<Vec<Binding>>);

pub struct Bindings {
    state: WeakState,
    /// Machine -> its account (never changes).
    owners: Mutex<HashMap<Uuid, Uuid>>,
    /// Account -> its enabled bindings, by name, and when they were read.
    enabled: Mutex<HashMap<Uuid, Cached>>,
}

/// This server's bindings changed for `account_id`: read them again.
pub fn changed(state: &AppState, account_id: Uuid) {
    if let Some(bindings) = state.get::<Bindings>() {
        bindings.enabled.lock().unwrap_or_else(PoisonError::into_inner).remove(&account_id);
    }
}

impl Bindings {
    pub fn new(state: &AppState) -> Bindings {
        Bindings { state: state.downgrade(), owners: Mutex::default(), enabled: Mutex::default() }
    }

    async fn account_of(&self, state: &AppState, sandbox_id: Uuid) -> Option<Uuid> {
        if let Some(account) = self.owners.lock().unwrap_or_else(PoisonError::into_inner).get(&sandbox_id) {
            return Some(*account);
        }
        let row = sqlx::query("SELECT account_id FROM sandboxes WHERE id = $1")
            .bind(sandbox_id.to_string())
            .fetch_optional(&state.db.pool)
            .await;
        let account = match row {
            Ok(Some(row)) => crate::db::RowExt::uuid(&row, "account_id").ok()?,
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!(sandbox = %sandbox_id, "broker: the machine's account was not read: {e}");
                return None;
            }
        };
        let mut owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        if owners.len() >= MAX_CACHED {
            owners.clear();
        }
        owners.insert(sandbox_id, account);
        Some(account)
    }

    /// The account's enabled bindings.
    pub async fn enabled(&self, state: &AppState, account_id: Uuid) -> Arc<Vec<Binding>> {
        if let Some((at, list)) = self.enabled.lock().unwrap_or_else(PoisonError::into_inner).get(&account_id)
            && at.elapsed() < BINDINGS_TTL
        {
            return list.clone();
        }
        let list = match store::list(&state.db, account_id).await {
            Ok(all) => Arc::new(all.into_iter().filter(|b| b.enabled).collect::<Vec<_>>()),
            Err(e) => {
                // Unknown bindings attach nothing: a request then goes out as the machine sent it.
                tracing::warn!(account = %account_id, "broker: bindings not read: {e}");
                return Arc::new(Vec::new());
            }
        };
        let mut enabled = self.enabled.lock().unwrap_or_else(PoisonError::into_inner);
        if enabled.len() >= MAX_CACHED {
            enabled.retain(|_, (at, _)| at.elapsed() < BINDINGS_TTL);
        }
        enabled.insert(account_id, (Instant::now(), list.clone()));
        list
    }

    /// The subscription a machine's codex runs on: the grant of the newest
    /// turn on it that ran on one, when `host` is one of its vendor's API hosts.
    async fn grant(&self, state: &AppState, sandbox_id: Uuid, host: &str) -> Option<(Uuid, Arc<dyn GrantSource>)> {
        let source = crate::credentials::openai_grants(state)?;
        if !source.hosts(state).iter().any(|p| crate::egress::host_matches(p, host)) {
            return None;
        }
        let row = sqlx::query(
            "SELECT t.inference FROM turns t JOIN conversations c ON c.id = t.conversation_id \
             WHERE c.sandbox_id = $1 AND t.inference LIKE '%\"scope\":\"grant\"%' ORDER BY t.inserted_at DESC LIMIT 1",
        )
        .bind(sandbox_id.to_string())
        .fetch_optional(&state.db.pool)
        .await;
        let inference: Option<String> = match row {
            Ok(Some(r)) => r.try_get("inference").ok()?,
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!(sandbox = %sandbox_id, "broker: the machine's subscription was not read: {e}");
                return None;
            }
        };
        // Read as plain JSON: the broker sits below inference resolution (docs/architecture.md).
        let inference: serde_json::Value = serde_json::from_str(&inference?).ok()?;
        let grant_id = inference.get("openai_grant_id")?.as_str()?.parse().ok()?;
        Some((grant_id, source))
    }

    async fn binding(&self, sandbox_id: Uuid, host: &str) -> Option<(AppState, Uuid, Binding)> {
        let state = self.state.upgrade()?;
        let account = self.account_of(&state, sandbox_id).await?;
        let list = self.enabled(&state, account).await;
        let found = rules::best(list.iter().map(|b| (b.host.as_str(), b)), host).cloned()?;
        Some((state, account, found))
    }
}

impl Credentials for Bindings {
    fn binds<'a>(&'a self, sandbox_id: Uuid, host: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            if let Some(state) = self.state.upgrade()
                && self.grant(&state, sandbox_id, host).await.is_some()
            {
                return true;
            }
            self.binding(sandbox_id, host).await.is_some()
        })
    }

    fn attach<'a>(&'a self, sandbox_id: Uuid, host: &'a str) -> BoxFuture<'a, Option<Attachment>> {
        Box::pin(async move {
            // A machine running on a subscription gets its token at the vendor's API hosts,
            // over whatever a binding says there.
            if let Some(state) = self.state.upgrade()
                && let Some((grant_id, source)) = self.grant(&state, sandbox_id, host).await
            {
                return self.grant_attachment(&state, sandbox_id, grant_id, source.as_ref()).await;
            }
            let (state, account, binding) = self.binding(sandbox_id, host).await?;
            let (key, value) = resolve(&state, account, &binding, host).await;
            let header = HeaderName::from_bytes(binding.header.as_bytes()).ok()?;
            let value = value.and_then(|v| rules::render(&binding.template, &v)).and_then(|v| sensitive(&v));
            Some(Attachment { service: binding.name, credential_keys: vec![key], header, value })
        })
    }
}

impl Bindings {
    async fn grant_attachment(
        &self,
        state: &AppState,
        sandbox_id: Uuid,
        grant_id: Uuid,
        source: &dyn GrantSource,
    ) -> Option<Attachment> {
        let account = self.account_of(state, sandbox_id).await?;
        let got = match source.attach(state, account, grant_id).await {
            Ok(got) => got,
            Err(e) => {
                tracing::warn!(grant = %grant_id, "broker: the subscription's token was not read: {e}");
                return Some(Attachment {
                    service: format!("{}_subscription", source.vendor()),
                    credential_keys: Vec::new(),
                    header: hyper::header::AUTHORIZATION,
                    value: None,
                });
            }
        };
        let header = HeaderName::from_bytes(got.header.as_bytes()).ok()?;
        let value = got.value.and_then(|v| sensitive(&v));
        Some(Attachment {
            service: format!("{}_subscription", source.vendor()),
            credential_keys: vec![got.key],
            header,
            value,
        })
    }
}

/// A header value marked sensitive (never printed by hyper, never indexed by HPACK).
fn sensitive(text: &str) -> Option<HeaderValue> {
    let mut value = HeaderValue::from_str(text).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// The source key the record names, and the value when there is one now.
async fn resolve(state: &AppState, account: Uuid, binding: &Binding, host: &str) -> (String, Option<String>) {
    let read = match &binding.source {
        Source::Vault { vault_id, key } => (
            key.clone(),
            crate::vaults::secrets::live_secret_value(state, account, *vault_id, key, now_micros())
                .await
                .map_err(|e| e.to_string()),
        ),
        Source::Environment { environment_id, key } => (
            key.clone(),
            crate::environments::secrets::secret_value(state, account, *environment_id, key)
                .await
                .map_err(|e| e.to_string()),
        ),
        Source::External { kind, id } => {
            let Some(source) = state.extensions.binding_sources.iter().find(|s| s.key() == kind) else {
                return (kind.clone(), None);
            };
            match source.value(state, account, *id).await {
                // A value may go only where its source allows, whatever the binding names.
                Ok(Some(v)) if v.hosts.is_empty() || v.hosts.iter().any(|p| crate::egress::host_matches(p, host)) => {
                    (v.key, Ok(Some(v.value)))
                }
                Ok(Some(v)) => (v.key, Ok(None)),
                Ok(None) => (kind.clone(), Ok(None)),
                Err(e) => (kind.clone(), Err(e.to_string())),
            }
        }
    };
    match read {
        (key, Ok(value)) => (key, value),
        (key, Err(e)) => {
            tracing::warn!(binding = %binding.name, "broker: the bound value was not read: {e}");
            (key, None)
        }
    }
}
