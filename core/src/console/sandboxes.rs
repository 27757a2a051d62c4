//! `/sandboxes` and `/sandboxes/{id}`: the machines, one machine's status and
//! conversations, and its reads as the API answers them (redacted: secrets
//! read `[REDACTED]`): a file browser with file view, `git diff`, `git
//! status` and the egress log.

use axum::Router;
use axum::extract::{Path, Query};
use axum::response::Response;
use axum::routing::{get, post};
use serde::Deserialize;
use uuid::Uuid;

use super::{Console, Nothing, Posted, badge, button, error, escape, list, seg, table, text, when};
use crate::state::AppState;

/// Where the file browser opens.
const HOME: &str = "/workspace";

fn q(path: &str) -> String {
    form_urlencoded::byte_serialize(path.as_bytes()).collect()
}

async fn sandboxes(c: Console) -> Response {
    let sandboxes = c.get("/api/sandboxes").await;
    if !sandboxes.ok() {
        return c.refused("Sandboxes", &sandboxes);
    }
    let rows: Vec<Vec<String>> = list(&sandboxes)
        .iter()
        .map(|s| {
            let id = s["id"].as_str().unwrap_or("");
            vec![
                format!("<a href=\"/sandboxes/{}\">{}</a>", seg(id), text(s, "machine_name")),
                badge(s["status"].as_str().unwrap_or("")),
                text(s, "mode"),
                text(s, "provider"),
            ]
        })
        .collect();
    let body = format!(
        "<h1>Sandboxes</h1>{}",
        table(&["Machine", "Status", "Mode", "Provider"], &rows, "No machines yet: a conversation builds one.")
    );
    c.page("Sandboxes", &body)
}

/// The tabs of a sandbox's page; `current` is the view shown.
fn tabs(id: Uuid, current: &str, path: &str) -> String {
    let p = q(path);
    let views = [
        ("files", format!("/sandboxes/{id}?path={p}"), "Files"),
        ("diff", format!("/sandboxes/{id}/diff?path={p}"), "Diff"),
        ("status", format!("/sandboxes/{id}/changes?path={p}"), "Status"),
        ("egress", format!("/sandboxes/{id}/egress"), "Egress"),
    ];
    let links: String = views
        .iter()
        .map(|(key, href, label)| {
            let cur = if *key == current { " aria-current=\"page\"" } else { "" };
            format!("<a href=\"{}\"{cur}>{label}</a>", escape(href))
        })
        .collect();
    format!("<nav class=\"tabs\" aria-label=\"Sandbox views\">{links}</nav>")
}

/// The page's frame: facts, conversations, then the view.
async fn frame(c: &Console, id: Uuid, current: &str, path: &str, view: String) -> Response {
    let (detail_path, status_path) = (format!("/api/sandboxes/{id}"), format!("/api/sandboxes/{id}/status"));
    let (detail, status) = tokio::join!(c.get(&detail_path), c.get(&status_path));
    if !detail.ok() {
        return c.refused("Sandbox", &detail);
    }
    let s = detail.data();
    let machine = if status.ok() { text(status.data(), "machine") } else { String::new() };
    let failure = s["error"].as_str().or(status.data()["error"].as_str()).map(error).unwrap_or_default();
    let conversations: Vec<Vec<String>> = s["conversations"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|conv| {
            let cid = conv["id"].as_str().unwrap_or("");
            let title = super::conversation_title(conv);
            vec![
                format!("<a href=\"/conversations/{}\">{}</a>", seg(cid), escape(&title)),
                badge(conv["status"].as_str().unwrap_or("")),
            ]
        })
        .collect();
    let name = s["machine_name"].as_str().unwrap_or("Sandbox");
    let body = format!(
        "<p class=\"crumbs\"><a href=\"/sandboxes\">Sandboxes</a></p><h1>{}</h1>{failure}\
         <dl class=\"facts\"><dt>Status</dt><dd>{}</dd><dt>Machine</dt><dd>{machine}</dd><dt>Mode</dt><dd>{}</dd>\
         <dt>Provider</dt><dd>{}</dd><dt>Created</dt><dd>{}</dd></dl>\
         <h2>Conversations</h2>{}<h2>Contents</h2>{}{view}\
         <h2>Reset</h2><p class=\"hint\">Reset deletes the machine and its disk; its conversations end.</p>{}",
        escape(name),
        badge(s["status"].as_str().unwrap_or("")),
        text(s, "mode"),
        text(s, "provider"),
        when(s, "inserted_at"),
        table(&["Conversation", "Status"], &conversations, "No conversations on this machine."),
        tabs(id, current, path),
        button(c, &format!("/sandboxes/{id}/reset"), "Reset sandbox", "danger"),
    );
    c.page(name, &body)
}

#[derive(Deserialize)]
struct PathQuery {
    path: Option<String>,
}

/// Links to each folder above `path`, for climbing back up.
fn breadcrumbs(id: Uuid, path: &str) -> String {
    let mut out = format!("<a href=\"/sandboxes/{id}?path=%2F\">/</a>");
    let mut at = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        at.push('/');
        at.push_str(part);
        out.push_str(&format!("<a href=\"/sandboxes/{id}?path={}\">{}</a>/", q(&at), escape(part)));
    }
    format!("<p class=\"mono\">{out}</p>")
}

fn child(dir: &str, name: &str) -> String {
    if dir.ends_with('/') { format!("{dir}{name}") } else { format!("{dir}/{name}") }
}

async fn files(c: Console, Path(id): Path<Uuid>, Query(pq): Query<PathQuery>) -> Response {
    let path = pq.path.unwrap_or_else(|| HOME.to_owned());
    let listing = c.get(&format!("/api/sandboxes/{id}/directory?path={}", q(&path))).await;
    let view = if listing.ok() {
        let d = listing.data();
        let rows: Vec<Vec<String>> = d["entries"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|e| {
                let name = e["name"].as_str().unwrap_or("");
                let target = child(&path, name);
                let folder = format!("<a href=\"/sandboxes/{id}?path={}\">{}/</a>", q(&target), escape(name));
                let file = format!("<a href=\"/sandboxes/{id}/file?path={}\">{}</a>", q(&target), escape(name));
                // A link may lead to a folder or a file; a device or socket has nothing to show.
                let link = match e["kind"].as_str() {
                    Some("directory") => folder,
                    Some("file") => file,
                    Some("symlink") => format!(
                        "{file} <a class=\"muted\" href=\"/sandboxes/{id}?path={}\">(open as folder)</a>",
                        q(&target)
                    ),
                    _ => escape(name),
                };
                vec![link, text(e, "kind"), e["size"].as_u64().unwrap_or(0).to_string()]
            })
            .collect();
        let cut =
            if d["truncated"] == true { "<p class=\"hint\">Only the first 1000 entries are listed.</p>" } else { "" };
        format!("{}{}{cut}", breadcrumbs(id, &path), table(&["Name", "Kind", "Bytes"], &rows, "This folder is empty."))
    } else {
        format!("{}{}", breadcrumbs(id, &path), error(&listing.message()))
    };
    frame(&c, id, "files", &path, view).await
}

async fn file(c: Console, Path(id): Path<Uuid>, Query(pq): Query<PathQuery>) -> Response {
    let path = pq.path.unwrap_or_default();
    let read = c.get(&format!("/api/sandboxes/{id}/files?path={}", q(&path))).await;
    let dir = path.rsplit_once('/').map(|(d, _)| if d.is_empty() { "/" } else { d }).unwrap_or(HOME);
    let view = if read.ok() {
        let f = read.data();
        let content = if f["encoding"] == "base64" {
            "<p class=\"muted\">This file is not text; the API returns it base64-encoded.</p>".to_owned()
        } else {
            format!("<pre id=\"file-content\">{}</pre>", text(f, "content"))
        };
        let cut = if f["truncated"] == true {
            "<p class=\"hint\">The file is longer; only its start is shown.</p>"
        } else {
            ""
        };
        format!(
            "{}<h3 class=\"mono\">{}</h3><p class=\"muted\">{} bytes</p>{content}{cut}",
            breadcrumbs(id, dir),
            escape(&path),
            f["size"].as_u64().unwrap_or(0)
        )
    } else {
        format!("{}{}", breadcrumbs(id, dir), error(&read.message()))
    };
    frame(&c, id, "files", dir, view).await
}

async fn diff(c: Console, Path(id): Path<Uuid>, Query(pq): Query<PathQuery>) -> Response {
    let path = pq.path.unwrap_or_else(|| HOME.to_owned());
    let d = c.get(&format!("/api/sandboxes/{id}/diff?path={}", q(&path))).await;
    let view = if d.ok() {
        let diff = d.data()["diff"].as_str().unwrap_or("");
        if diff.is_empty() {
            "<p class=\"muted\">No changes to tracked files.</p>".to_owned()
        } else {
            format!("<pre id=\"diff\">{}</pre>", escape(diff))
        }
    } else {
        error(&d.message())
    };
    frame(&c, id, "diff", &path, view).await
}

async fn changes(c: Console, Path(id): Path<Uuid>, Query(pq): Query<PathQuery>) -> Response {
    let path = pq.path.unwrap_or_else(|| HOME.to_owned());
    let a = c.get(&format!("/api/sandboxes/{id}/changes?path={}", q(&path))).await;
    let view = if a.ok() {
        let rows: Vec<Vec<String>> = list(&a)
            .iter()
            .map(|ch| {
                vec![
                    format!("<span class=\"mono\">{}</span>", text(ch, "path")),
                    text(ch, "index"),
                    text(ch, "worktree"),
                ]
            })
            .collect();
        format!(
            "<p class=\"muted\">Repository {}</p>{}",
            text(&a.body, "repo_root"),
            table(&["Path", "Index", "Work tree"], &rows, "Nothing changed.")
        )
    } else {
        error(&a.message())
    };
    frame(&c, id, "status", &path, view).await
}

async fn egress(c: Console, Path(id): Path<Uuid>) -> Response {
    let a = c.get(&format!("/api/sandboxes/{id}/egress?limit=100")).await;
    let view = if a.ok() {
        let rows: Vec<Vec<String>> = list(&a)
            .iter()
            .map(|e| {
                let status = e["status"].as_i64().map(|s| s.to_string()).unwrap_or_else(|| text(e, "error"));
                vec![
                    when(e, "at"),
                    text(e, "method"),
                    format!("{}{}", text(e, "host"), text(e, "path")),
                    escape(&status),
                ]
            })
            .collect();
        table(&["At", "Method", "Address", "Answer"], &rows, "No requests left this machine.")
    } else {
        error(&a.message())
    };
    frame(&c, id, "egress", HOME, view).await
}

async fn reset(Path(id): Path<Uuid>, Posted(c, _): Posted<Nothing>) -> Response {
    let answer = c.delete(&format!("/api/sandboxes/{id}")).await;
    c.done(&answer, "/sandboxes")
}

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/sandboxes", get(sandboxes))
        .route("/sandboxes/{id}", get(files))
        .route("/sandboxes/{id}/file", get(file))
        .route("/sandboxes/{id}/diff", get(diff))
        .route("/sandboxes/{id}/changes", get(changes))
        .route("/sandboxes/{id}/egress", get(egress))
        .route("/sandboxes/{id}/reset", post(reset))
}
