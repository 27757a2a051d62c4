//! Code that acts on appended events without the event log knowing it: a
//! hook writes what must commit with the events (a webhook's deliveries, an
//! extension's own rows) inside the appending transaction, and may ask to be
//! called once that transaction has committed (to wake its worker). The
//! server assembly registers the hooks (core's own and the enabled
//! extensions'); the event log calls each in registration order.

use std::sync::Arc;

use sqlx::{Any, Transaction};

use super::AppState;
use crate::journal::Event;
use futures::future::BoxFuture;

pub trait OnAppend: Send + Sync + 'static {
    /// Inside the transaction that writes `events` (ids assigned, in id
    /// order per conversation). An error rolls the whole append back.
    /// Returns whether [`OnAppend::committed`] should run.
    fn appended<'a>(
        &'a self,
        tx: &'a mut Transaction<'static, Any>,
        events: &'a [Event],
    ) -> BoxFuture<'a, Result<bool, sqlx::Error>>;

    /// After the append committed, when `appended` asked for it.
    fn committed(&self, _app: &AppState) {}
}

/// The hooks of one server, in the order they run.
#[derive(Default, Clone)]
pub struct Hooks(Vec<Arc<dyn OnAppend>>);

impl Hooks {
    pub fn new(hooks: Vec<Arc<dyn OnAppend>>) -> Self {
        Hooks(hooks)
    }

    /// Runs every hook in `tx`; returns the ones to call after the commit.
    pub(crate) async fn appended(
        &self,
        tx: &mut Transaction<'static, Any>,
        events: &[Event],
    ) -> Result<Vec<Arc<dyn OnAppend>>, sqlx::Error> {
        let mut after = Vec::new();
        for hook in &self.0 {
            if hook.appended(tx, events).await? {
                after.push(hook.clone());
            }
        }
        Ok(after)
    }
}
