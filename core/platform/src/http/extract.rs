//! Extractors whose rejections are spec error bodies, never a bare 400/500.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use bytes::Bytes;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, FieldErrors};

/// A JSON body. Malformed JSON or a wrong field is 422 `validation_failed`
/// naming the field; an empty body reads as `{}`.
pub struct Json<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if let Some(ct) = req.headers().get(header::CONTENT_TYPE) {
            let ct = ct.to_str().unwrap_or("").to_ascii_lowercase();
            let essence = ct.split(';').next().unwrap_or("").trim();
            if !(essence == "application/json" || essence.ends_with("+json")) {
                return Err(ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "unsupported_media_type",
                    "Send the body as application/json.",
                ));
            }
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", "The request body is too large.")
            } else {
                ApiError::invalid("body", "could not be read")
            }
        })?;
        parse_json(&bytes).map(Json)
    }
}

/// Parses JSON, naming the offending field on failure.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) { b"{}" } else { bytes };
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            return ApiError::invalid("body", format!("is not valid JSON: {}", strip_position(&inner.to_string())));
        }
        field_error(&path, &strip_position(&inner.to_string()))
    })?;
    de.end().map_err(|_| ApiError::invalid("body", "has trailing characters after the JSON value"))?;
    // PostgreSQL cannot store NUL in text, and the spec refuses it in every
    // string it bounds; only an escaped `\u0000` can put one in a JSON string.
    if bytes.windows(6).any(|w| w == b"\\u0000")
        && let Ok(v) = serde_json::from_slice::<serde_json::Value>(bytes)
        && let Some(path) = nul_path(&v, String::new())
    {
        return Err(ApiError::invalid(if path.is_empty() { "body" } else { &path }, "must not contain NUL bytes"));
    }
    Ok(value)
}

/// The path of the first string (or object key) holding a NUL character.
fn nul_path(v: &serde_json::Value, at: String) -> Option<String> {
    let join = |k: &str| if at.is_empty() { k.to_owned() } else { format!("{at}.{k}") };
    match v {
        serde_json::Value::String(s) if s.contains('\0') => Some(at),
        serde_json::Value::Array(items) => {
            items.iter().enumerate().find_map(|(i, item)| nul_path(item, format!("{at}[{i}]")))
        }
        serde_json::Value::Object(map) => map.iter().find_map(|(k, item)| {
            if k.contains('\0') { Some(join(&k.replace('\0', "\\u0000"))) } else { nul_path(item, join(k)) }
        }),
        _ => None,
    }
}

fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_owned(),
        None => msg.to_owned(),
    }
}

/// Builds `validation_failed` for a serde message at `path` ("." is the root).
fn field_error(path: &str, msg: &str) -> ApiError {
    let parent = if path == "." || path.is_empty() { None } else { Some(path) };
    // "missing field `x`" is reported at the parent; name the field itself.
    if let Some(name) = msg.strip_prefix("missing field `").and_then(|r| r.split('`').next()) {
        let field = parent.map_or(name.to_owned(), |p| format!("{p}.{name}"));
        return ApiError::invalid(&field, "can't be blank");
    }
    ApiError::invalid(parent.unwrap_or("body"), msg)
}

/// Path parameters. A value that does not parse (such as a malformed id)
/// names nothing that exists: 404 `not_found`.
pub struct Path<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        // A NUL (only `%00` can put one in a path) names nothing, and PostgreSQL
        // cannot compare text holding one: a lookup by it would fail with a 500.
        if parts.uri.path().contains("%00") {
            return Err(ApiError::not_found("Resource"));
        }
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| Path(p.0))
            .map_err(|_| ApiError::not_found("Resource"))
    }
}

/// Query parameters; a bad one is 422 `validation_failed` naming it.
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let q = parts.uri.query().unwrap_or("");
        // As in bodies: a decoded `%00` would reach PostgreSQL, which cannot take NUL in text.
        if let Some((name, _)) = form_urlencoded_parse(q).find(|(k, v)| k.contains('\0') || v.contains('\0')) {
            return Err(ApiError::invalid(&name.replace('\0', "\\u0000"), "must not contain NUL bytes"));
        }
        let de = serde_urlencoded::Deserializer::new(form_urlencoded_parse(q));
        serde_path_to_error::deserialize(de).map(Query).map_err(|e| {
            let path = e.path().to_string();
            let msg = e.into_inner().to_string();
            field_error(&path, &msg)
        })
    }
}

fn form_urlencoded_parse(q: &str) -> form_urlencoded::Parse<'_> {
    form_urlencoded::parse(q.as_bytes())
}

/// For `Option<Option<T>>` fields with `#[serde(default, deserialize_with = "nullable")]`:
/// an absent field stays `None`, an explicit null becomes `Some(None)`.
pub fn nullable<'de, D: serde::Deserializer<'de>, T: serde::Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    <Option<T> as serde::Deserialize>::deserialize(d).map(Some)
}

/// Collects field errors and returns them all at once.
#[derive(Default)]
pub struct Validator(pub FieldErrors);

impl Validator {
    pub fn check(&mut self, ok: bool, field: &str, msg: &str) {
        if !ok {
            self.0.entry(field.to_owned()).or_default().push(msg.to_owned());
        }
    }

    pub fn finish(self) -> Result<(), ApiError> {
        if self.0.is_empty() { Ok(()) } else { Err(ApiError::validation(self.0)) }
    }
}

/// A page size from `limit`: default when absent, 422 outside 1..=max.
pub fn page_limit(limit: Option<i64>, default: i64, max: i64) -> Result<i64, ApiError> {
    match limit {
        None => Ok(default),
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(_) => Err(ApiError::invalid("limit", format!("must be between 1 and {max}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Body {
        email: String,
        inner: Option<Inner>,
    }

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Inner {
        n: u8,
    }

    fn field_of(e: ApiError) -> String {
        e.errors.as_ref().unwrap().keys().next().unwrap().clone()
    }

    #[test]
    fn names_the_missing_field() {
        let e = parse_json::<Body>(b"{}").unwrap_err();
        assert_eq!(e.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(field_of(e), "email");
    }

    #[test]
    fn names_nested_wrong_types() {
        let e = parse_json::<Body>(br#"{"email":"a","inner":{"n":"x"}}"#).unwrap_err();
        assert_eq!(field_of(e), "inner.n");
        let e = parse_json::<Body>(br#"{"email":"a","inner":{}}"#).unwrap_err();
        assert_eq!(field_of(e), "inner.n");
    }

    #[test]
    fn nul_characters_are_refused_by_path() {
        let e = parse_json::<Body>(br#"{"email":"a\u0000b"}"#).unwrap_err();
        assert_eq!(field_of(e), "email");
        let e = parse_json::<serde_json::Value>(br#"{"ctx":{"list":["ok","x\u0000"]}}"#).unwrap_err();
        assert_eq!(field_of(e), "ctx.list[1]");
        assert!(parse_json::<serde_json::Value>(br#"{"ok":"a\\u0000"}"#).is_ok(), "an escaped backslash is no NUL");
    }

    #[test]
    fn malformed_json_is_a_body_error() {
        let e = parse_json::<Body>(b"{\"email\": ").unwrap_err();
        assert_eq!(e.error, "validation_failed");
        assert_eq!(field_of(e), "body");
        let e = parse_json::<Body>(br#"{"email":"a"} x"#).unwrap_err();
        assert_eq!(field_of(e), "body");
    }
}
