//! Live fan-out of appended events. Every event written on this server is
//! published to an in-process broadcast that streams subscribe to. On
//! PostgreSQL, each append also sends `NOTIFY acs_events '<server>:<id>'`,
//! and every server listens: an event written on another replica is read
//! back by id and published here too, so a stream on any replica sees every
//! event. A subscriber that falls behind loses live events (the broadcast is
//! bounded); streams recover them from the log by id.

use std::sync::Arc;

use tokio::sync::broadcast;
use uuid::Uuid;

use super::{COLUMNS, Event, from_row};
use crate::db::{Backend, Db};
use crate::state::AppState;

pub const CHANNEL: &str = "acs_events";
const CAPACITY: usize = 4096;

pub struct Bus {
    tx: broadcast::Sender<Arc<Event>>,
    /// Tells this server's own notifications apart from other replicas'.
    server: Uuid,
}

impl Default for Bus {
    fn default() -> Self {
        Bus { tx: broadcast::channel(CAPACITY).0, server: Uuid::new_v4() }
    }
}

impl Bus {
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }

    pub(crate) fn publish(&self, event: Event) {
        // No subscriber is fine: nobody is watching.
        let _ = self.tx.send(Arc::new(event));
    }

    /// Tells other replicas about an event written here (PostgreSQL only).
    pub(crate) async fn notify(&self, db: &Db, id: i64) -> Result<(), sqlx::Error> {
        if db.backend == Backend::Postgres {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(CHANNEL)
                .bind(format!("{}:{id}", self.server))
                .execute(&db.pool)
                .await?;
        }
        Ok(())
    }
}

/// Which event a notification announces, unless this server sent it.
pub fn foreign_event(payload: &str, server: Uuid) -> Option<i64> {
    let (from, id) = payload.split_once(':')?;
    if from.parse::<Uuid>().ok()? == server {
        return None;
    }
    id.parse().ok()
}

/// On PostgreSQL: relays other replicas' events into this server's bus
/// until shutdown. Reconnects after a lost connection.
pub async fn relay(state: AppState) {
    if state.db.backend != Backend::Postgres {
        return;
    }
    let url = state.config().database.url.clone();
    loop {
        let mut listener = match sqlx::postgres::PgListener::connect(&url).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!("event relay: cannot connect: {e}");
                tokio::select! {
                    _ = state.shutdown.cancelled() => return,
                    _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => continue,
                }
            }
        };
        if let Err(e) = listener.listen(CHANNEL).await {
            tracing::warn!("event relay: LISTEN failed: {e}");
            continue;
        }
        loop {
            let note = tokio::select! {
                _ = state.shutdown.cancelled() => return,
                note = listener.recv() => note,
            };
            let Ok(note) = note else { break };
            let Some(id) = foreign_event(note.payload(), state.events.server) else { continue };
            match sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM events WHERE id = $1")))
                .bind(id)
                .fetch_optional(&state.db.pool)
                .await
            {
                Ok(Some(row)) => match from_row(&row) {
                    Ok(event) => state.events.publish(event),
                    Err(e) => tracing::warn!("event relay: event {id} unreadable: {e}"),
                },
                Ok(None) => {}
                Err(e) => tracing::warn!("event relay: reading event {id}: {e}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_other_servers_events_are_relayed() {
        let me = Uuid::new_v4();
        let other = Uuid::new_v4();
        assert_eq!(foreign_event(&format!("{other}:42"), me), Some(42));
        assert_eq!(foreign_event(&format!("{me}:42"), me), None);
        assert_eq!(foreign_event("garbage", me), None);
        assert_eq!(foreign_event(&format!("{other}:x"), me), None);
    }
}
