//! Server-rendered pages: one document shape, escaping, the headers every
//! page carries, and the one stylesheet and script every page may load, served
//! from the binary. The content security policy allows this site's own
//! assets and nothing inline.

use std::sync::LazyLock;

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;

use crate::state::AppState;

const CSS: &str = include_str!("assets/console.css");
const JS: &str = include_str!("assets/console.js");

/// A content hash of an asset, in its address: a changed binary's pages ask
/// for the new one, so the old may be cached for a year.
fn version(text: &str) -> String {
    crate::auth::token::digest(text)[..12].to_owned()
}

static CSS_HREF: LazyLock<String> = LazyLock::new(|| format!("/assets/console.css?v={}", version(CSS)));
static JS_SRC: LazyLock<String> = LazyLock::new(|| format!("/assets/console.js?v={}", version(JS)));

/// The stylesheet's address.
pub fn stylesheet() -> &'static str {
    &CSS_HREF
}

/// The script's address.
pub fn script() -> &'static str {
    &JS_SRC
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut res = body.into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000, immutable"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    res
}

/// `/assets/console.css` and `/assets/console.js`: public.
pub fn assets() -> Router<AppState> {
    Router::new()
        .route("/assets/console.css", get(|| async { asset(CSS, "text/css; charset=utf-8") }))
        .route("/assets/console.js", get(|| async { asset(JS, "text/javascript; charset=utf-8") }))
}

/// Escapes text for an HTML element or a quoted attribute.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A whole page with status 200.
pub fn page(title: &str, body_html: &str) -> Response {
    page_with_status(StatusCode::OK, title, body_html)
}

/// A whole page with `status`, outside the console's frame (sign-in,
/// approval, consent).
pub fn page_with_status(status: StatusCode, title: &str, body_html: &str) -> Response {
    let doc = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"color-scheme\" content=\"light dark\"><link rel=\"icon\" href=\"data:,\">\
         <title>{} · acs</title><link rel=\"stylesheet\" href=\"{}\"></head>\
         <body class=\"plain\"><main>{body_html}</main></body></html>",
        escape(title),
        stylesheet()
    );
    with_page_headers((status, Html(doc)).into_response())
}

/// A page that says what went wrong, with `status`.
pub fn error_page(status: StatusCode, title: &str, message: &str) -> Response {
    page_with_status(status, title, &format!("<h1>{}</h1><p class=\"error\">{}</p>", escape(title), escape(message)))
}

/// Headers of every page: no caching (pages carry CSRF tokens and codes), no
/// framing (consent and approval must not be clickjacked), no referrer
/// (addresses carry codes), only this site's own script and styles (no
/// inline ones, so injected markup cannot run).
pub fn with_page_headers(mut res: Response) -> Response {
    let h = res.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; \
             frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    res
}

/// A hidden form field.
pub fn hidden(name: &str, value: &str) -> String {
    format!("<input type=\"hidden\" name=\"{}\" value=\"{}\">", escape(name), escape(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_text_and_attributes() {
        assert_eq!(escape("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
        assert_eq!(hidden("n", "\"><script>"), "<input type=\"hidden\" name=\"n\" value=\"&quot;&gt;&lt;script&gt;\">");
    }
}
