//! `/agents`, `/agents/{id}` and `/conversations`: agents with their
//! versions (edit, roll back, delete), starting a conversation, and the list
//! of conversations.

use axum::Router;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::{
    Answer, Console, Nothing, Posted, badge, button, conversation_title, escape, form, input, list, notice, seg,
    select, table, text, textarea, when,
};
use crate::state::AppState;

const RUNTIMES: [(&str, &str); 5] = [
    ("claude", "claude (Claude Code)"),
    ("codex", "codex (Codex)"),
    ("gemini", "gemini (Gemini CLI)"),
    ("opencode", "opencode (OpenCode)"),
    ("acp", "acp (any ACP agent: give its command)"),
];

#[derive(Deserialize, Default, Clone)]
struct AgentForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    runtime: String,
    #[serde(default)]
    command: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    system_prompt: String,
}

impl AgentForm {
    fn of(agent: &Value) -> AgentForm {
        let command = agent["command"].as_array().map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>());
        AgentForm {
            name: agent["name"].as_str().unwrap_or("").to_owned(),
            runtime: agent["runtime"].as_str().unwrap_or("").to_owned(),
            command: command.map(|c| c.join("\n")).unwrap_or_default(),
            model: agent["model"].as_str().unwrap_or("").to_owned(),
            system_prompt: agent["system_prompt"].as_str().unwrap_or("").to_owned(),
        }
    }

    /// The API body: blank fields are null (on an edit, null clears them).
    fn body(&self, with_runtime: bool) -> Value {
        let blank = |s: &str| if s.trim().is_empty() { Value::Null } else { json!(s) };
        let command: Vec<&str> = self.command.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        let mut body = Map::new();
        body.insert("name".into(), json!(self.name.trim()));
        if with_runtime {
            body.insert("runtime".into(), json!(self.runtime));
        }
        body.insert("command".into(), if command.is_empty() { Value::Null } else { json!(command) });
        body.insert("model".into(), blank(&self.model));
        body.insert("system_prompt".into(), blank(&self.system_prompt));
        Value::Object(body)
    }

    fn fields(&self, with_runtime: bool) -> String {
        let runtime = if with_runtime { select("Runtime", "runtime", &RUNTIMES, &self.runtime) } else { String::new() };
        format!(
            "{}{runtime}{}<p class=\"hint\">For runtime acp: the agent's program and its arguments, one per line.</p>{}{}",
            input("Name", "name", "text", &self.name, "required maxlength=\"100\""),
            textarea("Command", "command", &self.command, "rows=\"2\""),
            input("Model", "model", "text", &self.model, "placeholder=\"provider/model, or blank for the runtime's\""),
            textarea("System prompt", "system_prompt", &self.system_prompt, "rows=\"4\""),
        )
    }
}

async fn agents_page(c: &Console, status: StatusCode, message: &str, draft: &AgentForm) -> Response {
    let agents = c.get("/api/agents").await;
    if !agents.ok() {
        return c.refused("Agents", &agents);
    }
    let rows: Vec<Vec<String>> = list(&agents)
        .iter()
        .map(|a| {
            vec![
                format!("<a href=\"/agents/{}\">{}</a>", seg(a["id"].as_str().unwrap_or("")), text(a, "name")),
                text(a, "runtime"),
                a["model"].as_str().map(escape).unwrap_or_else(|| "<span class=\"muted\">default</span>".into()),
                a["version"].as_i64().unwrap_or(0).to_string(),
                when(a, "updated_at"),
            ]
        })
        .collect();
    let body = format!(
        "<h1>Agents</h1>{}<h2>New agent</h2>{}{}",
        table(&["Name", "Runtime", "Model", "Version", "Updated"], &rows, "No agents yet."),
        if message.is_empty() { String::new() } else { super::error(message) },
        form(c, "/agents", &draft.fields(true), "Create agent"),
    );
    c.page_with_status(status, "Agents", &body)
}

async fn agents(c: Console) -> Response {
    agents_page(&c, StatusCode::OK, "", &AgentForm { runtime: "claude".into(), ..AgentForm::default() }).await
}

async fn create_agent(Posted(c, f): Posted<AgentForm>) -> Response {
    let a = c.post("/api/agents", &f.body(true)).await;
    match a.data()["id"].as_str().filter(|_| a.ok()) {
        Some(id) => Redirect::to(&format!("/agents/{}", seg(id))).into_response(),
        None => agents_page(&c, a.status, &a.message(), &f).await,
    }
}

async fn agent_page(c: &Console, id: Uuid, status: StatusCode, message: &str, draft: Option<&AgentForm>) -> Response {
    let (path, versions_path) = (format!("/api/agents/{id}"), format!("/api/agents/{id}/versions"));
    let (agent, versions) = tokio::join!(c.get(&path), c.get(&versions_path));
    if !agent.ok() {
        return c.refused("Agent", &agent);
    }
    let a = agent.data();
    let current = a["version"].as_i64().unwrap_or(0);
    let rows: Vec<Vec<String>> = list(&versions)
        .iter()
        .map(|v| {
            let n = v["version"].as_i64().unwrap_or(0);
            let action = if n == current {
                "<span class=\"muted\">current</span>".to_owned()
            } else {
                format!(
                    "<form class=\"inline\" method=\"post\" action=\"/agents/{id}/rollback\">{}\
                     <input type=\"hidden\" name=\"version\" value=\"{n}\"><button type=\"submit\" class=\"quiet\">Roll back</button></form>",
                    c.csrf()
                )
            };
            vec![n.to_string(), text(&v["agent"], "name"), text(&v["agent"], "model"), when(v, "inserted_at"), action]
        })
        .collect();
    let draft = draft.cloned().unwrap_or_else(|| AgentForm::of(a));
    let name = a["name"].as_str().unwrap_or("Agent");
    let body = format!(
        "<p class=\"crumbs\"><a href=\"/agents\">Agents</a></p><h1>{}</h1>{}\
         <dl class=\"facts\"><dt>Runtime</dt><dd>{}</dd><dt>Version</dt><dd>{current}</dd><dt>Updated</dt><dd>{}</dd></dl>\
         <h2>Start a conversation</h2>{}\
         <h2>Edit</h2><p class=\"hint\">Saving makes a new version; conversations running keep theirs.</p>{}\
         <h2>Versions</h2>{}<h2>Delete</h2>{}",
        escape(name),
        if message.is_empty() { String::new() } else { super::error(message) },
        text(a, "runtime"),
        when(a, "updated_at"),
        form(c, &format!("/agents/{id}/start"), &textarea("Prompt", "prompt", "", "required rows=\"3\""), "Start"),
        form(c, &format!("/agents/{id}"), &draft.fields(false), "Save"),
        table(&["Version", "Name", "Model", "Made", ""], &rows, "No versions."),
        button(c, &format!("/agents/{id}/delete"), "Delete agent", "danger"),
    );
    c.page_with_status(status, name, &body)
}

async fn agent(c: Console, Path(id): Path<Uuid>) -> Response {
    agent_page(&c, id, StatusCode::OK, "", None).await
}

async fn update_agent(Path(id): Path<Uuid>, Posted(c, f): Posted<AgentForm>) -> Response {
    let a = c.patch(&format!("/api/agents/{id}"), &f.body(false)).await;
    if a.ok() {
        return Redirect::to(&format!("/agents/{id}")).into_response();
    }
    agent_page(&c, id, a.status, &a.message(), Some(&f)).await
}

#[derive(Deserialize)]
struct VersionForm {
    version: String,
}

async fn rollback(Path(id): Path<Uuid>, Posted(c, f): Posted<VersionForm>) -> Response {
    let version: i64 = f.version.parse().unwrap_or(0);
    let a = c.post(&format!("/api/agents/{id}/rollback"), &json!({"version": version})).await;
    c.done(&a, &format!("/agents/{id}"))
}

async fn delete_agent(Path(id): Path<Uuid>, Posted(c, _): Posted<Nothing>) -> Response {
    let a = c.delete(&format!("/api/agents/{id}")).await;
    c.done(&a, "/agents")
}

#[derive(Deserialize)]
struct StartForm {
    prompt: String,
}

/// Starts a conversation; a queued start (202) says its place in the queue.
async fn start(Path(id): Path<Uuid>, Posted(c, f): Posted<StartForm>) -> Response {
    let a: Answer = c.post("/api/conversations", &json!({"agent_id": id, "prompt": f.prompt, "queue": true})).await;
    if !a.ok() {
        return agent_page(&c, id, a.status, &a.message(), None).await;
    }
    if a.status == StatusCode::ACCEPTED {
        let position = a.data()["position"].as_i64().unwrap_or(0);
        let body = format!(
            "<p class=\"crumbs\"><a href=\"/agents/{id}\">Back to the agent</a></p><h1>Queued</h1>{}",
            notice(&format!(
                "Every machine is busy: the conversation waits in the queue at place {position} and starts when one frees up. \
                 It will appear under Conversations."
            ))
        );
        return c.page_with_status(StatusCode::ACCEPTED, "Queued", &body);
    }
    match a.data()["id"].as_str() {
        Some(conv) => Redirect::to(&format!("/conversations/{}", seg(conv))).into_response(),
        None => c.refused("Start", &a),
    }
}

async fn conversations(c: Console) -> Response {
    let (convs, agents) = tokio::join!(c.get("/api/conversations"), c.get("/api/agents"));
    if !convs.ok() {
        return c.refused("Conversations", &convs);
    }
    let names: std::collections::HashMap<&str, &str> =
        list(&agents).iter().filter_map(|a| Some((a["id"].as_str()?, a["name"].as_str()?))).collect();
    let mut all: Vec<&Value> = list(&convs).iter().collect();
    all.sort_by(|a, b| b["updated_at"].as_str().cmp(&a["updated_at"].as_str()));
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|conv| {
            let agent = conv["agent_id"].as_str().unwrap_or("");
            vec![
                format!(
                    "<a href=\"/conversations/{}\">{}</a>",
                    seg(conv["id"].as_str().unwrap_or("")),
                    escape(&conversation_title(conv))
                ),
                escape(names.get(agent).copied().unwrap_or(agent)),
                badge(conv["status"].as_str().unwrap_or("")),
                text(conv, "runtime"),
                when(conv, "updated_at"),
            ]
        })
        .collect();
    let body = format!(
        "<h1>Conversations</h1>{}",
        table(
            &["Conversation", "Agent", "Status", "Runtime", "Updated"],
            &rows,
            "No conversations yet: start one from an agent's page."
        )
    );
    c.page("Conversations", &body)
}

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/agents", get(agents).post(create_agent))
        .route("/agents/{id}", get(agent).post(update_agent))
        .route("/agents/{id}/rollback", post(rollback))
        .route("/agents/{id}/delete", post(delete_agent))
        .route("/agents/{id}/start", post(start))
        .route("/conversations", get(conversations))
}
