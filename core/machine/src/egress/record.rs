//! One `EgressRecord` per proxied request, emitted exactly once when the
//! request (or tunnel) ends, whichever way it ends.

use std::sync::Arc;
use std::time::Instant;

use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// What the egress log keeps of one request: never the path, query, headers or bodies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EgressRecord {
    pub sandbox_id: Uuid,
    /// When the request started.
    pub at: OffsetDateTime,
    pub method: String,
    /// `host:port` as dialed (the name the client gave, not the resolved address).
    pub host: String,
    /// Names of the credentials the broker attached.
    pub credential_keys: Vec<String>,
    /// The credential binding that matched.
    pub service: Option<String>,
    /// Upstream status, or the proxy's own answer when it refused or failed.
    pub status: Option<u16>,
    /// Whole request (or tunnel lifetime), not time to first byte.
    pub latency_ms: i64,
    /// Why the request did not succeed; `None` on success.
    pub error: Option<String>,
}

/// Receives records as requests end. Called on the proxy's tasks: it must not block.
pub trait EgressSink: Send + Sync + 'static {
    fn record(&self, record: EgressRecord);
}

/// A request in flight. Dropping it unfinished still records, blaming the client (or the
/// proxy stopping), so every request yields exactly one record.
pub(crate) struct PendingRecord {
    sink: Arc<dyn EgressSink>,
    record: EgressRecord,
    started: Instant,
    stopped: CancellationToken,
    finished: bool,
    discarded: bool,
}

impl PendingRecord {
    pub(crate) fn start(
        sink: Arc<dyn EgressSink>,
        sandbox_id: Uuid,
        method: &str,
        host: String,
        stopped: CancellationToken,
    ) -> Self {
        let record = EgressRecord {
            sandbox_id,
            at: OffsetDateTime::now_utc(),
            method: method.to_owned(),
            host,
            credential_keys: Vec::new(),
            service: None,
            status: None,
            latency_ms: 0,
            error: None,
        };
        PendingRecord { sink, record, started: Instant::now(), stopped, finished: false, discarded: false }
    }

    pub(crate) fn set_status(&mut self, status: u16) {
        self.record.status = Some(status);
    }

    /// The binding that matched and the source keys it attached.
    pub(crate) fn set_service(&mut self, service: String, credential_keys: Vec<String>) {
        self.record.service = Some(service);
        self.record.credential_keys = credential_keys;
    }

    /// Ends without a record: an intercepted CONNECT, whose requests each
    /// have their own.
    pub(crate) fn discard(mut self) {
        self.finished = true;
        self.discarded = true;
    }

    /// Ends the request; `error` is `None` on success.
    pub(crate) fn finish(mut self, error: Option<&str>) {
        self.record.error = error.map(str::to_owned);
        self.finished = true;
    }
}

impl Drop for PendingRecord {
    fn drop(&mut self) {
        if self.discarded {
            return;
        }
        if !self.finished {
            let cause = if self.stopped.is_cancelled() { "proxy_stopped" } else { "client_closed" };
            self.record.error = Some(cause.to_owned());
        }
        self.record.latency_ms = i64::try_from(self.started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let record = &self.record;
        tracing::debug!(
            sandbox_id = %record.sandbox_id,
            method = %record.method,
            host = %record.host,
            status = ?record.status,
            error = ?record.error,
            latency_ms = record.latency_ms,
            "egress request"
        );
        self.sink.record(self.record.clone());
    }
}
