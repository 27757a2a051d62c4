//! Request ids (`x-request-id`) for requests that bring none.

use std::sync::atomic::{AtomicU64, Ordering};

use axum::http::HeaderValue;

/// Request ids unique across replicas and restarts without a random draw per
/// request: a random prefix per process, then a counter.
pub struct RequestIds {
    prefix: String,
    next: AtomicU64,
}

impl RequestIds {
    pub fn new() -> Self {
        RequestIds { prefix: uuid::Uuid::new_v4().simple().to_string()[..12].to_owned(), next: AtomicU64::new(1) }
    }

    pub(crate) fn make(&self) -> HeaderValue {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        HeaderValue::from_str(&format!("{}-{n}", self.prefix)).expect("hex and digits are a valid header")
    }
}

impl Default for RequestIds {
    fn default() -> Self {
        Self::new()
    }
}
