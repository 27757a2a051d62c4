//! Server-rendered pages: one document shape, escaping, and the headers
//! every page carries. Pages are plain HTML forms with no script, so the
//! content security policy forbids scripts outright.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};

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

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#1b1b1f}\
h1{font-size:1.4rem}label{display:block;margin:.8rem 0 .2rem}input[type=email],input[type=password],input[type=text]\
{width:100%;padding:.5rem;box-sizing:border-box}button{margin:1rem .5rem 0 0;padding:.5rem 1.2rem}\
.error{color:#b00020}.code{font-family:monospace;font-size:1.3rem;letter-spacing:.1rem}";

/// A whole page with status 200.
pub fn page(title: &str, body_html: &str) -> Response {
    page_with_status(StatusCode::OK, title, body_html)
}

/// A whole page with `status`.
pub fn page_with_status(status: StatusCode, title: &str, body_html: &str) -> Response {
    let doc = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · acs</title><style>{STYLE}</style></head><body>{body_html}</body></html>",
        escape(title)
    );
    with_page_headers((status, Html(doc)).into_response())
}

/// A page that says what went wrong, with `status`.
pub fn error_page(status: StatusCode, title: &str, message: &str) -> Response {
    page_with_status(status, title, &format!("<h1>{}</h1><p class=\"error\">{}</p>", escape(title), escape(message)))
}

/// Headers of every page: no caching (pages carry CSRF tokens and codes), no
/// framing (consent and approval must not be clickjacked), no referrer
/// (addresses carry codes), no script.
pub fn with_page_headers(mut res: Response) -> Response {
    let h = res.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'",
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
