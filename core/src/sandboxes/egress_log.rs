//! Writes the egress proxy's records as `egress_events` rows. The proxy must
//! never wait on the database, so records pass through a bounded queue to
//! one writer task; when the queue is full a record is dropped and counted
//! in the log rather than slowing the sandbox's traffic.
//!
//! Every text of a record comes from the machine (the host it dialed, the
//! method it sent) or names what it did, so each is redacted with the
//! machine's secrets before it is stored (spec 2.3): a secret dialed as a
//! host name is never in the log.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use uuid::Uuid;

use super::redact::{MARKER, Redactor};
use crate::egress::{EgressRecord, EgressSink};
use crate::state::AppState;
use crate::time_fmt::to_micros;

const QUEUE: usize = 4096;

/// How long a machine's redactor is reused: a secret changed meanwhile is
/// picked up within this time.
const REDACTOR_TTL: Duration = Duration::from_secs(5);

pub struct DbSink {
    tx: mpsc::Sender<EgressRecord>,
}

impl DbSink {
    /// Starts the writer; it ends when every sender is gone or, once what is
    /// queued is written, when the server shuts down (it holds the state
    /// that holds the senders).
    pub fn start(state: AppState) -> DbSink {
        let (tx, mut rx) = mpsc::channel::<EgressRecord>(QUEUE);
        tokio::spawn(async move {
            let mut redactors: HashMap<Uuid, (Instant, Redactor)> = HashMap::new();
            loop {
                let next = tokio::select! {
                    biased;
                    r = rx.recv() => r,
                    () = state.shutdown.cancelled() => rx.try_recv().ok(),
                };
                let Some(r) = next else { break };
                let r = match redactor(&state, &mut redactors, r.sandbox_id).await {
                    Some(redactor) => redacted(&r, redactor),
                    None => withheld(&r),
                };
                if let Err(e) = write(&state, &r).await {
                    tracing::warn!(sandbox = %r.sandbox_id, "egress record not written: {e}");
                }
            }
        });
        DbSink { tx }
    }
}

impl EgressSink for DbSink {
    fn record(&self, record: EgressRecord) {
        if self.tx.try_send(record).is_err() {
            tracing::warn!("egress log queue full: a record was dropped");
        }
    }
}

/// The machine's redactor, from the cache while it is fresh; `None` when it
/// cannot be built.
async fn redactor<'a>(
    state: &AppState,
    cache: &'a mut HashMap<Uuid, (Instant, Redactor)>,
    sandbox_id: Uuid,
) -> Option<&'a Redactor> {
    let now = Instant::now();
    cache.retain(|_, (at, _)| now.duration_since(*at) < REDACTOR_TTL);
    if let std::collections::hash_map::Entry::Vacant(slot) = cache.entry(sandbox_id) {
        let built = match super::store::get(&state.db, sandbox_id).await {
            Ok(Some(row)) => super::service::machine_redactor(state, &row).await.map_err(|e| e.body().to_string()),
            Ok(None) => Ok(Redactor::default()),
            Err(e) => Err(e.to_string()),
        };
        match built {
            Ok(r) => {
                slot.insert((now, r));
            }
            Err(e) => {
                tracing::warn!(sandbox = %sandbox_id, "egress record redactor not built, its texts are withheld: {e}");
                return None;
            }
        }
    }
    cache.get(&sandbox_id).map(|(_, r)| r)
}

/// The record with each of its texts redacted.
fn redacted(r: &EgressRecord, redactor: &Redactor) -> EgressRecord {
    EgressRecord {
        method: redactor.redact_str(&r.method),
        host: redactor.redact_str(&r.host),
        credential_keys: r.credential_keys.iter().map(|k| redactor.redact_str(k)).collect(),
        service: r.service.as_deref().map(|s| redactor.redact_str(s)),
        error: r.error.as_deref().map(|e| redactor.redact_str(e)),
        ..r.clone()
    }
}

/// The record with its texts replaced whole, when the machine's secrets
/// could not be read: what cannot be checked is not shown.
fn withheld(r: &EgressRecord) -> EgressRecord {
    EgressRecord {
        method: MARKER.into(),
        host: MARKER.into(),
        credential_keys: r.credential_keys.iter().map(|_| MARKER.to_owned()).collect(),
        service: r.service.as_ref().map(|_| MARKER.to_owned()),
        error: r.error.as_ref().map(|_| MARKER.to_owned()),
        ..r.clone()
    }
}

async fn write(state: &AppState, r: &EgressRecord) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO egress_events (sandbox_id, method, host, credential_keys, service, status, latency_ms, error, at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(r.sandbox_id.to_string())
    .bind(r.method.clone())
    .bind(r.host.clone())
    .bind(serde_json::to_string(&r.credential_keys).unwrap_or_else(|_| "[]".into()))
    .bind(r.service.clone())
    .bind(r.status.map(i64::from))
    .bind(r.latency_ms)
    .bind(r.error.clone())
    .bind(to_micros(r.at))
    .execute(&state.db.pool)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_text_of_a_record_is_redacted() {
        let record = EgressRecord {
            sandbox_id: Uuid::nil(),
            at: time::OffsetDateTime::UNIX_EPOCH,
            method: "PUT-tok3n".into(),
            host: "tok3n.attacker.example:443".into(),
            credential_keys: vec!["KEY_tok3n".into()],
            service: Some("svc tok3n".into()),
            status: Some(502),
            latency_ms: 3,
            error: Some("host_unresolved tok3n.attacker.example".into()),
        };
        let r = redacted(&record, &Redactor::new(["tok3n".to_owned()]));
        assert_eq!(r.method, "PUT-[REDACTED]");
        assert_eq!(r.host, "[REDACTED].attacker.example:443");
        assert_eq!(r.credential_keys, ["KEY_[REDACTED]"]);
        assert_eq!(r.service.as_deref(), Some("svc [REDACTED]"));
        assert_eq!(r.error.as_deref(), Some("host_unresolved [REDACTED].attacker.example"));
        assert_eq!((r.status, r.latency_ms, r.sandbox_id), (Some(502), 3, Uuid::nil()));
        let w = withheld(&record);
        assert_eq!((w.host.as_str(), w.error.as_deref(), w.status), (MARKER, Some(MARKER), Some(502)));
    }
}
