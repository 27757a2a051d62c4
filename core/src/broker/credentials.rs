//! The bindings as the broker reads them: which hosts of a machine's account
//! are bound, and the header value for one request. The account's bindings
//! are kept a second (another replica's change shows within it; this
//! server's own at once), values are read per request, so a binding changed
//! while a turn runs applies to its next request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use hyper::header::{HeaderName, HeaderValue};
use uuid::Uuid;

use super::model::{Binding, Source};
use super::{rules, store};
use crate::egress::broker::{Attachment, BoxFuture, Credentials};
use crate::state::{AppState, WeakState};
use crate::time_fmt::now_micros;

const BINDINGS_TTL: Duration = Duration::from_secs(1);

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
        self.owners.lock().unwrap_or_else(PoisonError::into_inner).insert(sandbox_id, account);
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
        self.enabled.lock().unwrap_or_else(PoisonError::into_inner).insert(account_id, (Instant::now(), list.clone()));
        list
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
        Box::pin(async move { self.binding(sandbox_id, host).await.is_some() })
    }

    fn attach<'a>(&'a self, sandbox_id: Uuid, host: &'a str) -> BoxFuture<'a, Option<Attachment>> {
        Box::pin(async move {
            let (state, account, binding) = self.binding(sandbox_id, host).await?;
            let (key, value) = resolve(&state, account, &binding, host).await;
            let header = HeaderName::from_bytes(binding.header.as_bytes()).ok()?;
            let value = value.and_then(|v| rules::render(&binding.template, &v)).and_then(|v| {
                let mut value = HeaderValue::from_str(&v).ok()?;
                value.set_sensitive(true);
                Some(value)
            });
            Some(Attachment { service: binding.name, credential_keys: vec![key], header, value })
        })
    }
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
