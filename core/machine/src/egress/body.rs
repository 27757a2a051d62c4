//! Response bodies the proxy sends: its own short texts, or the upstream body
//! passed through and watched so the record is written when it ends.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::{Either, Full};
use hyper::body::{Body, Frame, Incoming, SizeHint};

use super::record::PendingRecord;

pub(crate) type ProxyBody = Either<Full<Bytes>, RecordedBody>;

pub(crate) fn text(message: String) -> ProxyBody {
    Either::Left(Full::new(Bytes::from(message)))
}

pub(crate) fn empty() -> ProxyBody {
    Either::Left(Full::new(Bytes::new()))
}

/// An upstream body that finishes its request's record when the last frame passes, when
/// upstream breaks off (`upstream_closed`), or when the client goes away (on drop).
pub(crate) struct RecordedBody {
    inner: Incoming,
    pending: Option<PendingRecord>,
}

impl RecordedBody {
    pub(crate) fn new(inner: Incoming, pending: PendingRecord) -> Self {
        RecordedBody { inner, pending: Some(pending) }
    }

    fn finish(&mut self, error: Option<&str>) {
        if let Some(pending) = self.pending.take() {
            pending.finish(error);
        }
    }
}

impl Body for RecordedBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => self.finish(None),
            Poll::Ready(Some(Err(_))) => self.finish(Some("upstream_closed")),
            Poll::Ready(Some(Ok(_))) if self.inner.is_end_stream() => self.finish(None),
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for RecordedBody {
    fn drop(&mut self) {
        // The server may stop polling once `is_end_stream` says so; that is a success.
        if self.inner.is_end_stream() {
            self.finish(None);
        }
    }
}
