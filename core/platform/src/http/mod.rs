//! HTTP plumbing shared by every resource: extractors that turn bad input
//! into the spec's error body, the `{data: ...}` envelope, and middleware.

pub mod answer;
pub mod extract;
pub mod middleware;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

pub use extract::{Json, Path, Query};

/// The single-object and list envelope: `{data: ...}`.
#[derive(Serialize, ToSchema)]
pub struct Data<T> {
    pub data: T,
}

impl<T: Serialize> IntoResponse for Data<T> {
    fn into_response(self) -> Response {
        axum::Json(self).into_response()
    }
}

/// `{data: value}` with status 200.
pub fn ok<T: Serialize>(data: T) -> Data<T> {
    Data { data }
}

/// `{data: value}` with status 201.
pub fn created<T: Serialize>(data: T) -> (StatusCode, Data<T>) {
    (StatusCode::CREATED, Data { data })
}

/// Paging metadata of cursor-paged lists (the `meta` of the spec's list responses).
#[derive(Serialize, ToSchema)]
pub struct PageMeta {
    pub limit: i64,
    pub has_more: bool,
    /// Cursor for the next page; null when the page is empty.
    pub next_cursor: Option<i64>,
}

/// A cursor-paged list: `{data: [...], meta: {...}}`.
#[derive(Serialize, ToSchema)]
pub struct Paged<T> {
    pub data: Vec<T>,
    pub meta: PageMeta,
}

impl<T: Serialize> IntoResponse for Paged<T> {
    fn into_response(self) -> Response {
        axum::Json(self).into_response()
    }
}
