//! `/team` and `/team/{agent_id}`: teammates (agents with a stable
//! conversation) and their cron schedules with the next run.

use axum::Router;
use axum::extract::Path;
use axum::response::Response;
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{
    Console, Nothing, Posted, badge, button, conversation_title, escape, form, input, list, seg, select, table, text,
    textarea, when,
};
use crate::state::AppState;

async fn team(c: Console) -> Response {
    let (team, agents) = tokio::join!(c.get("/api/team"), c.get("/api/agents"));
    if !team.ok() {
        return c.refused("Team", &team);
    }
    let rows: Vec<Vec<String>> = list(&team)
        .iter()
        .map(|t| {
            let agent = t["agent_id"].as_str().unwrap_or("");
            let conv = match t["conversation"].as_object() {
                Some(_) => format!(
                    "<a href=\"/conversations/{}\">{}</a> {}",
                    seg(t["conversation"]["id"].as_str().unwrap_or("")),
                    escape(&conversation_title(&t["conversation"])),
                    badge(t["conversation"]["status"].as_str().unwrap_or(""))
                ),
                None => "<span class=\"muted\">none yet</span>".to_owned(),
            };
            vec![
                format!("<a href=\"/team/{}\">{}</a>", seg(agent), text(&t["agent"], "name")),
                conv,
                when(&t["last_turn"], "inserted_at"),
                button(&c, &format!("/team/{}/remove", seg(agent)), "Remove", "danger"),
            ]
        })
        .collect();
    let on_team: Vec<&str> = list(&team).iter().filter_map(|t| t["agent_id"].as_str()).collect();
    let choices: Vec<(String, String)> = list(&agents)
        .iter()
        .filter(|a| a["id"].as_str().is_some_and(|id| !on_team.contains(&id)))
        .map(|a| (a["id"].as_str().unwrap_or("").to_owned(), a["name"].as_str().unwrap_or("").to_owned()))
        .collect();
    let add = if choices.is_empty() {
        "<p class=\"muted\">Every agent is on the team (or there are none yet).</p>".to_owned()
    } else {
        let opts: Vec<(&str, &str)> = choices.iter().map(|(v, t)| (v.as_str(), t.as_str())).collect();
        form(&c, "/team", &select("Agent", "agent_id", &opts, ""), "Add to team")
    };
    let body = format!(
        "<h1>Team</h1><p class=\"hint\">A teammate keeps one conversation; messages and schedules open turns in it.</p>{}\
         <h2>Add a teammate</h2>{add}",
        table(&["Teammate", "Conversation", "Last turn", ""], &rows, "No teammates yet."),
    );
    c.page("Team", &body)
}

async fn teammate(c: Console, Path(agent): Path<Uuid>) -> Response {
    let (a, schedules) =
        tokio::join!(c.get(format!("/api/agents/{agent}")), c.get(format!("/api/team/{agent}/schedules")));
    if !schedules.ok() {
        return c.refused("Teammate", &schedules);
    }
    let here = format!("/team/{agent}");
    let rows: Vec<Vec<String>> = list(&schedules)
        .iter()
        .map(|s| {
            let id = s["id"].as_str().unwrap_or("");
            let last = match s["last_error"].as_str() {
                Some(e) => format!("{} <span class=\"error\">{}</span>", when(s, "last_run_at"), escape(e)),
                None => when(s, "last_run_at"),
            };
            vec![
                text(s, "name"),
                format!("<code>{}</code>", text(s, "cron")),
                escape(s["prompt"].as_str().unwrap_or("")),
                if s["enabled"] == true { when(s, "next_run_at") } else { badge("disabled") },
                last,
                button(&c, &format!("{here}/schedules/{}/delete", seg(id)), "Delete", "danger"),
            ]
        })
        .collect();
    let name = a.data()["name"].as_str().filter(|_| a.ok()).unwrap_or("Teammate");
    let body = format!(
        "<p class=\"crumbs\"><a href=\"/team\">Team</a></p><h1>{}</h1><h2>Schedules</h2>{}\
         <h2>New schedule</h2>{}",
        escape(name),
        table(&["Name", "When (UTC)", "Prompt", "Next run", "Last run", ""], &rows, "No schedules."),
        form(
            &c,
            &format!("{here}/schedules"),
            &format!(
                "{}<p class=\"hint\">Five cron fields in UTC (minute hour day month weekday), or @hourly, @daily, @weekly.</p>{}{}",
                input("Cron", "cron", "text", "", "required placeholder=\"0 9 * * 1-5\""),
                input("Name", "name", "text", "", ""),
                textarea("Prompt", "prompt", "", "required rows=\"3\""),
            ),
            "Create schedule"
        ),
    );
    c.page(name, &body)
}

#[derive(Deserialize)]
struct AddForm {
    agent_id: String,
}

#[derive(Deserialize)]
struct ScheduleForm {
    cron: String,
    #[serde(default)]
    name: String,
    prompt: String,
}

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/team",
            get(team).post(|Posted(c, f): Posted<AddForm>| async move {
                let a = c.put(&format!("/api/team/{}", seg(&f.agent_id)), &json!({})).await;
                c.done(&a, "/team")
            }),
        )
        .route("/team/{agent}", get(teammate))
        .route(
            "/team/{agent}/remove",
            post(|Path(agent): Path<Uuid>, Posted(c, _): Posted<Nothing>| async move {
                let a = c.delete(&format!("/api/team/{agent}")).await;
                c.done(&a, "/team")
            }),
        )
        .route(
            "/team/{agent}/schedules",
            post(|Path(agent): Path<Uuid>, Posted(c, f): Posted<ScheduleForm>| async move {
                let mut body = json!({"cron": f.cron.trim(), "prompt": f.prompt});
                if !f.name.trim().is_empty() {
                    body["name"] = Value::String(f.name.trim().to_owned());
                }
                let a = c.post(&format!("/api/team/{agent}/schedules"), &body).await;
                c.done(&a, &format!("/team/{agent}"))
            }),
        )
        .route(
            "/team/{agent}/schedules/{id}/delete",
            post(|Path((agent, id)): Path<(Uuid, Uuid)>, Posted(c, _): Posted<Nothing>| async move {
                let a = c.delete(&format!("/api/team/{agent}/schedules/{id}")).await;
                c.done(&a, &format!("/team/{agent}"))
            }),
        )
}
