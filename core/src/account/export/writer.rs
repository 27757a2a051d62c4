//! Writes an export document as it is produced: a small JSON emitter over a
//! buffer that goes to the database in ordered chunks, so the document never
//! has to fit in memory and every replica can serve it.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde::Serialize;
use uuid::Uuid;

use crate::boxed::{BoxError, BoxFuture};
use crate::extension::ExportSink;
use crate::state::AppState;
use crate::time_fmt::now_micros;

/// Bytes per stored chunk (and the most the buffer holds before a flush).
pub const CHUNK_BYTES: usize = 256 * 1024;
/// A worker's claim on an export lasts this long unless renewed.
pub const LEASE_MICROS: i64 = 60_000_000;
/// The claim is renewed at least this often, even when little is written.
const RENEW_EVERY: Duration = Duration::from_secs(10);

/// The export was taken from this worker (its lease ran out and another claimed it, or the
/// export was deleted with its account): stop without recording anything.
#[derive(Debug)]
pub struct Lost;

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the export was claimed by another worker or deleted")
    }
}

impl std::error::Error for Lost {}

/// Where bytes go when a chunk is full.
pub trait ChunkStore: Send {
    fn put<'a>(&'a mut self, seq: i64, data: Vec<u8>) -> BoxFuture<'a, Result<(), BoxError>>;
    /// Keeps the claim alive without writing.
    fn renew(&mut self) -> BoxFuture<'_, Result<(), BoxError>>;
}

/// Chunks of one export in `account_export_chunks`, each written with the claim checked and
/// its lease renewed in the same transaction (fencing a worker that lost it).
pub struct DbChunks {
    pub state: AppState,
    pub export_id: Uuid,
    pub claim: String,
}

impl DbChunks {
    async fn renew_in(&self, tx: &mut sqlx::Transaction<'static, sqlx::Any>) -> Result<(), BoxError> {
        let now = now_micros();
        let held = sqlx::query(
            "UPDATE account_exports SET lease_until = $1 WHERE id = $2 AND claim = $3 AND status = 'pending'",
        )
        .bind(now + LEASE_MICROS)
        .bind(self.export_id.to_string())
        .bind(self.claim.clone())
        .execute(&mut **tx)
        .await?;
        if held.rows_affected() == 0 {
            return Err(Lost.into());
        }
        Ok(())
    }
}

impl ChunkStore for DbChunks {
    fn put<'a>(&'a mut self, seq: i64, data: Vec<u8>) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            let mut tx = self.state.db.begin().await?;
            self.renew_in(&mut tx).await?;
            sqlx::query("INSERT INTO account_export_chunks (export_id, seq, data) VALUES ($1, $2, $3)")
                .bind(self.export_id.to_string())
                .bind(seq)
                .bind(data)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(())
        })
    }

    fn renew(&mut self) -> BoxFuture<'_, Result<(), BoxError>> {
        Box::pin(async move {
            let mut tx = self.state.db.begin().await?;
            self.renew_in(&mut tx).await?;
            tx.commit().await?;
            Ok(())
        })
    }
}

/// One open JSON container: whether it holds an element yet.
struct Level {
    first: bool,
}

/// A streaming JSON writer: containers, keys and values in order; bytes are flushed to the
/// chunk store whenever a chunk's worth is buffered.
pub struct Writer<S: ChunkStore> {
    store: S,
    buf: Vec<u8>,
    seq: i64,
    total: u64,
    stack: Vec<Level>,
    /// A key was just written: the next value follows it without a comma.
    after_key: bool,
    renewed: Instant,
    /// Top-level names written, so two sections never share one.
    names: BTreeSet<String>,
    /// The top-level list an extension has open.
    open_list: bool,
}

impl<S: ChunkStore> Writer<S> {
    pub fn new(store: S) -> Self {
        Writer {
            store,
            buf: Vec::with_capacity(CHUNK_BYTES + 16 * 1024),
            seq: 0,
            total: 0,
            stack: Vec::new(),
            after_key: false,
            renewed: Instant::now(),
            names: BTreeSet::new(),
            open_list: false,
        }
    }

    /// Bytes written so far, flushed or not.
    pub fn size(&self) -> u64 {
        self.total + self.buf.len() as u64
    }

    fn separate(&mut self) {
        if std::mem::take(&mut self.after_key) {
            return;
        }
        if let Some(level) = self.stack.last_mut() {
            if !level.first {
                self.buf.push(b',');
            }
            level.first = false;
        }
    }

    pub fn begin_object(&mut self) {
        self.separate();
        self.buf.push(b'{');
        self.stack.push(Level { first: true });
    }

    pub fn begin_array(&mut self) {
        self.separate();
        self.buf.push(b'[');
        self.stack.push(Level { first: true });
    }

    pub fn end_object(&mut self) {
        self.stack.pop();
        self.buf.push(b'}');
    }

    pub fn end_array(&mut self) {
        self.stack.pop();
        self.buf.push(b']');
    }

    /// A key of the open object; its value comes next.
    pub fn key(&mut self, name: &str) -> Result<(), BoxError> {
        if self.stack.len() == 1 && !self.names.insert(name.to_owned()) {
            return Err(format!("the export already has a section `{name}`").into());
        }
        self.separate();
        serde_json::to_writer(&mut self.buf, name)?;
        self.buf.push(b':');
        self.after_key = true;
        Ok(())
    }

    pub fn value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), BoxError> {
        self.separate();
        serde_json::to_writer(&mut self.buf, v)?;
        Ok(())
    }

    /// `"name": value`.
    pub fn field<T: Serialize + ?Sized>(&mut self, name: &str, v: &T) -> Result<(), BoxError> {
        self.key(name)?;
        self.value(v)
    }

    /// Stores a chunk when one is full; renews the claim when it has not been for a while.
    pub async fn flush_if_full(&mut self) -> Result<(), BoxError> {
        while self.buf.len() >= CHUNK_BYTES {
            let rest = self.buf.split_off(CHUNK_BYTES);
            let chunk = std::mem::replace(&mut self.buf, rest);
            self.put(chunk).await?;
        }
        if self.renewed.elapsed() >= RENEW_EVERY {
            self.store.renew().await?;
            self.renewed = Instant::now();
        }
        Ok(())
    }

    async fn put(&mut self, chunk: Vec<u8>) -> Result<(), BoxError> {
        self.total += chunk.len() as u64;
        self.store.put(self.seq, chunk).await?;
        self.seq += 1;
        self.renewed = Instant::now();
        Ok(())
    }

    /// Stores what is left; the document's size in bytes.
    pub async fn finish(mut self) -> Result<u64, BoxError> {
        if !self.stack.is_empty() {
            return Err("the export document was left unclosed".into());
        }
        self.flush_if_full().await?;
        if !self.buf.is_empty() {
            let chunk = std::mem::take(&mut self.buf);
            self.put(chunk).await?;
        }
        Ok(self.total)
    }
}

/// Extensions write top-level lists of the document through this.
impl<S: ChunkStore> ExportSink for Writer<S> {
    fn begin_list<'a>(&'a mut self, name: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            if self.open_list || self.stack.len() != 1 {
                return Err("an export list was begun inside another".into());
            }
            self.key(name)?;
            self.begin_array();
            self.open_list = true;
            Ok(())
        })
    }

    fn item<'a>(&'a mut self, item: &'a serde_json::Value) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            if !self.open_list {
                return Err("an export item outside a list".into());
            }
            self.value(item)?;
            self.flush_if_full().await
        })
    }

    fn end_list(&mut self) -> BoxFuture<'_, Result<(), BoxError>> {
        Box::pin(async move {
            if !std::mem::take(&mut self.open_list) {
                return Err("no export list is open".into());
            }
            self.end_array();
            self.flush_if_full().await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// Chunks kept in memory, for checking what the writer produced.
    #[derive(Default)]
    struct Memory {
        chunks: Vec<(i64, Vec<u8>)>,
    }

    impl ChunkStore for &mut Memory {
        fn put<'a>(&'a mut self, seq: i64, data: Vec<u8>) -> BoxFuture<'a, Result<(), BoxError>> {
            self.chunks.push((seq, data));
            Box::pin(async { Ok(()) })
        }

        fn renew(&mut self) -> BoxFuture<'_, Result<(), BoxError>> {
            Box::pin(async { Ok(()) })
        }
    }

    #[tokio::test]
    async fn writes_valid_json_in_ordered_chunks() {
        let mut mem = Memory::default();
        let mut w = Writer::new(&mut mem);
        w.begin_object();
        w.field("format", "test").unwrap();
        w.key("items").unwrap();
        w.begin_array();
        let big = "x".repeat(1000);
        for i in 0..1000 {
            w.begin_object();
            w.field("i", &i).unwrap();
            w.field("s", &big).unwrap();
            w.key("nested").unwrap();
            w.begin_array();
            w.end_array();
            w.end_object();
            w.flush_if_full().await.unwrap();
        }
        w.end_array();
        ExportSink::begin_list(&mut w, "ext").await.unwrap();
        ExportSink::item(&mut w, &json!({"a": 1})).await.unwrap();
        ExportSink::item(&mut w, &json!(2)).await.unwrap();
        ExportSink::end_list(&mut w).await.unwrap();
        w.end_object();
        let size = w.finish().await.unwrap();
        assert!(mem.chunks.len() > 3, "several chunks");
        assert!(mem.chunks.iter().enumerate().all(|(i, (seq, _))| *seq == i as i64));
        assert!(mem.chunks.iter().all(|(_, c)| c.len() <= CHUNK_BYTES));
        let bytes: Vec<u8> = mem.chunks.iter().flat_map(|(_, c)| c.clone()).collect();
        assert_eq!(bytes.len() as u64, size);
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["format"], "test");
        assert_eq!(v["items"].as_array().unwrap().len(), 1000);
        assert_eq!(v["items"][999]["i"], 999);
        assert_eq!(v["ext"], json!([{"a": 1}, 2]));
    }

    #[tokio::test]
    async fn a_section_name_is_written_once() {
        let mut mem = Memory::default();
        let mut w = Writer::new(&mut mem);
        w.begin_object();
        w.field("notes", &json!([])).unwrap();
        assert!(ExportSink::begin_list(&mut w, "notes").await.is_err());
        // Nested keys may repeat top-level names.
        w.key("other").unwrap();
        w.begin_object();
        w.field("notes", &1).unwrap();
        w.end_object();
    }

    #[tokio::test]
    async fn an_unclosed_document_is_refused() {
        let mut mem = Memory::default();
        let mut w = Writer::new(&mut mem);
        w.begin_object();
        assert!(w.finish().await.is_err());
    }
}
