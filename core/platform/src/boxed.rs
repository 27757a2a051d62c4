//! The boxed error and future types every layer's traits share (hooks,
//! extensions, workers), so that no layer borrows them from one above.

use std::future::Future;
use std::pin::Pin;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
