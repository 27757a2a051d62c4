//! `/`: who is signed in, the agents, the latest conversations with their
//! status, the machines, and the credit balance when credits are on.

use axum::Router;
use axum::response::Response;
use axum::routing::get;
use serde_json::Value;

use super::{Console, badge, escape, table, when};
use crate::state::AppState;

/// Conversations listed on the overview.
const RECENT: usize = 10;

fn list(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

async fn overview(c: Console) -> Response {
    let (me, agents, conversations, sandboxes, credits) = tokio::join!(
        c.get("/api/auth/me"),
        c.get("/api/agents"),
        c.get("/api/conversations"),
        c.get("/api/sandboxes"),
        c.get("/api/account/credits?limit=1"),
    );
    for a in [&me, &agents, &conversations, &sandboxes] {
        if !a.ok() {
            return c.refused("Overview", a);
        }
    }
    let email = me.data().get("email").and_then(Value::as_str).unwrap_or("this account");
    let agents = list(agents.data());
    let mut recent: Vec<&Value> = list(conversations.data()).iter().collect();
    recent.sort_by(|a, b| b["updated_at"].as_str().cmp(&a["updated_at"].as_str()));
    let names: std::collections::HashMap<&str, &str> =
        agents.iter().filter_map(|a| Some((a["id"].as_str()?, a["name"].as_str()?))).collect();
    let rows: Vec<Vec<String>> = recent
        .iter()
        .take(RECENT)
        .map(|conv| {
            let id = conv["id"].as_str().unwrap_or("");
            let title = super::conversation_title(conv);
            vec![
                format!("<a href=\"/conversations/{}\">{}</a>", super::seg(id), escape(&title)),
                escape(conv["agent_id"].as_str().and_then(|a| names.get(a).copied()).unwrap_or("")),
                badge(conv["status"].as_str().unwrap_or("")),
                when(conv, "updated_at"),
            ]
        })
        .collect();
    let machines = list(sandboxes.data());
    let ready = machines.iter().filter(|s| s["status"] == "ready").count();
    let credits = credits.ok().then(|| credits.data().clone()).filter(|d| d["enabled"] == true);
    let credit_card = credits
        .map(|d| {
            format!(
                "<div class=\"card\"><div class=\"muted\">Credits</div><div class=\"big\">{}</div></div>",
                d["balance"].as_i64().unwrap_or(0)
            )
        })
        .unwrap_or_default();
    let body = format!(
        "<h1>Overview</h1><p>Signed in as <strong>{}</strong>.</p>\
         <div class=\"cards\">\
         <div class=\"card\"><div class=\"muted\">Agents</div><div class=\"big\">{}</div><a href=\"/agents\">Manage agents</a></div>\
         <div class=\"card\"><div class=\"muted\">Conversations</div><div class=\"big\">{}</div><a href=\"/conversations\">All conversations</a></div>\
         <div class=\"card\"><div class=\"muted\">Machines ready / all</div><div class=\"big\">{ready} / {}</div><a href=\"/sandboxes\">Sandboxes</a></div>\
         {credit_card}</div>\
         <h2>Recent conversations</h2>{}\
         <p class=\"muted\">The API is described at <a href=\"/docs\">/docs</a>.</p>",
        escape(email),
        agents.len(),
        recent.len(),
        machines.len(),
        table(
            &["Conversation", "Agent", "Status", "Updated"],
            &rows,
            "No conversations yet: start one from an agent's page."
        ),
    );
    c.page("Overview", &body)
}

pub fn router() -> Router<AppState> {
    Router::new().route("/", get(overview))
}
