//! Several servers on one database (core/src/replicas): a server that starts
//! leaves the machines and turns of a live one alone; the work of one that
//! stops, falls silent or is killed goes on on another; a server lets go of
//! a machine another replica reset; interrupts and permission answers reach
//! the turn from any replica.

use std::time::Duration;

use acs::core::server::Running;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::Row;
use uuid::Uuid;

use crate::common::{
    Backend, Resp, TestApp, User, assert_error, finished_turns, finished_turns_within, scripted_app,
    scripted_runtime_agent,
};

fn base(server: &Running) -> String {
    format!("http://{}", server.addr)
}

async fn post_at(app: &TestApp, server: &Running, path: &str, key: &str, body: Value) -> Resp {
    app.request_at(&base(server), Method::POST, path, Some(key), Some(body)).await
}

/// (stage or stream, state, data) of every event of the conversation, oldest first.
async fn events(app: &TestApp, conv: Uuid) -> Vec<(String, String, String)> {
    let rows = sqlx::query("SELECT stream, stage, state, data FROM events WHERE conversation_id = $1 ORDER BY id")
        .bind(conv.to_string())
        .fetch_all(&app.state().db.pool)
        .await
        .unwrap();
    rows.iter()
        .map(|r| {
            let stage: Option<String> = r.get("stage");
            (
                stage.unwrap_or_else(|| r.get("stream")),
                r.get::<Option<String>, _>("state").unwrap_or_default(),
                r.get("data"),
            )
        })
        .collect()
}

fn stdout(ev: &[(String, String, String)]) -> String {
    ev.iter().filter(|e| e.0 == "stdout").map(|e| e.2.as_str()).collect()
}

/// Waits until the agent has written `text`: the turn reached it.
async fn said(app: &TestApp, conv: Uuid, text: &str) {
    for _ in 0..600 {
        if stdout(&events(app, conv).await).contains(text) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the agent never said {text:?}: {:?}", events(app, conv).await);
}

async fn setup(b: Backend) -> (TestApp, User, Uuid) {
    let app = scripted_app(b, &[]).await;
    let u = app.user().await;
    let agent = scripted_runtime_agent(&app, &u, "acp", json!({})).await;
    (app, u, agent)
}

fn conversation_id(r: &Resp) -> Uuid {
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"]["id"].as_str().unwrap().parse().unwrap()
}

async fn machine_status(app: &TestApp, conv: Uuid) -> String {
    let c = acs::core::conversations::store::get(&app.state().db, conv).await.unwrap().unwrap();
    let m = acs::core::sandboxes::store::get(&app.state().db, c.sandbox_id.unwrap()).await.unwrap().unwrap();
    m.status.as_str().to_owned()
}

async fn owner(app: &TestApp, conv: Uuid) -> Option<String> {
    sqlx::query_scalar("SELECT server_id FROM conversations WHERE id = $1")
        .bind(conv.to_string())
        .fetch_one(&app.state().db.pool)
        .await
        .unwrap()
}

async fn a_server_that_starts_leaves_a_live_servers_machines_and_turns_alone(b: Backend) {
    let (app, u, agent) = setup(b).await;
    let r = app
        .post(
            "/api/conversations",
            &u.key,
            json!({"agent_id": agent, "prompt": "say: begun\nsleep: 1500\nsay: finished"}),
        )
        .await;
    let conv = conversation_id(&r);
    said(&app, conv, "begun").await;
    let replica = app.replica().await;
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(t[0].status, "done", "{t:?}");
    let ev = events(&app, conv).await;
    assert_eq!(stdout(&ev), "begunfinished");
    assert!(ev.iter().all(|e| e.0 != "reattach"), "nothing was reattached: {ev:?}");
    assert_eq!(machine_status(&app, conv).await, "ready");
    // The machine is still served here: a second turn runs.
    let r = app.post(&format!("/api/conversations/{conv}/prompts"), &u.key, json!({"prompt": "say: again"})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(finished_turns(&app, conv, 2).await[1].status, "done");
    replica.shutdown().await.unwrap();
}

/// How a replica leaves.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Leaving {
    /// A clean stop: its row goes.
    Stops,
    /// Its row stays, last refreshed a moment ago, and its process lives.
    FallsSilent,
    /// Its row stays, last refreshed a moment ago, but its process is gone.
    IsKilled,
}

/// A turn started on a replica that then leaves ends on the server that stays.
async fn handed_over(b: Backend, how: Leaving) {
    let (app, u, agent) = setup(b).await;
    let replica = app.replica().await;
    let body = json!({"agent_id": agent, "prompt": "say: begun\nsleep: 3000\nsay: finished"});
    let conv = conversation_id(&post_at(&app, &replica, "/api/conversations", &u.key, body).await);
    said(&app, conv, "begun").await;
    let mut gone = replica.state.events.server();
    assert_eq!(owner(&app, conv).await, Some(gone.to_string()));
    let db = &app.state().db;
    if how != Leaving::Stops {
        // A clean stop removes the replica's row. A server that stops without one is played by a
        // row of its own (alive now, its process this one) that takes over what the replica
        // owns while it still runs, so nobody can take it before the stop.
        gone = Uuid::new_v4();
        let (now, scope) = (acs::core::time_fmt::now_micros(), acs::core::replicas::pid_scope());
        acs::core::replicas::store::register(db, gone, now, &scope, i64::from(std::process::id())).await.unwrap();
        for table in ["conversations", "sandboxes"] {
            let c = acs::core::conversations::store::get(db, conv).await.unwrap().unwrap();
            let id = if table == "conversations" { conv } else { c.sandbox_id.unwrap() };
            let sql = format!("UPDATE {table} SET server_id = $1 WHERE id = $2");
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(gone.to_string())
                .bind(id.to_string())
                .execute(&db.pool)
                .await
                .unwrap();
        }
    }
    replica.shutdown().await.unwrap();
    match how {
        Leaving::Stops => {}
        Leaving::FallsSilent => {
            tokio::time::sleep(Duration::from_secs(4)).await;
            assert_eq!(owner(&app, conv).await, Some(gone.to_string()), "not taken before the server falls silent");
        }
        Leaving::IsKilled => {
            let mut child = std::process::Command::new("true").spawn().unwrap();
            child.wait().unwrap();
            sqlx::query("UPDATE servers SET pid = $1 WHERE id = $2")
                .bind(i64::from(child.id()))
                .bind(gone.to_string())
                .execute(&db.pool)
                .await
                .unwrap();
        }
    }
    let t = finished_turns_within(&app, conv, 1, 45).await;
    assert_eq!(t[0].status, "done", "{t:?}");
    let here = app.state().events.server().to_string();
    assert_eq!(owner(&app, conv).await, Some(here));
    if how == Leaving::IsKilled {
        let rows: Vec<String> = sqlx::query_scalar("SELECT id FROM servers").fetch_all(&db.pool).await.unwrap();
        assert!(!rows.contains(&gone.to_string()), "a server whose process is gone is forgotten at once: {rows:?}");
    }
    let ev = events(&app, conv).await;
    assert_eq!(stdout(&ev), "begunfinished");
    let reattach: Vec<&str> = ev.iter().filter(|e| e.0 == "reattach").map(|e| e.1.as_str()).collect();
    assert_eq!(reattach, ["started", "done"], "{ev:?}");
    // The machine is served here now: its proxy and a next turn.
    let r = app.post(&format!("/api/conversations/{conv}/prompts"), &u.key, json!({"prompt": "say: again"})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(finished_turns(&app, conv, 2).await[1].status, "done");
}

async fn the_work_of_a_server_that_stops_goes_on_on_another(b: Backend) {
    handed_over(b, Leaving::Stops).await;
}

async fn the_work_of_a_server_that_falls_silent_goes_on_on_another(b: Backend) {
    handed_over(b, Leaving::FallsSilent).await;
}

async fn the_work_of_a_server_whose_process_is_gone_goes_on_on_another(b: Backend) {
    handed_over(b, Leaving::IsKilled).await;
}

async fn a_machine_reset_through_another_replica_is_let_go_here(b: Backend) {
    let (app, u, agent) = setup(b).await;
    let conv = conversation_id(
        &app.post("/api/conversations", &u.key, json!({"agent_id": agent, "prompt": "say: one"})).await,
    );
    finished_turns(&app, conv, 1).await;
    let db = &app.state().db;
    let machine = acs::core::conversations::store::get(db, conv).await.unwrap().unwrap().sandbox_id.unwrap();
    let svc = acs::core::sandboxes::service::service(app.state()).unwrap();
    assert!(svc.all().any(|p| p.served().contains(&machine)));
    let replica = app.replica().await;
    let r =
        app.request_at(&base(&replica), Method::DELETE, &format!("/api/sandboxes/{machine}"), Some(&u.key), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    // At once, before this server has let go of the old machine's proxy: the conversation goes
    // on on a new machine, whose address block cannot be the one that proxy still holds.
    let r = app.post(&format!("/api/conversations/{conv}/prompts"), &u.key, json!({"prompt": "say: two"})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(finished_turns(&app, conv, 2).await[1].status, "done");
    let fresh = acs::core::conversations::store::get(db, conv).await.unwrap().unwrap().sandbox_id.unwrap();
    assert_ne!(fresh, machine);
    for _ in 0..300 {
        if !svc.all().any(|p| p.served().contains(&machine)) {
            assert!(svc.all().any(|p| p.served().contains(&fresh)));
            replica.shutdown().await.unwrap();
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server still serves a machine another replica reset");
}

crate::both!(
    a_machine_reset_through_another_replica_is_let_go_here,
    a_server_that_starts_leaves_a_live_servers_machines_and_turns_alone,
    the_work_of_a_server_that_stops_goes_on_on_another,
    the_work_of_a_server_that_falls_silent_goes_on_on_another,
    the_work_of_a_server_whose_process_is_gone_goes_on_on_another,
);

/// The `request` stage events: (state, data).
fn requests(ev: &[(String, String, String)]) -> Vec<(String, Value)> {
    ev.iter().filter(|e| e.0 == "request").map(|e| (e.1.clone(), serde_json::from_str(&e.2).unwrap())).collect()
}

// Control requests travel over PostgreSQL's NOTIFY; SQLite serves one server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_answer_sent_to_another_replica_reaches_the_turn() {
    let (app, u, agent) = setup(Backend::Postgres).await;
    let body = json!({"agent_id": agent, "prompt": "permission: t1 Run ls\nsay: end"});
    let conv = conversation_id(&app.post("/api/conversations", &u.key, body).await);
    let mut asked = None;
    for _ in 0..400 {
        if let Some((_, data)) = requests(&events(&app, conv).await).into_iter().find(|(s, _)| s == "started") {
            asked = Some(data);
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let request_id = asked.expect("a permission request")["request_id"].as_str().unwrap().to_owned();
    let replica = app.replica().await;
    let path = format!("/api/conversations/{conv}/permissions/{request_id}");
    let r = post_at(&app, &replica, &path, &u.key, json!({"option_id": "nope"})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "unknown_option");
    let other = format!("/api/conversations/{conv}/permissions/999");
    let r = post_at(&app, &replica, &other, &u.key, json!({"option_id": "allow-once"})).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.text);
    let r = post_at(&app, &replica, &path, &u.key, json!({"option_id": "allow-once"})).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(t[0].status, "done", "{t:?}");
    let ev = events(&app, conv).await;
    assert!(stdout(&ev).contains("permission: allow-once") && stdout(&ev).ends_with("end"), "{}", stdout(&ev));
    let r = requests(&ev);
    assert_eq!(r[1].1, json!({"request_id": request_id, "outcome": "selected", "option_id": "allow-once"}));
    replica.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_sent_to_another_replica_stops_the_turn() {
    let (app, u, agent) = setup(Backend::Postgres).await;
    let body = json!({"agent_id": agent, "prompt": "say: begun\nsleep: 30000\nsay: never"});
    let conv = conversation_id(&app.post("/api/conversations", &u.key, body).await);
    said(&app, conv, "begun").await;
    let replica = app.replica().await;
    let r = post_at(&app, &replica, &format!("/api/conversations/{conv}/interrupt"), &u.key, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["interrupted"], true);
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(t[0].status, "interrupted", "{t:?}");
    assert_eq!(t[0].stop_reason.as_deref(), Some("cancelled"), "the agent was asked to stop, not killed: {t:?}");
    assert!(!stdout(&events(&app, conv).await).contains("never"));
    replica.shutdown().await.unwrap();
}
