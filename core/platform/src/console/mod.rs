//! The web console's shell (DESIGN 9.1, docs/console.md): the page layout and
//! navigation, the stylesheet and script served from the binary, small
//! builders for forms and tables, and [`Console`], the extractor every
//! console page takes: who is signed in, and the API to ask in process
//! ([`api`]). Core's pages live in `acs_core::console`; an extension adds its
//! own with a session route group and a link (`Extension::console_links`).

pub mod api;

use std::net::IpAddr;

use axum::extract::{Form, FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde_json::{Value, json};

pub use api::{Answer, Api};

use crate::session::html::{self, escape, hidden};
use crate::session::{CsrfRefused, Viewer, check_csrf};
use crate::state::AppState;

pub use crate::state::contributions::ConsoleLink as Link;

/// The navigation, in order: core's pages, then the extensions', each
/// with the extension it belongs to (shown while its flag is on). Put in the
/// state's slots by the server assembly.
#[derive(Debug, Clone, Default)]
pub struct Nav(pub Vec<(Option<&'static str>, Link)>);

impl Nav {
    /// The entries shown now.
    pub fn shown(&self, state: &AppState) -> Vec<Link> {
        self.0.iter().filter(|(ext, _)| ext.is_none_or(|name| state.feature_enabled(name))).map(|(_, l)| *l).collect()
    }
}

/// A console page's request: the viewer, the in-process API, and the path
/// (for the navigation's current entry and for redirects back).
#[derive(Clone)]
pub struct Console {
    pub state: AppState,
    pub viewer: Viewer,
    pub ip: IpAddr,
    api: Api,
    path: String,
    wants_json: bool,
}

impl FromRequestParts<AppState> for Console {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let viewer = Viewer::from_request_parts(parts, state).await?;
        let Some(api) = parts.extensions.get::<Api>().cloned() else {
            tracing::error!("console page without the in-process API");
            return Err(crate::session::unavailable());
        };
        let ip = parts.extensions.get::<crate::http::middleware::ClientIp>().map(|c| c.0);
        Ok(Console {
            state: state.clone(),
            viewer,
            ip: ip.unwrap_or(IpAddr::from([127, 0, 0, 1])),
            api,
            path: parts.uri.path().to_owned(),
            wants_json: wants_json(&parts.headers),
        })
    }
}

/// A console form post: the page's [`Console`] and the form's fields, its
/// CSRF token already checked (a wrong one is a 403 page, an unreadable form
/// a 400 page). It reads the body, so it comes last among a handler's arguments.
pub struct Posted<T>(pub Console, pub T);

#[derive(serde::Deserialize)]
struct WithCsrf<T> {
    #[serde(default)]
    csrf: String,
    #[serde(flatten)]
    fields: T,
}

impl<T: serde::de::DeserializeOwned + Send> FromRequest<AppState> for Posted<T> {
    type Rejection = Response;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        let console = Console::from_request_parts(&mut parts, state).await?;
        let req = Request::from_parts(parts, body);
        let Form(form) = Form::<WithCsrf<T>>::from_request(req, state).await.map_err(|e| {
            html::error_page(StatusCode::BAD_REQUEST, "Bad request", &format!("The form could not be read: {e}"))
        })?;
        console.check(&form.csrf).map_err(IntoResponse::into_response)?;
        Ok(Posted(console, form.fields))
    }
}

fn wants_json(headers: &HeaderMap) -> bool {
    headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("application/json"))
}

impl Console {
    /// One API request as the viewer (paths may be owned, so several can be joined).
    pub async fn call(&self, method: Method, path: impl AsRef<str>, body: Option<&Value>) -> Answer {
        self.api.call(self.viewer.principal(self.ip), self.ip, method, path.as_ref(), body).await
    }

    pub async fn get(&self, path: impl AsRef<str>) -> Answer {
        self.call(Method::GET, path, None).await
    }

    pub async fn post(&self, path: impl AsRef<str>, body: &Value) -> Answer {
        self.call(Method::POST, path, Some(body)).await
    }

    pub async fn patch(&self, path: impl AsRef<str>, body: &Value) -> Answer {
        self.call(Method::PATCH, path, Some(body)).await
    }

    pub async fn put(&self, path: impl AsRef<str>, body: &Value) -> Answer {
        self.call(Method::PUT, path, Some(body)).await
    }

    pub async fn delete(&self, path: impl AsRef<str>) -> Answer {
        self.call(Method::DELETE, path, None).await
    }

    /// Refuses a form whose token is not this session's.
    pub fn check(&self, csrf: &str) -> Result<(), CsrfRefused> {
        check_csrf(&self.viewer, csrf)
    }

    /// The hidden CSRF field every form carries.
    pub fn csrf(&self) -> String {
        hidden("csrf", &self.viewer.csrf)
    }

    /// A whole console page with status 200.
    pub fn page(&self, title: &str, body: &str) -> Response {
        self.page_with_status(StatusCode::OK, title, body)
    }

    /// A whole console page: the top bar with the navigation, then `body`.
    pub fn page_with_status(&self, status: StatusCode, title: &str, body: &str) -> Response {
        let nav = self.state.get::<Nav>().map(|n| n.shown(&self.state)).unwrap_or_default();
        let mut links = String::new();
        for l in &nav {
            let current = if self.is_current(l.path) { " aria-current=\"page\"" } else { "" };
            links.push_str(&format!("<a href=\"{}\"{current}>{}</a>", l.path, escape(l.label)));
        }
        let doc = format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <meta name=\"color-scheme\" content=\"light dark\"><link rel=\"icon\" href=\"data:,\">\
             <title>{} · acs</title><link rel=\"stylesheet\" href=\"{}\">\
             <script src=\"{}\" defer></script></head><body>\
             <header class=\"top\"><a class=\"brand\" href=\"/\">acs</a><nav aria-label=\"Main\">{links}</nav>\
             <form method=\"post\" action=\"/logout\">{}<button type=\"submit\" class=\"quiet\">Sign out</button></form>\
             </header><main class=\"console\">{body}</main></body></html>",
            escape(title),
            html::stylesheet(),
            html::script(),
            self.csrf(),
        );
        html::with_page_headers((status, Html(doc)).into_response())
    }

    fn is_current(&self, link: &str) -> bool {
        if link == "/" {
            return self.path == "/";
        }
        self.path == link || self.path.strip_prefix(link).is_some_and(|rest| rest.starts_with('/'))
    }

    /// A page that says an API request was refused, with the API's status.
    pub fn refused(&self, title: &str, answer: &Answer) -> Response {
        self.page_with_status(answer.status, title, &format!("<h1>{}</h1>{}", escape(title), error(&answer.message())))
    }

    /// The end of a form post: for the script, `{ok, message}` as JSON; for
    /// a plain form, back to `to` (303) or, when refused, a page saying why.
    pub fn done(&self, answer: &Answer, to: &str) -> Response {
        if self.wants_json {
            let status = if answer.ok() { StatusCode::OK } else { answer.status };
            let body =
                if answer.ok() { json!({"ok": true}) } else { json!({"ok": false, "message": answer.message()}) };
            return (status, axum::Json(body)).into_response();
        }
        if answer.ok() { Redirect::to(to).into_response() } else { self.refused("That did not work", answer) }
    }
}

/// The form of a one-button post: nothing but its CSRF token.
#[derive(serde::Deserialize)]
pub struct Nothing {}

/// The list an API answer holds (empty when it holds none).
pub fn list(a: &Answer) -> &[Value] {
    a.data().as_array().map(Vec::as_slice).unwrap_or_default()
}

/// An error message block.
pub fn error(message: &str) -> String {
    format!("<p class=\"error\" role=\"alert\">{}</p>", escape(message))
}

/// A notice block.
pub fn notice(message: &str) -> String {
    format!("<p class=\"notice\" role=\"status\">{}</p>", escape(message))
}

/// A value the API shows once (a key, a signing secret): shown now, never again.
pub fn shown_once(what: &str, value: &str) -> String {
    format!(
        "<div class=\"once\" role=\"status\"><strong>{}</strong> Copy it now: it will not be shown again.\
         <code id=\"shown-once\">{}</code></div>",
        escape(what),
        escape(value)
    )
}

/// A labelled one-line input. `kind` is the input type; `extra` raw attributes.
pub fn input(label: &str, name: &str, kind: &str, value: &str, extra: &str) -> String {
    let id = format!("f-{name}");
    format!(
        "<label for=\"{id}\">{}</label><input id=\"{id}\" name=\"{}\" type=\"{kind}\" value=\"{}\" {extra}>",
        escape(label),
        escape(name),
        escape(value)
    )
}

/// A labelled text area.
pub fn textarea(label: &str, name: &str, value: &str, extra: &str) -> String {
    let id = format!("f-{name}");
    format!(
        "<label for=\"{id}\">{}</label><textarea id=\"{id}\" name=\"{}\" {extra}>{}</textarea>",
        escape(label),
        escape(name),
        escape(value)
    )
}

/// A labelled select; `options` are (value, text).
pub fn select(label: &str, name: &str, options: &[(&str, &str)], selected: &str) -> String {
    let id = format!("f-{name}");
    let opts: String = options
        .iter()
        .map(|(v, t)| {
            let sel = if *v == selected { " selected" } else { "" };
            format!("<option value=\"{}\"{sel}>{}</option>", escape(v), escape(t))
        })
        .collect();
    format!(
        "<label for=\"{id}\">{}</label><select id=\"{id}\" name=\"{}\">{opts}</select>",
        escape(label),
        escape(name)
    )
}

/// A form posting to `action` with the CSRF field, `fields` and one submit button.
pub fn form(console: &Console, action: &str, fields: &str, button: &str) -> String {
    format!(
        "<form method=\"post\" action=\"{}\">{}{fields}<button type=\"submit\">{}</button></form>",
        escape(action),
        console.csrf(),
        escape(button)
    )
}

/// A one-button form (revoke, delete, resume): `class` styles the button.
pub fn button(console: &Console, action: &str, text: &str, class: &str) -> String {
    format!(
        "<form class=\"inline\" method=\"post\" action=\"{}\">{}<button type=\"submit\" class=\"{class}\">{}</button></form>",
        escape(action),
        console.csrf(),
        escape(text)
    )
}

/// A table; cells are HTML already escaped by the caller.
pub fn table(headers: &[&str], rows: &[Vec<String>], empty: &str) -> String {
    if rows.is_empty() {
        return format!("<p class=\"muted\">{}</p>", escape(empty));
    }
    let head: String = headers.iter().map(|h| format!("<th scope=\"col\">{}</th>", escape(h))).collect();
    let body: String = rows
        .iter()
        .map(|r| format!("<tr>{}</tr>", r.iter().map(|c| format!("<td>{c}</td>")).collect::<String>()))
        .collect();
    format!("<div class=\"table\"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")
}

/// A string field of an API object, escaped ("" when absent).
pub fn text(v: &Value, key: &str) -> String {
    escape(v.get(key).and_then(Value::as_str).unwrap_or(""))
}

/// A timestamp as people read it: `2026-11-27 10:04` (UTC), escaped.
pub fn when(v: &Value, key: &str) -> String {
    let s = v.get(key).and_then(Value::as_str).unwrap_or("");
    let short = s.get(..16).map(|d| d.replace('T', " ")).unwrap_or_else(|| s.to_owned());
    if short.is_empty() {
        String::new()
    } else {
        format!("<time datetime=\"{}\">{} UTC</time>", escape(s), escape(&short))
    }
}

/// A status badge.
pub fn badge(status: &str) -> String {
    let class = match status {
        "ready" | "idle" | "active" | "completed" | "done" | "succeeded" | "enabled" | "delivered" => "ok",
        "failed" | "terminated" | "disabled" | "error" | "revoked" => "bad",
        _ => "warn",
    };
    format!("<span class=\"badge {class}\">{}</span>", escape(status))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_say_what_was_refused() {
        let a = Answer {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            body: json!({"error": "validation_failed", "message": "Invalid input.", "errors": {"name": ["is required"]}}),
        };
        assert!(!a.ok());
        assert_eq!(a.message(), "Invalid input. name: is required.");
        let ok = Answer { status: StatusCode::OK, body: json!({"data": {"id": "x"}}) };
        assert_eq!(ok.data()["id"], "x");
    }

    #[test]
    fn builders_escape_and_label() {
        let i = input("Name", "name", "text", "<x>", "required");
        assert!(
            i.contains("<label for=\"f-name\">Name</label>") && i.contains("id=\"f-name\"") && i.contains("&lt;x&gt;")
        );
        let s = select("Scope", "scope", &[("full", "Full"), ("restricted", "Restricted")], "restricted");
        assert!(s.contains("<option value=\"restricted\" selected>"));
        assert_eq!(table(&["A"], &[], "none yet"), "<p class=\"muted\">none yet</p>");
        assert_eq!(
            when(&json!({"t": "2026-11-27T10:04:05.123Z"}), "t"),
            "<time datetime=\"2026-11-27T10:04:05.123Z\">2026-11-27 10:04 UTC</time>"
        );
        assert_eq!(badge("failed"), "<span class=\"badge bad\">failed</span>");
    }
}
