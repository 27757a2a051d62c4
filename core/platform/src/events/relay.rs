//! The relay of other replicas' notifications into this server's bus (PostgreSQL).

use crate::db::Backend;
use crate::journal::bus::{CHANNEL, CONTROL_CHANNEL, SIGNAL_CHANNEL, control_for, foreign_events, foreign_signal};
use crate::journal::{COLUMNS, from_row};
use crate::state::AppState;

/// On PostgreSQL: relays other replicas' events, signals and control requests into this
/// server's bus until shutdown. Reconnects after a lost connection.
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
        if let Err(e) = listener.listen_all([CHANNEL, SIGNAL_CHANNEL, CONTROL_CHANNEL]).await {
            tracing::warn!("event relay: LISTEN failed: {e}");
            continue;
        }
        loop {
            let note = tokio::select! {
                _ = state.shutdown.cancelled() => return,
                note = listener.recv() => note,
            };
            let Ok(note) = note else { break };
            if note.channel() == CONTROL_CHANNEL {
                if let Some(body) = control_for(note.payload(), state.events.server()) {
                    state.events.publish_control(body.to_owned());
                }
                continue;
            }
            if note.channel() == SIGNAL_CHANNEL {
                if let Some(signal) = foreign_signal(note.payload(), state.events.server()) {
                    state.events.publish_signal(signal);
                }
                continue;
            }
            let Some(ids) = foreign_events(note.payload(), state.events.server()) else { continue };
            let (Some(lo), Some(hi)) = (ids.iter().min(), ids.iter().max()) else { continue };
            let sql = format!("SELECT {COLUMNS} FROM events WHERE id >= $1 AND id <= $2 ORDER BY id");
            match sqlx::query(sqlx::AssertSqlSafe(sql)).bind(*lo).bind(*hi).fetch_all(&state.db.pool).await {
                Ok(rows) => {
                    for row in &rows {
                        match from_row(row) {
                            Ok(event) if ids.contains(&event.id) => state.events.publish(event),
                            Ok(_) => {}
                            Err(e) => tracing::warn!("event relay: an event is unreadable: {e}"),
                        }
                    }
                }
                Err(e) => tracing::warn!("event relay: reading events {lo}..={hi}: {e}"),
            }
        }
    }
}
