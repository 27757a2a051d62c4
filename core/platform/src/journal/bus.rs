//! Live fan-out of appended events. Every event written on this server is
//! published to an in-process broadcast that streams subscribe to. On
//! PostgreSQL, each append also sends `NOTIFY acs_events '<server>:<id>'`,
//! and every server listens: an event written on another replica is read
//! back by id and published here too, so a stream on any replica sees every
//! event. A subscriber that falls behind loses live events (the broadcast is
//! bounded); streams recover them from the log by id.
//!
//! Stream signals (`signal.rs`) travel beside events the same way: a second
//! broadcast of (account, kind, machine), and on PostgreSQL a second channel,
//! `acs_signals`, whose payload is `<server>:<account id>` for a
//! `conversations` signal of no one machine, `<server>:<account
//! id>:conversations:<sandbox id>` for one of a machine, and
//! `<server>:<account id>:<kind>` for the others.
//!
//! A third channel, `acs_control`, carries requests addressed to one server
//! (`<to server>:<body>`): an interrupt or a permission answer for the turn
//! that server runs (`conversations/owners.rs`).

use std::sync::Arc;

use tokio::sync::broadcast;
use uuid::Uuid;

use super::Event;
use super::signal::{Signal, SignalKind};
use crate::db::{Backend, Db};

pub const CHANNEL: &str = "acs_events";
pub const SIGNAL_CHANNEL: &str = "acs_signals";
pub const CONTROL_CHANNEL: &str = "acs_control";
const CAPACITY: usize = 4096;
/// Signals are rare and a missed one is recovered by any later one.
const SIGNAL_CAPACITY: usize = 256;

pub struct Bus {
    tx: broadcast::Sender<Arc<Event>>,
    /// Accounts whose conversation list, roster or schedules changed.
    signals: broadcast::Sender<Signal>,
    /// Bodies of control requests other replicas addressed to this server.
    controls: broadcast::Sender<String>,
    /// Tells this server's own notifications apart from other replicas'.
    server: Uuid,
    /// Held by an append from before its transaction until its events are
    /// published, so this server publishes its events in id order: a stream
    /// that has sent id n must never meet a smaller id later (it would drop it).
    appending: tokio::sync::Mutex<()>,
}

impl Default for Bus {
    fn default() -> Self {
        Bus {
            tx: broadcast::channel(CAPACITY).0,
            signals: broadcast::channel(SIGNAL_CAPACITY).0,
            controls: broadcast::channel(SIGNAL_CAPACITY).0,
            server: Uuid::new_v4(),
            appending: tokio::sync::Mutex::new(()),
        }
    }
}

impl Bus {
    /// This server's id among the replicas (new at every start).
    pub fn server(&self) -> Uuid {
        self.server
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }

    /// Orders this server's appends (see `appending`).
    pub(crate) async fn appending(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.appending.lock().await
    }

    pub(crate) fn publish(&self, event: Event) {
        // No subscriber is fine: nobody is watching.
        let _ = self.tx.send(Arc::new(event));
    }

    pub fn subscribe_signals(&self) -> broadcast::Receiver<Signal> {
        self.signals.subscribe()
    }

    pub(crate) fn publish_signal(&self, signal: Signal) {
        let _ = self.signals.send(signal);
    }

    pub(crate) fn publish_control(&self, body: String) {
        let _ = self.controls.send(body);
    }

    pub fn subscribe_controls(&self) -> broadcast::Receiver<String> {
        self.controls.subscribe()
    }

    /// Sends a control request to the replica `to` (PostgreSQL only; the caller checks).
    pub async fn notify_control(&self, db: &Db, to: Uuid, body: &str) -> Result<(), sqlx::Error> {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CONTROL_CHANNEL)
            .bind(format!("{to}:{body}"))
            .execute(&db.pool)
            .await?;
        Ok(())
    }

    /// Tells other replicas of a signal (PostgreSQL only).
    pub(crate) async fn notify_signal(&self, db: &Db, signal: Signal) -> Result<(), sqlx::Error> {
        if db.backend == Backend::Postgres {
            let payload = match (signal.kind, signal.sandbox_id) {
                (SignalKind::Conversations, None) => format!("{}:{}", self.server, signal.account_id),
                (kind, None) => format!("{}:{}:{}", self.server, signal.account_id, kind.as_str()),
                (kind, Some(machine)) => format!("{}:{}:{}:{machine}", self.server, signal.account_id, kind.as_str()),
            };
            sqlx::query("SELECT pg_notify($1, $2)").bind(SIGNAL_CHANNEL).bind(payload).execute(&db.pool).await?;
        }
        Ok(())
    }

    /// Tells other replicas about events written here (PostgreSQL only), up
    /// to 300 ids per notification (payloads are capped at 8000 bytes).
    pub(crate) async fn notify(&self, db: &Db, ids: &[i64]) -> Result<(), sqlx::Error> {
        if db.backend == Backend::Postgres {
            for chunk in ids.chunks(300) {
                let list: Vec<String> = chunk.iter().map(i64::to_string).collect();
                sqlx::query("SELECT pg_notify($1, $2)")
                    .bind(CHANNEL)
                    .bind(format!("{}:{}", self.server, list.join(",")))
                    .execute(&db.pool)
                    .await?;
            }
        }
        Ok(())
    }
}

/// Which events a notification announces, unless this server sent it.
pub fn foreign_events(payload: &str, server: Uuid) -> Option<Vec<i64>> {
    let (from, ids) = payload.split_once(':')?;
    if from.parse::<Uuid>().ok()? == server {
        return None;
    }
    ids.split(',').map(|id| id.parse().ok()).collect()
}

/// The signal a notification carries, unless this server sent it.
pub fn foreign_signal(payload: &str, server: Uuid) -> Option<Signal> {
    let (from, rest) = payload.split_once(':')?;
    if from.parse::<Uuid>().ok()? == server {
        return None;
    }
    let mut parts = rest.splitn(3, ':');
    let account = parts.next()?.parse().ok()?;
    let kind = match parts.next() {
        Some(kind) => SignalKind::parse(kind)?,
        None => SignalKind::Conversations,
    };
    let sandbox_id = match parts.next() {
        Some(machine) => Some(machine.parse().ok()?),
        None => None,
    };
    Some(Signal { account_id: account, kind, sandbox_id })
}

/// The body of a control request, when it is addressed to this server.
pub fn control_for(payload: &str, server: Uuid) -> Option<&str> {
    let (to, body) = payload.split_once(':')?;
    (to.parse::<Uuid>().ok()? == server).then_some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_other_servers_events_are_relayed() {
        let me = Uuid::new_v4();
        let other = Uuid::new_v4();
        assert_eq!(foreign_events(&format!("{other}:42"), me), Some(vec![42]));
        assert_eq!(foreign_events(&format!("{other}:42,43,50"), me), Some(vec![42, 43, 50]));
        assert_eq!(foreign_events(&format!("{me}:42"), me), None);
        assert_eq!(foreign_events("garbage", me), None);
        assert_eq!(foreign_events(&format!("{other}:x"), me), None);
    }

    #[test]
    fn only_control_requests_addressed_here_are_taken() {
        let me = Uuid::new_v4();
        let other = Uuid::new_v4();
        assert_eq!(control_for(&format!("{me}:{{\"a\":1}}"), me), Some("{\"a\":1}"));
        assert_eq!(control_for(&format!("{other}:{{}}"), me), None);
        assert_eq!(control_for("garbage", me), None);
    }

    #[test]
    fn only_other_servers_signals_are_relayed() {
        let me = Uuid::new_v4();
        let other = Uuid::new_v4();
        let account = Uuid::new_v4();
        let of = |kind| Some(Signal { account_id: account, kind, sandbox_id: None });
        assert_eq!(foreign_signal(&format!("{other}:{account}"), me), of(SignalKind::Conversations));
        let machine = Uuid::new_v4();
        assert_eq!(
            foreign_signal(&format!("{other}:{account}:conversations:{machine}"), me),
            Some(Signal { account_id: account, kind: SignalKind::Conversations, sandbox_id: Some(machine) })
        );
        assert_eq!(foreign_signal(&format!("{other}:{account}:conversations:nope"), me), None);
        assert_eq!(foreign_signal(&format!("{other}:{account}:team"), me), of(SignalKind::Team));
        assert_eq!(foreign_signal(&format!("{other}:{account}:schedule"), me), of(SignalKind::Schedule));
        assert_eq!(foreign_signal(&format!("{other}:{account}:other"), me), None);
        assert_eq!(foreign_signal(&format!("{me}:{account}"), me), None);
        assert_eq!(foreign_signal(&format!("{other}:42"), me), None);
        assert_eq!(foreign_signal("garbage", me), None);
    }
}
