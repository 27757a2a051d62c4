//! `/conversations/{id}`: the live conversation. The page draws the latest
//! whole turns (a page of the events API with `whole_turns`); older turns
//! load as the reader scrolls up (`/older`); new events stream in over SSE
//! (`/live`, resuming after `Last-Event-ID`), each event once, drawn by the
//! same operations ([`render`]). The prompt box, interrupt and permission
//! answers are forms that post without JavaScript too.

mod render;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, Query};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::Event as SseEvent;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Mutex;
use uuid::Uuid;

use self::render::{Doc, Ev, Renderer};
use super::{Console, Nothing, Posted, badge, escape, seg, text, textarea, when};
use crate::events::stream::{Filter, follow, last_event_id, sse};
use crate::session::Viewer;
use crate::state::AppState;

/// Events drawn on the first load and per older page (whole turns, so a
/// page may hold more).
const PAGE: i64 = 300;

#[derive(Deserialize)]
struct PageQuery {
    before: Option<i64>,
    after: Option<i64>,
}

/// The conversation's turn rows by id.
async fn turn_rows(c: &Console, id: Uuid) -> Result<HashMap<String, Value>, Response> {
    let turns = c.get(&format!("/api/conversations/{id}/turns")).await;
    if !turns.ok() {
        return Err(c.refused("Conversation", &turns));
    }
    let rows = turns.data().as_array().cloned().unwrap_or_default();
    Ok(rows.into_iter().filter_map(|t| Some((t["id"].as_str()?.to_owned(), t))).collect())
}

/// A page of whole turns before `before` (the newest without it), drawn;
/// with the cursor of the next older page and the newest event id.
struct Drawn {
    html: String,
    activity: Vec<String>,
    older: Option<i64>,
    newest: i64,
}

async fn draw(c: &Console, id: Uuid, before: Option<i64>, turns: &HashMap<String, Value>) -> Result<Drawn, Response> {
    let mut path = format!("/api/conversations/{id}/events?order=desc&whole_turns=true&blocks=true&limit={PAGE}");
    if let Some(b) = before {
        path.push_str(&format!("&before={b}"));
    }
    let page = c.get(&path).await;
    if !page.ok() {
        return Err(c.refused("Conversation", &page));
    }
    let events = page.data().as_array().cloned().unwrap_or_default();
    let mut renderer = Renderer::new(id.to_string(), c.viewer.csrf.clone());
    let mut doc = Doc::default();
    for e in events.iter().rev() {
        for op in renderer.ops(&Ev::from_api(e), turns) {
            doc.apply(op);
        }
    }
    doc.heads(turns);
    let meta = &page.body["meta"];
    let older = meta["has_more"].as_bool().unwrap_or(false).then(|| meta["next_cursor"].as_i64()).flatten();
    let newest = page.body["page"]["newest_cursor"].as_i64().unwrap_or(0);
    Ok(Drawn { html: doc.html(), activity: std::mem::take(&mut doc.activity), older, newest })
}

fn older_link(id: Uuid, older: Option<i64>) -> String {
    older
        .map(|o| {
            format!(
                "<p class=\"older\"><a id=\"older\" href=\"/conversations/{id}?before={o}\" \
                 data-fragment=\"/conversations/{id}/older?before={o}\">Load older turns</a></p>"
            )
        })
        .unwrap_or_default()
}

async fn page(c: Console, Path(id): Path<Uuid>, Query(q): Query<PageQuery>) -> Response {
    let conv = c.get(&format!("/api/conversations/{id}")).await;
    if !conv.ok() {
        return c.refused("Conversation", &conv);
    }
    let conv = conv.data();
    let turns = match turn_rows(&c, id).await {
        Ok(t) => t,
        Err(page) => return page,
    };
    let drawn = match draw(&c, id, q.before, &turns).await {
        Ok(d) => d,
        Err(page) => return page,
    };
    // An older page read on its own (without the script) is not followed live.
    let live = if q.before.is_none() {
        format!(" data-live=\"/conversations/{id}/live?after={}\"", drawn.newest)
    } else {
        String::new()
    };
    let title = super::conversation_title(conv);
    let agent = conv["agent_id"].as_str().unwrap_or("");
    let sandbox_id = conv["sandbox_id"].as_str();
    // Names for the side panel; an id stands in for a name the API does not give.
    let agent_path = format!("/api/agents/{}", seg(agent));
    let sandbox_path = format!("/api/sandboxes/{}", seg(sandbox_id.unwrap_or("-")));
    let (agent_row, sandbox_row) = tokio::join!(c.get(&agent_path), c.get(&sandbox_path));
    let agent_name = agent_row.data()["name"].as_str().filter(|_| agent_row.ok()).unwrap_or(agent);
    let sandbox = match sandbox_id {
        Some(s) => {
            let name = sandbox_row.data()["machine_name"].as_str().filter(|_| sandbox_row.ok()).unwrap_or(s);
            format!("<a href=\"/sandboxes/{}\">{}</a>", seg(s), escape(name))
        }
        None => "none yet".to_owned(),
    };
    let activity: String = drawn.activity.iter().map(|a| format!("<li>{}</li>", escape(a))).collect();
    let ended = conv["ended_at"].as_str().is_some();
    let composer = if ended {
        "<p class=\"muted\">This conversation has ended.</p>".to_owned()
    } else {
        format!(
            "<div class=\"composer\"><form id=\"prompt-form\" method=\"post\" action=\"/conversations/{id}/prompt\" data-async data-reset>{}\
             {}<div class=\"row\"><button type=\"submit\">Send</button>\
             <span class=\"hint\">Ctrl+Enter sends.</span></div>\
             <p class=\"error\" role=\"alert\" data-message hidden></p></form>\
             <form id=\"interrupt-form\" method=\"post\" action=\"/conversations/{id}/interrupt\" data-async>{}\
             <button type=\"submit\" class=\"danger\">Interrupt</button>\
             <p class=\"error\" role=\"alert\" data-message hidden></p></form></div>",
            c.csrf(),
            textarea("Message", "prompt", "", "required rows=\"3\" placeholder=\"Ask the agent…\""),
            c.csrf(),
        )
    };
    let body = format!(
        "<p class=\"crumbs\"><a href=\"/conversations\">Conversations</a></p>\
         <h1>{}</h1><div class=\"conversation with-side\"><div>\
         <p>{} <span id=\"live\" data-state=\"off\" aria-live=\"polite\"></span></p>\
         <section id=\"transcript\" aria-label=\"Transcript\"{live}>{}{}</section>{composer}</div>\
         <aside><dl class=\"facts\"><dt>Agent</dt><dd><a href=\"/agents/{}\">{}</a></dd>\
         <dt>Runtime</dt><dd>{}</dd><dt>Model</dt><dd>{}</dd><dt>Sandbox</dt><dd>{sandbox}</dd>\
         <dt>Started</dt><dd>{}</dd></dl><h2>Activity</h2><ul id=\"activity\" class=\"muted\">{activity}</ul></aside></div>",
        escape(&title),
        badge(conv["status"].as_str().unwrap_or("")),
        older_link(id, drawn.older),
        drawn.html,
        seg(agent),
        escape(agent_name),
        text(conv, "runtime"),
        conv["model"].as_str().map(escape).unwrap_or_else(|| "the agent's".to_owned()),
        when(conv, "inserted_at"),
    );
    c.page(&title, &body)
}

/// `GET /conversations/{id}/older?before=N`: the older page's turns as a
/// fragment, led by the link to the page before it.
async fn older(c: Console, Path(id): Path<Uuid>, Query(q): Query<PageQuery>) -> Response {
    let Some(before) = q.before else {
        return (StatusCode::BAD_REQUEST, "before is required").into_response();
    };
    let turns = match turn_rows(&c, id).await {
        Ok(t) => t,
        Err(page) => return page,
    };
    match draw(&c, id, Some(before), &turns).await {
        Ok(d) => {
            let html = format!("{}{}", older_link(id, d.older), d.html);
            crate::session::html::with_page_headers(axum::response::Html(html).into_response())
        }
        Err(page) => page,
    }
}

/// `GET /conversations/{id}/live`: the conversation's new events as
/// rendering operations over SSE, after `Last-Event-ID` (or `after`).
async fn live(c: Console, Path(id): Path<Uuid>, headers: HeaderMap, Query(q): Query<PageQuery>) -> Response {
    let conv = c.get(&format!("/api/conversations/{id}")).await;
    if !conv.ok() {
        return c.refused("Conversation", &conv);
    }
    let after = match last_event_id(&headers) {
        Ok(0) => q.after.unwrap_or(0),
        Ok(n) => n,
        Err(e) => return e.into_response(),
    };
    let turns = match turn_rows(&c, id).await {
        Ok(t) => t,
        Err(page) => return page,
    };
    let filter = Filter { account_id: c.viewer.account_id, sandbox_id: None, conversation_id: Some(id) };
    let renderer = Renderer::new(id.to_string(), c.viewer.csrf.clone());
    let shared = Arc::new(Mutex::new((renderer, turns)));
    let ended = signed_out(c.state.clone(), c.viewer.clone());
    let frames = follow(c.state.clone(), filter, after).then(move |e| {
        let (c, shared) = (c.clone(), shared.clone());
        async move {
            let ev = Ev::from_log(&e);
            let mut guard = shared.lock().await;
            // A turn's start and end change its row: read it again for the header.
            if ev.stage.as_deref() == Some("turn")
                && let Ok(rows) = turn_rows(&c, id).await
            {
                guard.1 = rows;
            }
            let (renderer, turns) = &mut *guard;
            let ops = renderer.ops(&ev, turns);
            SseEvent::default()
                .event("ops")
                .id(e.id.to_string())
                .json_data(&ops)
                .unwrap_or_else(|_| SseEvent::default().comment("unencodable"))
        }
    });
    let mut res = sse(frames.take_until(ended)).into_response();
    res.headers_mut().insert(axum::http::header::CACHE_CONTROL, axum::http::HeaderValue::from_static("no-store"));
    res
}

/// How often a live page checks that its viewer is still signed in.
const SESSION_CHECK: Duration = Duration::from_secs(5);

/// Resolves once the viewer's session ended (sign-out elsewhere, a password
/// change, expiry) or its key was revoked: the stream stops with it.
async fn signed_out(state: AppState, viewer: Viewer) {
    loop {
        tokio::time::sleep(SESSION_CHECK).await;
        match viewer.stands(&state).await {
            Ok(true) => {}
            Ok(false) => return,
            // The database answers again later; meanwhile the session is taken as it was.
            Err(e) => tracing::warn!("live page: could not check its session: {e}"),
        }
    }
}

#[derive(Deserialize)]
struct PromptForm {
    prompt: String,
    #[serde(default)]
    client_request_id: String,
}

async fn prompt(Path(id): Path<Uuid>, Posted(c, f): Posted<PromptForm>) -> Response {
    let mut body = json!({"prompt": f.prompt});
    if !f.client_request_id.is_empty() {
        body["client_request_id"] = json!(f.client_request_id);
    }
    let answer = c.post(&format!("/api/conversations/{id}/prompts"), &body).await;
    c.done(&answer, &format!("/conversations/{id}"))
}

async fn interrupt(Path(id): Path<Uuid>, Posted(c, _): Posted<Nothing>) -> Response {
    let answer = c.post(&format!("/api/conversations/{id}/interrupt"), &json!({})).await;
    c.done(&answer, &format!("/conversations/{id}"))
}

#[derive(Deserialize)]
struct AnswerForm {
    option: String,
}

async fn answer(Path((id, request)): Path<(Uuid, String)>, Posted(c, f): Posted<AnswerForm>) -> Response {
    let path = format!("/api/conversations/{id}/permissions/{}", seg(&request));
    let answer = c.post(&path, &json!({"option_id": f.option})).await;
    c.done(&answer, &format!("/conversations/{id}"))
}

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/conversations/{id}", get(page))
        .route("/conversations/{id}/older", get(older))
        .route("/conversations/{id}/live", get(live))
        .route("/conversations/{id}/prompt", post(prompt))
        .route("/conversations/{id}/interrupt", post(interrupt))
        .route("/conversations/{id}/permissions/{request_id}", post(answer))
}
