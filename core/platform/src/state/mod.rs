//! Shared application state handed to every handler and worker. It sits
//! below every module that takes it: its fields are of lower layers or of
//! this module, and the services above keep their own runtime state in
//! [`Slots`] (docs/architecture.md).

pub mod contributions;
pub mod flags;
pub mod hooks;
pub mod request_ids;

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, RwLock};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub use contributions::Contributions;
pub use flags::Flags;
pub use hooks::Hooks;
pub use request_ids::RequestIds;

use crate::cache::TtlCache;
use crate::config::{Config, Loaded};
use crate::db::Db;
use crate::journal::bus::Bus;
use crate::mail::Mailer;
use crate::metrics::Metrics;
use crate::principal::{Identity, ResolvedKey};
use crate::ratelimit::RateLimiter;
use crate::secrets::Crypto;

#[derive(Clone)]
pub struct AppState(Arc<Inner>);

pub struct Inner {
    pub loaded: Loaded,
    pub db: Db,
    pub limiter: RateLimiter,
    /// Resolved API keys by digest (see `auth.cache_seconds`).
    pub key_cache: TtlCache<String, ResolvedKey>,
    /// Account identity by account id (see `auth.cache_seconds`).
    pub account_cache: TtlCache<uuid::Uuid, Identity>,
    /// Encryption of secret values at rest.
    pub crypto: Crypto,
    pub mailer: Mailer,
    pub metrics: Metrics,
    /// Runtime flags: `features.*` with the operators' stored choices over them.
    pub features: Arc<Flags>,
    /// Cancelled when the server shuts down; workers watch it.
    pub shutdown: CancellationToken,
    /// Outbound HTTP client (no redirects followed).
    pub http: reqwest::Client,
    /// Makes the `x-request-id` of requests that bring none.
    pub request_ids: RequestIds,
    /// State that extensions keep per server, one value per type.
    pub slots: Slots,
    /// Live fan-out of appended events (and, on PostgreSQL, other replicas').
    pub events: Bus,
    /// What runs inside every event append's transaction (hooks.rs).
    pub event_hooks: Hooks,
    /// The sandbox queue's doorbell.
    pub queue: Doorbell,
    /// Hooks and answer fields the extensions registered (extension.rs).
    pub extensions: Contributions,
}

/// Wakes a worker: the sandbox queue's, when capacity frees or a request
/// is queued or cancelled.
#[derive(Default)]
pub struct Doorbell(Notify);

impl Doorbell {
    pub fn wake(&self) {
        self.0.notify_one();
    }

    pub async fn notified(&self) {
        self.0.notified().await
    }
}

/// Values keyed by their type; an extension's `init` state is kept here
/// (statics would be shared by every server in one process).
#[derive(Default)]
pub struct Slots(RwLock<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>);

/// A handle on the state that does not keep it alive: for what the state
/// itself holds (a machine's broker), so no cycle outlives the server.
#[derive(Clone)]
pub struct WeakState(std::sync::Weak<Inner>);

impl WeakState {
    pub fn upgrade(&self) -> Option<AppState> {
        self.0.upgrade().map(AppState)
    }
}

impl AppState {
    pub fn new(inner: Inner) -> Self {
        AppState(Arc::new(inner))
    }

    pub fn downgrade(&self) -> WeakState {
        WeakState(Arc::downgrade(&self.0))
    }

    pub fn config(&self) -> &Config {
        &self.loaded.config
    }

    pub fn feature_enabled(&self, name: &str) -> bool {
        self.features.enabled(name)
    }

    /// The value of type `T`, put now by `make` when there is none.
    pub fn get_or_put<T: Any + Send + Sync>(&self, make: impl FnOnce() -> T) -> Arc<T> {
        if let Some(value) = self.get::<T>() {
            return value;
        }
        let mut m = self.slots.0.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let value = m.entry(TypeId::of::<T>()).or_insert_with(|| Arc::new(make()));
        value.clone().downcast::<T>().expect("slots are keyed by their type")
    }

    /// Keeps a value under its own concrete type (an extension's `init` state).
    pub fn put_any(&self, value: Arc<dyn Any + Send + Sync>) {
        let key = (*value).type_id();
        if let Ok(mut m) = self.slots.0.write() {
            m.insert(key, value);
        }
    }

    /// Drops the value of type `T`: at shutdown, one that holds the state
    /// itself (the in-process API's router), so the cycle breaks.
    pub fn remove<T: Any + Send + Sync>(&self) {
        if let Ok(mut m) = self.slots.0.write() {
            m.remove(&TypeId::of::<T>());
        }
    }

    pub fn get<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let m = self.slots.0.read().ok()?;
        m.get(&TypeId::of::<T>()).cloned().and_then(|v| v.downcast::<T>().ok())
    }
}

impl Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}
