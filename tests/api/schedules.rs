//! Teammate cron schedules (spec 2.6, 4.2, 8) on both databases: the API
//! and its bounds, `next_run_at` checked against an independent cron
//! library (the `cron` crate), and firing on the test clock
//! (`team.clock_offset_seconds`): once per due time, into the teammate's
//! conversation or a fresh one, `teammate was busy`, a run missed while the
//! server was down firing once, and two replicas firing each schedule once.

use std::str::FromStr;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use crate::common::{Backend, Resp, TestApp, User, assert_error};
use crate::common::{finished_turns, turns};
use crate::team::{agent, app_with_agent, conversation_of, join, message, team_stream};

fn micros(v: &Value) -> i64 {
    let t = OffsetDateTime::parse(v.as_str().unwrap_or_else(|| panic!("a time: {v}")), &Rfc3339).unwrap();
    (t.unix_timestamp_nanos() / 1000) as i64
}

/// A weekday field with each day number (0 to 7, 0 and 7 Sunday) written as its name; step
/// numbers stay numbers.
fn named_weekdays(field: &str) -> String {
    const DAYS: [&str; 8] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    let name = |d: &str| d.parse::<usize>().map_or(d.to_owned(), |n| DAYS[n].to_owned());
    let item = |item: &str| {
        let (range, step) = item.split_once('/').map_or((item, None), |(r, s)| (r, Some(s)));
        let range: Vec<String> = range.split('-').map(name).collect();
        match step {
            Some(step) => format!("{}/{step}", range.join("-")),
            None => range.join("-"),
        }
    };
    field.split(',').map(item).collect::<Vec<_>>().join(",")
}

/// The first time `expr` matches strictly after `after_micros`, by the `cron` crate.
fn independent_next(expr: &str, after_micros: i64) -> i64 {
    // The `cron` crate wants a seconds field; its names stand alone (it spells `@annually` `@yearly`);
    // it numbers weekdays from 1 = Sunday, so weekdays are given to it by name.
    let expr = match expr {
        "@annually" => "@yearly".to_owned(),
        e if e.starts_with('@') => e.to_owned(),
        e => {
            let mut fields: Vec<&str> = e.split_whitespace().collect();
            let weekdays = named_weekdays(fields[4]);
            fields[4] = &weekdays;
            format!("0 {}", fields.join(" "))
        }
    };
    let schedule = cron::Schedule::from_str(&expr).unwrap();
    let after = chrono::DateTime::from_timestamp_micros(after_micros).unwrap();
    schedule.after(&after).next().unwrap().timestamp_micros()
}

async fn create(app: &TestApp, u: &User, agent: Uuid, body: Value) -> Resp {
    app.post(&format!("/api/team/{agent}/schedules"), &u.key, body).await
}

async fn patch(app: &TestApp, u: &User, agent: Uuid, id: &Value, body: Value) -> Resp {
    let path = format!("/api/team/{agent}/schedules/{}", id.as_str().unwrap());
    app.request(Method::PATCH, &path, Some(&u.key), Some(body)).await
}

async fn schedule(app: &TestApp, u: &User, agent: Uuid, id: &Value) -> Value {
    let r = app.get(&format!("/api/team/{agent}/schedules"), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body["data"].as_array().unwrap().iter().find(|s| &s["id"] == id).cloned().expect("the schedule is listed")
}

fn outcome(s: &Value) -> (Value, Value) {
    (s["last_conversation_id"].clone(), s["last_error"].clone())
}

/// Waits until the schedule has run after `before` (the schedule as read
/// earlier, or none) and recorded an outcome. A run's outcome stays until
/// the next run settles, so after `before` a new one must differ from it.
async fn ran(app: &TestApp, u: &User, agent: Uuid, id: &Value, before: Option<&Value>) -> Value {
    for _ in 0..300 {
        let s = schedule(app, u, agent, id).await;
        let recorded = outcome(&s) != (Value::Null, Value::Null);
        let new = before.is_none_or(|b| s["last_run_at"] != b["last_run_at"] && outcome(&s) != outcome(b));
        if recorded && new {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the schedule did not run: {}", schedule(app, u, agent, id).await);
}

/// Restarts the server with its schedule clock reading `lead` seconds before `at` (microseconds).
async fn clock_before(app: &mut TestApp, at: i64, lead: f64) {
    let wall = (OffsetDateTime::now_utc().unix_timestamp_nanos() / 1000) as i64;
    let offset = (at - wall) as f64 / 1e6 - lead;
    app.restart_with(&[("team.clock_offset_seconds", json!(offset))]).await;
}

async fn schedules_keep_every_field_and_their_bounds(b: Backend) {
    let app = app_with_agent(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let body = json!({"cron": "*/5 * * * *", "prompt": "say: hi"});
    assert_error(&create(&app, &u, a, body.clone()).await, StatusCode::NOT_FOUND, "not_found");
    join(&app, &u, a).await;

    let r = create(&app, &u, a, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let s = &r.body["data"];
    assert_eq!(
        (s["agent_id"].clone(), s["cron"].clone(), s["prompt"].clone()),
        (json!(a), json!("*/5 * * * *"), json!("say: hi"))
    );
    assert_eq!(
        (s["enabled"].clone(), s["one_off"].clone(), s["name"].clone()),
        (json!(true), json!(false), Value::Null)
    );
    for field in ["last_run_at", "last_conversation_id", "last_error"] {
        assert_eq!(s[field], Value::Null, "{field}");
    }
    assert_eq!(micros(&s["next_run_at"]), independent_next("*/5 * * * *", micros(&s["inserted_at"])));
    assert!(s["updated_at"].is_string());

    for expr in [
        "0 9 * * 1-5",
        "30 4 1 * *",
        "15 */6 * * *",
        "@yearly",
        "@annually",
        "@monthly",
        "@weekly",
        "@daily",
        "@hourly",
    ] {
        let r = create(&app, &u, a, json!({"cron": expr, "prompt": "p"})).await;
        assert_eq!(r.status, StatusCode::CREATED, "{expr}: {}", r.text);
        let s = &r.body["data"];
        assert_eq!(micros(&s["next_run_at"]), independent_next(expr, micros(&s["inserted_at"])), "{expr}");
    }
    let r = create(&app, &u, a, json!({"cron": "@midnight", "prompt": "p"})).await;
    assert_eq!(
        micros(&r.body["data"]["next_run_at"]),
        independent_next("@daily", micros(&r.body["data"]["inserted_at"]))
    );

    // Refusals name the field.
    for (body, field) in [
        (json!({"cron": "@reboot", "prompt": "p"}), "cron"),
        (json!({"cron": "* * * *", "prompt": "p"}), "cron"),
        (json!({"cron": "0 * * * * *", "prompt": "p"}), "cron"),
        (json!({"cron": "61 * * * *", "prompt": "p"}), "cron"),
        (json!({"cron": "0 0 30 2 *", "prompt": "p"}), "cron"),
        (json!({"cron": "@often", "prompt": "p"}), "cron"),
        (json!({"cron": "@daily", "prompt": ""}), "prompt"),
        (json!({"cron": "@daily", "prompt": "p".repeat(20_001)}), "prompt"),
        (json!({"cron": "@daily", "prompt": "p", "name": "n".repeat(121)}), "name"),
        (json!({"prompt": "p"}), "cron"),
    ] {
        let r = create(&app, &u, a, body).await;
        assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
        assert!(r.body["errors"][field].is_array(), "{field}: {}", r.text);
    }
    // The bounds themselves pass.
    let r = create(&app, &u, a, json!({"cron": "@daily", "prompt": "p".repeat(20_000), "name": "é".repeat(120)})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let r = create(&app, &u, a, json!({"cron": "@daily", "prompt": "p"})).await;
    assert_eq!(r.status, StatusCode::CREATED);

    // Disabled: no next run; enabled again: the next one from now.
    let r = create(
        &app,
        &u,
        a,
        json!({"cron": "0 12 * * *", "prompt": "p", "enabled": false, "name": "noon", "one_off": true}),
    )
    .await;
    let s = r.body["data"].clone();
    assert_eq!(
        (s["enabled"].clone(), s["one_off"].clone(), s["name"].clone()),
        (json!(false), json!(true), json!("noon"))
    );
    assert_eq!(s["next_run_at"], Value::Null);
    let r = patch(&app, &u, a, &s["id"], json!({"enabled": true, "name": null})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let s2 = &r.body["data"];
    assert_eq!(
        (s2["name"].clone(), s2["prompt"].clone(), s2["one_off"].clone()),
        (Value::Null, json!("p"), json!(true))
    );
    assert_eq!(micros(&s2["next_run_at"]), independent_next("0 12 * * *", micros(&s2["updated_at"])));
    let r = patch(&app, &u, a, &s["id"], json!({"cron": "@reboot"})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert!(r.body["errors"]["cron"].is_array(), "{}", r.text);
    let r = patch(&app, &u, a, &s["id"], json!({"prompt": "p".repeat(20_001)})).await;
    assert!(r.body["errors"]["prompt"].is_array(), "{}", r.text);

    // Another account sees none of it.
    let other = app.user().await;
    assert_error(
        &patch(&app, &other, a, &s["id"], json!({"enabled": false})).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(&app.get(&format!("/api/team/{a}/schedules"), &other.key).await, StatusCode::NOT_FOUND, "not_found");

    let path = format!("/api/team/{a}/schedules/{}", s["id"].as_str().unwrap());
    assert_eq!(app.delete(&path, &u.key).await.status, StatusCode::NO_CONTENT);
    assert_error(&app.delete(&path, &u.key).await, StatusCode::NOT_FOUND, "not_found");
    let listed = app.get(&format!("/api/team/{a}/schedules"), &u.key).await.body["data"].as_array().unwrap().len();
    assert_eq!(listed, 13);
    let actions: Vec<String> = app.get("/api/audit", &u.key).await.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap().to_owned())
        .collect();
    for action in ["team.schedule.created", "team.schedule.updated", "team.schedule.deleted"] {
        assert!(actions.iter().any(|a| a == action), "{action} in {actions:?}");
    }
    // Schedules go with their teammate.
    assert_eq!(app.delete(&format!("/api/team/{a}"), &u.key).await.status, StatusCode::NO_CONTENT);
    join(&app, &u, a).await;
    assert_eq!(app.get(&format!("/api/team/{a}/schedules"), &u.key).await.body["data"], json!([]));
}

async fn a_due_schedule_fires_once_and_a_missed_one_fires_once_on_start(b: Backend) {
    let mut app = app_with_agent(b, &[("team.tick_seconds", json!(0.1))]).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    join(&app, &u, a).await;
    let r = create(&app, &u, a, json!({"cron": "* * * * *", "prompt": "say: tick"})).await;
    let id = r.body["data"]["id"].clone();
    let due = micros(&r.body["data"]["next_run_at"]);

    clock_before(&mut app, due, 1.5).await;
    let mut sse = team_stream(&app, &u.key, None).await;
    let s = ran(&app, &u, a, &id, None).await;
    assert_eq!(s["last_error"], Value::Null, "{s}");
    let last_run = micros(&s["last_run_at"]);
    assert!(last_run >= due, "{s}");
    assert_eq!(micros(&s["next_run_at"]), due + 60_000_000, "{s}");
    assert_eq!(micros(&s["next_run_at"]), independent_next("* * * * *", last_run));
    let conv: Uuid = s["last_conversation_id"].as_str().unwrap().parse().unwrap();
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(
        (t[0].origin.as_str(), t[0].prompt.as_str(), t[0].client_request_id.as_deref()),
        ("autonomous", "say: tick", None)
    );
    let (f, _) = sse.until(Some("schedule")).await;
    assert_eq!(f.data, json!({"reason": "changed"}));
    // The run went into the teammate's own conversation.
    let team = app.get("/api/team", &u.key).await;
    assert_eq!(team.body["data"][0]["conversation"]["id"], json!(conv), "{}", team.text);
    // Nothing more until the next minute.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(turns(&app, conv).await.len(), 1);
    assert_eq!(micros(&schedule(&app, &u, a, &id).await["last_run_at"]), last_run);

    // Down across three due times: one run on start, the next time counted from now.
    clock_before(&mut app, due + 180_000_000, -0.5).await;
    // The same outcome as before: wait for the run itself.
    for _ in 0..300 {
        if micros(&schedule(&app, &u, a, &id).await["last_run_at"]) > last_run {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let s = schedule(&app, &u, a, &id).await;
    assert_eq!(s["last_conversation_id"], json!(conv), "{s}");
    assert_eq!(micros(&s["next_run_at"]), due + 240_000_000, "{s}");
    finished_turns(&app, conv, 2).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(turns(&app, conv).await.len(), 2, "a missed run fires once, not once per missed time");
}

async fn a_busy_teammate_is_recorded_and_one_off_runs_open_fresh_conversations(b: Backend) {
    let mut app = app_with_agent(b, &[("team.tick_seconds", json!(0.1))]).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    join(&app, &u, a).await;
    let own = conversation_of(&message(&app, &u.key, a, json!({"prompt": "say: warm"})).await);
    finished_turns(&app, own, 1).await;
    let r = create(&app, &u, a, json!({"cron": "* * * * *", "prompt": "say: scheduled"})).await;
    let own_id = r.body["data"]["id"].clone();
    let r = create(&app, &u, a, json!({"cron": "* * * * *", "prompt": "say: fresh", "one_off": true})).await;
    let fresh_id = r.body["data"]["id"].clone();
    let due = micros(&r.body["data"]["next_run_at"]);

    clock_before(&mut app, due, 3.0).await;
    let r = message(&app, &u.key, a, json!({"prompt": "say: long\nsleep: 8000"})).await;
    assert_eq!(conversation_of(&r), own);
    let busy = ran(&app, &u, a, &own_id, None).await;
    assert_eq!(outcome(&busy), (Value::Null, json!("teammate was busy")), "{busy}");
    assert!(!busy["next_run_at"].is_null());

    // A one-off run opens its own conversation, with the teammate's agent, each time.
    let s = ran(&app, &u, a, &fresh_id, None).await;
    assert_eq!(s["last_error"], Value::Null, "{s}");
    let first: Uuid = s["last_conversation_id"].as_str().unwrap().parse().unwrap();
    assert_ne!(first, own);
    let t = finished_turns(&app, first, 1).await;
    assert_eq!((t[0].origin.as_str(), t[0].prompt.as_str()), ("autonomous", "say: fresh"));
    finished_turns(&app, own, 2).await;

    clock_before(&mut app, due + 60_000_000, 1.0).await;
    let s = ran(&app, &u, a, &fresh_id, Some(&s)).await;
    let second: Uuid = s["last_conversation_id"].as_str().unwrap().parse().unwrap();
    assert!(second != first && second != own, "{s}");
    finished_turns(&app, second, 1).await;
    // The scheduled run into the teammate's conversation went through once it was free.
    let s = ran(&app, &u, a, &own_id, Some(&busy)).await;
    assert_eq!(s["last_conversation_id"], json!(own), "{s}");
    assert_eq!(s["last_error"], Value::Null);
    let listed = app.get(&format!("/api/team/{a}/conversations"), &u.key).await;
    assert_eq!(listed.body["data"].as_array().unwrap().len(), 3, "{}", listed.text);
}

async fn a_run_waiting_in_the_sandbox_queue_is_recorded_when_it_starts(b: Backend) {
    let overrides = [
        ("team.tick_seconds", json!(0.1)),
        ("limits.sandboxes_per_account", json!(1)),
        ("queue.poll_interval_seconds", json!(0.2)),
    ];
    let mut app = app_with_agent(b, &overrides).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    join(&app, &u, a).await;
    let r = create(&app, &u, a, json!({"cron": "* * * * *", "prompt": "say: queued run", "one_off": true})).await;
    let id = r.body["data"]["id"].clone();
    clock_before(&mut app, micros(&r.body["data"]["next_run_at"]), 3.0).await;
    // The account's one machine is taken when the run comes due.
    let holder = crate::common::create_conversation(&app, &u, json!({"agent_id": a})).await;
    for _ in 0..300 {
        if !schedule(&app, &u, a, &id).await["last_run_at"].is_null() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Fired without `queue: true`, it waits at the ceiling; nothing recorded yet.
    let s = schedule(&app, &u, a, &id).await;
    assert_eq!(outcome(&s), (Value::Null, Value::Null), "{s}");
    // `last_run_at` is stamped by the claim; the run reaches the queue a moment later.
    let mut queued = app.get("/api/sandbox-queue", &u.key).await;
    for _ in 0..300 {
        if queued.body["data"].as_array().is_some_and(|l| !l.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        queued = app.get("/api/sandbox-queue", &u.key).await;
    }
    assert_eq!(queued.body["data"].as_array().map(Vec::len), Some(1), "{}", queued.text);
    assert_eq!(outcome(&schedule(&app, &u, a, &id).await), (Value::Null, Value::Null));

    let holder = holder["id"].as_str().unwrap();
    assert_eq!(
        app.post(&format!("/api/conversations/{holder}/terminate"), &u.key, json!({})).await.status,
        StatusCode::OK
    );
    let s = ran(&app, &u, a, &id, None).await;
    assert_eq!(s["last_error"], Value::Null, "{s}");
    let conv: Uuid = s["last_conversation_id"].as_str().unwrap().parse().unwrap();
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!((t[0].origin.as_str(), t[0].prompt.as_str()), ("autonomous", "say: queued run"));
}

async fn two_replicas_fire_each_schedule_once(b: Backend) {
    let mut app = app_with_agent(b, &[("team.tick_seconds", json!(0.05))]).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    join(&app, &u, a).await;
    let mut ids = Vec::new();
    let mut due = 0;
    for i in 0..3 {
        let r =
            create(&app, &u, a, json!({"cron": "* * * * *", "prompt": format!("say: run {i}"), "one_off": true})).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        ids.push(r.body["data"]["id"].clone());
        due = micros(&r.body["data"]["next_run_at"]);
    }
    clock_before(&mut app, due, 1.5).await;
    let replica = app.replica().await;
    let mut conversations = Vec::new();
    for id in &ids {
        let s = ran(&app, &u, a, id, None).await;
        assert_eq!(s["last_error"], Value::Null, "{s}");
        conversations.push(s["last_conversation_id"].clone());
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let listed = app.get(&format!("/api/team/{a}/conversations"), &u.key).await;
    let mut all: Vec<Value> = listed.body["data"].as_array().unwrap().iter().map(|c| c["id"].clone()).collect();
    all.sort_by_key(|v| v.to_string());
    conversations.sort_by_key(|v| v.to_string());
    assert_eq!(all, conversations, "one run per schedule across both servers");
    replica.shutdown().await.unwrap();
}

/// Puts a run of `schedule` in hand under `run_id` with a lease already run
/// out, as a server that claimed it and died before handing it on leaves it.
async fn leave_in_hand(app: &TestApp, schedule: &Value, run_id: Uuid) {
    sqlx::query("UPDATE team_schedules SET run_id = $2, run_lease_until = $3 WHERE id = $1")
        .bind(schedule.as_str().unwrap())
        .bind(run_id.to_string())
        .bind((OffsetDateTime::now_utc().unix_timestamp_nanos() / 1000) as i64 - 1_000_000)
        .execute(&app.state().db.pool)
        .await
        .unwrap();
}

async fn in_hand(app: &TestApp, schedule: &Value) -> Option<String> {
    sqlx::query_scalar("SELECT run_id FROM team_schedules WHERE id = $1")
        .bind(schedule.as_str().unwrap())
        .fetch_one(&app.state().db.pool)
        .await
        .unwrap()
}

async fn a_run_cut_short_by_a_crash_is_finished_once(b: Backend) {
    let app = app_with_agent(b, &[("team.tick_seconds", json!(0.1))]).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    join(&app, &u, a).await;
    // Not due for months: every run below is one a dead server left in hand.
    let own =
        create(&app, &u, a, json!({"cron": "0 0 1 1 *", "prompt": "say: recovered"})).await.body["data"]["id"].clone();

    let r = message(&app, &u.key, a, json!({"prompt": "say: hello"})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let conv: Uuid = r.body["data"]["conversation_id"].as_str().unwrap().parse().unwrap();
    finished_turns(&app, conv, 1).await;

    // Claimed, then the server died before handing it on: taken up, sent once, under its run id.
    let run = Uuid::now_v7();
    leave_in_hand(&app, &own, run).await;
    let s = ran(&app, &u, a, &own, None).await;
    assert_eq!(s["last_conversation_id"], json!(conv), "{s}");
    let t = finished_turns(&app, conv, 2).await;
    assert_eq!((t[1].id, t[1].prompt.as_str(), t[1].origin.as_str()), (run, "say: recovered", "autonomous"));
    for _ in 0..100 {
        if in_hand(&app, &own).await.is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(in_hand(&app, &own).await, None, "the run was released");

    // Handed on, then the server died before releasing it: found, not sent again.
    leave_in_hand(&app, &own, run).await;
    for _ in 0..100 {
        if in_hand(&app, &own).await.is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(in_hand(&app, &own).await, None);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(turns(&app, conv).await.len(), 2, "the prompt was not sent twice");
    assert_eq!(schedule(&app, &u, a, &own).await["last_conversation_id"], json!(conv));

    // A one-off run opens its fresh conversation under the run id.
    let fresh = create(&app, &u, a, json!({"cron": "0 0 1 1 *", "prompt": "say: fresh", "one_off": true})).await.body
        ["data"]["id"]
        .clone();
    let run = Uuid::now_v7();
    leave_in_hand(&app, &fresh, run).await;
    let s = ran(&app, &u, a, &fresh, None).await;
    assert_eq!(s["last_conversation_id"], json!(run), "{s}");
    assert_eq!(finished_turns(&app, run, 1).await[0].prompt, "say: fresh");
}

crate::both!(
    schedules_keep_every_field_and_their_bounds,
    a_due_schedule_fires_once_and_a_missed_one_fires_once_on_start,
    a_busy_teammate_is_recorded_and_one_off_runs_open_fresh_conversations,
    a_run_waiting_in_the_sandbox_queue_is_recorded_when_it_starts,
    two_replicas_fire_each_schedule_once,
    a_run_cut_short_by_a_crash_is_finished_once,
);
