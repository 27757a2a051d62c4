//! Writes the egress proxy's records as `egress_events` rows. The proxy must
//! never wait on the database, so records pass through a bounded queue to
//! one writer task; when the queue is full a record is dropped and counted
//! in the log rather than slowing the sandbox's traffic.

use tokio::sync::mpsc;

use crate::db::Db;
use crate::egress::{EgressRecord, EgressSink};
use crate::time_fmt::to_micros;

const QUEUE: usize = 4096;

pub struct DbSink {
    tx: mpsc::Sender<EgressRecord>,
}

impl DbSink {
    /// Starts the writer; it ends when every sender is gone.
    pub fn start(db: Db) -> DbSink {
        let (tx, mut rx) = mpsc::channel::<EgressRecord>(QUEUE);
        tokio::spawn(async move {
            while let Some(r) = rx.recv().await {
                if let Err(e) = write(&db, &r).await {
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

async fn write(db: &Db, r: &EgressRecord) -> Result<(), sqlx::Error> {
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
    .execute(&db.pool)
    .await?;
    Ok(())
}
