//! The sandbox queue (spec 4.2): starts at a concurrency ceiling wait with
//! `queue: true` (202 and a one-based position), start in FIFO order per
//! account and round robin across accounts once places free, expire, cancel,
//! re-pass the gates, and are started once across replicas. Ceilings are
//! lowered to one machine; conversations run the scripted ACP agent on real
//! machines, and terminating one frees its place.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::{Backend, Resp, TestApp, User, assert_error, scripted_agent, spawn_with};

crate::both!(
    queued_starts_answer_202_with_one_based_positions,
    an_account_holds_ten_waiting_requests_and_the_eleventh_keeps_the_ceiling_error,
    starts_with_images_or_a_sandbox_never_queue,
    waiting_requests_start_in_order_as_places_free,
    a_request_is_cancelled_only_while_queued,
    requests_belong_to_their_account,
    a_request_waiting_past_its_deadline_fails,
    a_queued_start_passes_the_credit_gate_again,
    queued_channel_starts_resume_with_their_prompt_unless_it_carries_a_permission_policy,
    accounts_take_turns_at_the_fleet_ceiling,
    a_start_cut_short_by_its_servers_death_is_never_sent_twice,
    a_burst_of_fifty_starts_all_answer_queued_past_the_ceiling,
);

const AGENT: &str = "/opt/acs/bin/scripted-agent";
/// How long a queued start may take to be noticed and run.
const WAIT: Duration = Duration::from_secs(30);

/// A server whose accounts may each run one machine, with the scripted agent bound in.
async fn app(b: Backend, extra: &[(&str, Value)]) -> TestApp {
    let bind = format!("{}:{AGENT}", scripted_agent().display());
    let mut overrides = vec![
        ("sandbox.ro_binds", json!([bind])),
        ("limits.sandboxes_per_account", json!(1)),
        ("limits.requests_per_key", json!(100_000)),
        ("queue.poll_interval_seconds", json!(0.2)),
    ];
    overrides.extend(extra.iter().cloned());
    spawn_with(b, &overrides).await
}

async fn agent(app: &TestApp, u: &User) -> Uuid {
    crate::common::acp_agent(app, u, AGENT, json!({})).await
}

async fn create(app: &TestApp, u: &User, body: Value) -> Resp {
    app.post("/api/conversations", &u.key, body).await
}

/// A conversation that holds the account's one place.
async fn occupy(app: &TestApp, u: &User, agent: Uuid) -> String {
    let r = create(app, u, json!({"agent_id": agent})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"]["id"].as_str().unwrap().to_owned()
}

/// Submits with `queue: true`, expecting 202; returns the SandboxRequest.
async fn enqueue(app: &TestApp, u: &User, mut body: Value) -> Value {
    body["queue"] = json!(true);
    let r = create(app, u, body).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    r.body["data"].clone()
}

async fn terminate(app: &TestApp, u: &User, conversation: &str) {
    let r = app.post(&format!("/api/conversations/{conversation}/terminate"), &u.key, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}

async fn request(app: &TestApp, u: &User, id: &Value) -> Value {
    let r = app.get(&format!("/api/sandbox-queue/{}", id.as_str().unwrap()), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body["data"].clone()
}

/// Waits until the request is no longer `queued`; returns it.
async fn settled(app: &TestApp, u: &User, id: &Value) -> Value {
    let until = tokio::time::Instant::now() + WAIT;
    loop {
        let r = request(app, u, id).await;
        if r["status"] != "queued" {
            return r;
        }
        assert!(tokio::time::Instant::now() < until, "still queued: {r}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn list(app: &TestApp, u: &User) -> Vec<Value> {
    let r = app.get("/api/sandbox-queue", &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body["data"].as_array().unwrap().clone()
}

/// Waits for the conversation's first turn to end; returns its prompt and status.
async fn first_turn(app: &TestApp, u: &User, conversation: &str) -> (String, String) {
    let until = tokio::time::Instant::now() + WAIT;
    loop {
        let r = app.get(&format!("/api/conversations/{conversation}/turns"), &u.key).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        if let Some(t) = r.body["data"].as_array().unwrap().first()
            && t["status"] != "running"
        {
            return (t["prompt"].as_str().unwrap().to_owned(), t["status"].as_str().unwrap().to_owned());
        }
        assert!(tokio::time::Instant::now() < until, "no finished turn: {}", r.text);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn turn_count(app: &TestApp, u: &User, conversation: &str) -> usize {
    let r = app.get(&format!("/api/conversations/{conversation}/turns"), &u.key).await;
    r.body["data"].as_array().unwrap().len()
}

fn at(v: &Value) -> time::OffsetDateTime {
    time::OffsetDateTime::parse(v.as_str().unwrap(), &time::format_description::well_known::Rfc3339).unwrap()
}

async fn queued_starts_answer_202_with_one_based_positions(b: Backend) {
    let app = app(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u).await;
    occupy(&app, &u, a).await;

    let r = create(&app, &u, json!({"agent_id": a})).await;
    assert_error(&r, StatusCode::TOO_MANY_REQUESTS, "sandbox_quota_exceeded");
    assert_eq!((r.body["active_sandboxes"].clone(), r.body["limit"].clone()), (json!(1), json!(1)));
    let r = create(&app, &u, json!({"agent_id": a, "queue": false})).await;
    assert_error(&r, StatusCode::TOO_MANY_REQUESTS, "sandbox_quota_exceeded");
    assert!(list(&app, &u).await.is_empty(), "nothing queued without the flag");

    let mut ids = Vec::new();
    for (i, title) in ["one", "two", "three"].iter().enumerate() {
        let q = enqueue(&app, &u, json!({"agent_id": a, "title": title, "channel_id": "c1"})).await;
        assert_eq!(q["status"], "queued");
        assert_eq!(q["position"], i + 1);
        assert_eq!(q["conversation_id"], Value::Null);
        assert_eq!(q["error"], Value::Null);
        assert_eq!(q["agent_id"], a.to_string());
        assert_eq!(q["channel_id"], "c1");
        assert_eq!(at(&q["expires_at"]) - at(&q["inserted_at"]), time::Duration::hours(1));
        ids.push(q["id"].clone());
    }
    let listed = list(&app, &u).await;
    assert_eq!(listed.iter().map(|r| r["id"].clone()).collect::<Vec<_>>(), ids);
    assert_eq!(listed.iter().map(|r| r["position"].clone()).collect::<Vec<_>>(), [json!(1), json!(2), json!(3)]);
    assert_eq!(request(&app, &u, &ids[1]).await["position"], 2);
}

async fn an_account_holds_ten_waiting_requests_and_the_eleventh_keeps_the_ceiling_error(b: Backend) {
    let app = app(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u).await;
    occupy(&app, &u, a).await;
    let mut ids = Vec::new();
    for i in 1..=10 {
        let q = enqueue(&app, &u, json!({"agent_id": a})).await;
        assert_eq!(q["position"], i);
        ids.push(q["id"].clone());
    }
    let r = create(&app, &u, json!({"agent_id": a, "queue": true})).await;
    assert_error(&r, StatusCode::TOO_MANY_REQUESTS, "sandbox_quota_exceeded");
    assert_eq!(r.body["limit"], 1, "the ceiling's own error: {}", r.text);
    assert_eq!(list(&app, &u).await.len(), 10);

    // A place in line frees when one is cancelled; the newcomer goes last.
    let r = app.delete(&format!("/api/sandbox-queue/{}", ids[0].as_str().unwrap()), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let q = enqueue(&app, &u, json!({"agent_id": a})).await;
    assert_eq!(q["position"], 10);

    // The bound is per account.
    let other = app.user().await;
    let oa = agent(&app, &other).await;
    occupy(&app, &other, oa).await;
    assert_eq!(enqueue(&app, &other, json!({"agent_id": oa})).await["position"], 1);
}

async fn starts_with_images_or_a_sandbox_never_queue(b: Backend) {
    let app = app(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u).await;
    let held = occupy(&app, &u, a).await;
    let image = json!([{"data": "iVBORw0KGgo=", "media_type": "image/png"}]);
    let r = create(&app, &u, json!({"agent_id": a, "queue": true, "prompt": "say: hi", "images": image})).await;
    assert_error(&r, StatusCode::TOO_MANY_REQUESTS, "sandbox_quota_exceeded");
    let r = app.get(&format!("/api/conversations/{held}"), &u.key).await;
    let sandbox = r.body["data"]["sandbox_id"].clone();
    let r = create(&app, &u, json!({"agent_id": a, "queue": true, "sandbox_id": sandbox})).await;
    assert_ne!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert!(list(&app, &u).await.is_empty());
}

async fn waiting_requests_start_in_order_as_places_free(b: Backend) {
    let app = app(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u).await;
    let held = occupy(&app, &u, a).await;
    let first = enqueue(&app, &u, json!({"agent_id": a, "prompt": "say: first", "title": "first"})).await;
    let second = enqueue(&app, &u, json!({"agent_id": a, "prompt": "say: second"})).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(request(&app, &u, &first["id"]).await["status"], "queued", "no place has freed yet");

    terminate(&app, &u, &held).await;
    // The freed place belongs to the line: a newcomer queues behind it whether or not the
    // first has started yet.
    let third = enqueue(&app, &u, json!({"agent_id": a, "prompt": "say: third"})).await;
    assert!(third["position"] == 2 || third["position"] == 3, "{third}");
    let started = settled(&app, &u, &first["id"]).await;
    assert_eq!(started["status"], "started", "{started}");
    assert_eq!(started["position"], Value::Null);
    assert_eq!(started["error"], Value::Null);
    let conversation = started["conversation_id"].as_str().expect("conversation_id once started").to_owned();
    let r = app.get(&format!("/api/conversations/{conversation}"), &u.key).await;
    assert_eq!(r.body["data"]["title"], "first", "the stored body opened it: {}", r.text);
    assert_eq!(first_turn(&app, &u, &conversation).await, ("say: first".into(), "done".into()));
    let waiting = request(&app, &u, &second["id"]).await;
    assert_eq!((waiting["status"].clone(), waiting["position"].clone()), (json!("queued"), json!(1)));

    terminate(&app, &u, &conversation).await;
    let started = settled(&app, &u, &second["id"]).await;
    assert_eq!(started["status"], "started", "{started}");
    let conversation = started["conversation_id"].as_str().unwrap().to_owned();
    assert_eq!(first_turn(&app, &u, &conversation).await, ("say: second".into(), "done".into()));
    assert_eq!(turn_count(&app, &u, &conversation).await, 1, "sent once");
    assert_eq!(request(&app, &u, &third["id"]).await["position"], 1);

    terminate(&app, &u, &conversation).await;
    let started = settled(&app, &u, &third["id"]).await;
    assert_eq!(started["status"], "started", "{started}");
    let listed = list(&app, &u).await;
    assert_eq!(listed.len(), 3, "settled requests stay listed");
    assert_eq!(listed[0]["id"], third["id"], "most recently settled first");
    assert_eq!(listed[2]["id"], first["id"]);
}

async fn a_request_is_cancelled_only_while_queued(b: Backend) {
    let app = app(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u).await;
    let held = occupy(&app, &u, a).await;
    let one = enqueue(&app, &u, json!({"agent_id": a})).await;
    let two = enqueue(&app, &u, json!({"agent_id": a})).await;
    let path = |q: &Value| format!("/api/sandbox-queue/{}", q["id"].as_str().unwrap());

    let r = app.delete(&path(&one), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["status"], "cancelled");
    assert_eq!(r.body["data"]["position"], Value::Null);
    assert_eq!(request(&app, &u, &two["id"]).await["position"], 1, "the next moves up");
    let r = app.delete(&path(&one), &u.key).await;
    assert_error(&r, StatusCode::CONFLICT, "sandbox_request_not_queued");
    assert_eq!(r.body["status"], "cancelled");

    terminate(&app, &u, &held).await;
    assert_eq!(settled(&app, &u, &two["id"]).await["status"], "started");
    let r = app.delete(&path(&two), &u.key).await;
    assert_error(&r, StatusCode::CONFLICT, "sandbox_request_not_queued");
    assert_eq!(r.body["status"], "started");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(request(&app, &u, &one["id"]).await["status"], "cancelled", "a cancelled request never starts");
}

async fn requests_belong_to_their_account(b: Backend) {
    let app = app(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u).await;
    occupy(&app, &u, a).await;
    let q = enqueue(&app, &u, json!({"agent_id": a})).await;
    let other = app.user().await;
    let path = format!("/api/sandbox-queue/{}", q["id"].as_str().unwrap());
    assert_error(&app.get(&path, &other.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.delete(&path, &other.key).await, StatusCode::NOT_FOUND, "not_found");
    assert!(list(&app, &other).await.is_empty());
    let unknown = format!("/api/sandbox-queue/{}", Uuid::now_v7());
    assert_error(&app.get(&unknown, &u.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.get("/api/sandbox-queue/nope", &u.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_eq!(request(&app, &u, &q["id"]).await["status"], "queued", "the owner's request is untouched");
}

async fn a_request_waiting_past_its_deadline_fails(b: Backend) {
    let app = app(b, &[("queue.max_wait_seconds", json!(2))]).await;
    let u = app.user().await;
    let a = agent(&app, &u).await;
    let held = occupy(&app, &u, a).await;
    let q = enqueue(&app, &u, json!({"agent_id": a, "prompt": "say: late"})).await;
    assert_eq!(at(&q["expires_at"]) - at(&q["inserted_at"]), time::Duration::seconds(2));
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(request(&app, &u, &q["id"]).await["status"], "queued", "still within its wait");
    let failed = settled(&app, &u, &q["id"]).await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"], "queue_wait_expired");
    assert_eq!(failed["conversation_id"], Value::Null);
    assert_eq!(failed["position"], Value::Null);
    // A freed place no longer starts it.
    terminate(&app, &u, &held).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(request(&app, &u, &q["id"]).await["status"], "failed");
}

async fn a_queued_start_passes_the_credit_gate_again(b: Backend) {
    let app = app(b, &[("credits.enabled", json!(true)), ("credits.initial_grant", json!(100))]).await;
    let u = app.user().await;
    let a = agent(&app, &u).await;
    let held = occupy(&app, &u, a).await;
    let q = enqueue(&app, &u, json!({"agent_id": a, "prompt": "say: paid"})).await;
    let balance =
        acs::core::credits::ledger::standing(&app.state().db, u.id.parse().unwrap()).await.unwrap().unwrap().0;
    acs::core::credits::operator::grant(&app.state().db, &u.email, -balance).await.unwrap();
    terminate(&app, &u, &held).await;
    let failed = settled(&app, &u, &q["id"]).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"], "insufficient_credits");
    assert_eq!(failed["conversation_id"], Value::Null);
}

async fn queued_channel_starts_resume_with_their_prompt_unless_it_carries_a_permission_policy(b: Backend) {
    let app = app(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u).await;
    let held = occupy(&app, &u, a).await;
    // No live conversation holds the channel yet: all three wait for a new machine.
    let opener = enqueue(&app, &u, json!({"agent_id": a, "channel_id": "ch", "fresh": true})).await;
    let policy = json!({"default": "auto_deny"});
    let guarded = enqueue(
        &app,
        &u,
        json!({"agent_id": a, "channel_id": "ch", "prompt": "say: no",
        "permission_policy": policy}),
    )
    .await;
    let resumer =
        enqueue(&app, &u, json!({"agent_id": a, "channel_id": "ch", "prompt": "say: resumed", "labels": {"k": "v"}}))
            .await;
    assert_eq!(resumer["position"], 3);

    terminate(&app, &u, &held).await;
    let opened = settled(&app, &u, &opener["id"]).await;
    assert_eq!(opened["status"], "started", "{opened}");
    let channel_conversation = opened["conversation_id"].as_str().unwrap().to_owned();

    let refused = settled(&app, &u, &guarded["id"]).await;
    assert_eq!(refused["status"], "failed");
    assert_eq!(refused["error"], "permission_policy_requires_fresh_conversation");
    assert_eq!(refused["conversation_id"], Value::Null);

    let resumed = settled(&app, &u, &resumer["id"]).await;
    assert_eq!(resumed["status"], "started", "{resumed}");
    assert_eq!(resumed["conversation_id"], channel_conversation.as_str(), "the channel's conversation resumed");
    assert_eq!(first_turn(&app, &u, &channel_conversation).await, ("say: resumed".into(), "done".into()));
    assert_eq!(turn_count(&app, &u, &channel_conversation).await, 1, "the refused prompt was never sent");
    let r = app.get(&format!("/api/conversations/{channel_conversation}"), &u.key).await;
    assert_eq!(r.body["data"]["labels"], json!({"k": "v"}), "labels merged on resume");
}

async fn accounts_take_turns_at_the_fleet_ceiling(b: Backend) {
    let app = app(b, &[("limits.sandboxes_per_account", json!(0)), ("limits.sandboxes_fleet", json!(1))]).await;
    let (ua, ub) = (app.user().await, app.user().await);
    let (aa, ab) = (agent(&app, &ua).await, agent(&app, &ub).await);
    let held = occupy(&app, &ua, aa).await;
    let r = create(&app, &ub, json!({"agent_id": ab})).await;
    assert_error(&r, StatusCode::SERVICE_UNAVAILABLE, "fleet_at_capacity");

    let a1 = enqueue(&app, &ua, json!({"agent_id": aa})).await;
    let a2 = enqueue(&app, &ua, json!({"agent_id": aa})).await;
    let b1 = enqueue(&app, &ub, json!({"agent_id": ab})).await;
    assert_eq!((a2["position"].clone(), b1["position"].clone()), (json!(2), json!(1)), "positions are per account");

    // Each freed place goes to the account served least recently, not to the oldest request.
    terminate(&app, &ua, &held).await;
    let s = settled(&app, &ua, &a1["id"]).await;
    assert_eq!(s["status"], "started", "{s}");
    assert_eq!(request(&app, &ub, &b1["id"]).await["status"], "queued");
    terminate(&app, &ua, s["conversation_id"].as_str().unwrap()).await;

    let s = settled(&app, &ub, &b1["id"]).await;
    assert_eq!(s["status"], "started", "{s}");
    assert_eq!(request(&app, &ua, &a2["id"]).await["status"], "queued", "b1 went before a2");
    terminate(&app, &ub, s["conversation_id"].as_str().unwrap()).await;

    let s = settled(&app, &ua, &a2["id"]).await;
    assert_eq!(s["status"], "started", "{s}");
}

/// A request in line as a dead server left it: claimed, its start begun, the lease run out.
async fn left_begun(app: &TestApp, u: &User, body: Value, fresh_conversation_id: Uuid) -> Value {
    use acs::core::queue::store::{self, NewRequest};
    let request = serde_json::from_value(body).unwrap();
    let new = NewRequest {
        account_id: u.id.parse().unwrap(),
        request: &request,
        team: false,
        autonomous: false,
        schedule_id: None,
        fresh_conversation_id,
    };
    let row = store::enqueue(&app.state().db, &new, 10, 3600).await.unwrap().unwrap();
    sqlx::query("UPDATE sandbox_requests SET claim = 'dead', lease_until = 1, began_at = 1 WHERE id = $1")
        .bind(row.id.to_string())
        .execute(&app.state().db.pool)
        .await
        .unwrap();
    app.state().queue.wake();
    json!(row.id)
}

async fn a_start_cut_short_by_its_servers_death_is_never_sent_twice(b: Backend) {
    let app = app(b, &[]).await;
    let u = app.user().await;
    let a = agent(&app, &u).await;
    let held = occupy(&app, &u, a).await;
    // The conversation it would have created exists: its prompt may have been sent.
    let cut = left_begun(&app, &u, json!({"agent_id": a, "prompt": "say: twice?"}), held.parse().unwrap()).await;
    let r = settled(&app, &u, &cut).await;
    assert_eq!(r["status"], "failed", "{r}");
    assert_eq!(r["error"], "prompt_delivery_unknown");
    assert_eq!(r["conversation_id"], held.as_str());
    assert_eq!(turn_count(&app, &u, &held).await, 0, "not sent again");

    // Nothing was created: it starts as if for the first time, on its chosen conversation id.
    let fresh = Uuid::now_v7();
    let retried = left_begun(&app, &u, json!({"agent_id": a, "prompt": "say: once"}), fresh).await;
    terminate(&app, &u, &held).await;
    let r = settled(&app, &u, &retried).await;
    assert_eq!(r["status"], "started", "{r}");
    assert_eq!(r["conversation_id"], fresh.to_string());
    assert_eq!(first_turn(&app, &u, &fresh.to_string()).await, ("say: once".into(), "done".into()));
}

/// Two servers on one database, both running the queue's worker: every request starts once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_start_each_request_exactly_once() {
    use acs::core::conversations::model::ConversationCreateRequest;
    use acs::core::queue::store::{self, NewRequest};

    let app = app(Backend::Postgres, &[("limits.sandboxes_per_account", json!(0))]).await;
    let replica = app.replica().await;
    let mut requests = Vec::new();
    for _ in 0..3 {
        let u = app.user().await;
        let a = agent(&app, &u).await;
        let account: Uuid = u.id.parse().unwrap();
        // Written straight into the line (no ceiling holds them back), two per account.
        for n in 0..2 {
            let body = ConversationCreateRequest { agent_id: a, title: Some(format!("r{n}")), ..Default::default() };
            let new = NewRequest {
                account_id: account,
                request: &body,
                team: false,
                autonomous: false,
                schedule_id: None,
                fresh_conversation_id: Uuid::now_v7(),
            };
            let row = store::enqueue(&app.state().db, &new, 10, 3600).await.unwrap().unwrap();
            requests.push((u.key.clone(), account, row.id));
        }
        app.state().queue.wake();
        replica.state.queue.wake();
    }
    let until = tokio::time::Instant::now() + WAIT;
    let mut conversations = std::collections::BTreeSet::new();
    for (_, account, id) in &requests {
        let row = loop {
            let row = store::get(&app.state().db, *account, *id).await.unwrap().unwrap();
            if !row.queued() {
                break row;
            }
            assert!(tokio::time::Instant::now() < until, "still queued: {row:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(row.status, "started", "{row:?}");
        assert!(conversations.insert(row.conversation_id.unwrap()), "two requests share a conversation");
    }
    for (key, account, _) in requests.iter().step_by(2) {
        let r = app.get("/api/conversations", key).await;
        let mine: Vec<&Value> = r.body["data"].as_array().unwrap().iter().collect();
        assert_eq!(mine.len(), 2, "one conversation per request of {account}: {}", r.text);
    }
    replica.shutdown().await.unwrap();
}

/// A burst of 50 creates at once from five accounts, with a fleet ceiling of
/// 20: twenty start, thirty queue (202; an account holds at most ten waiting,
/// so ten each); as each conversation's turn ends it is terminated, freeing
/// its place, and every one of the fifty answers, none refused.
async fn a_burst_of_fifty_starts_all_answer_queued_past_the_ceiling(b: Backend) {
    const N: usize = 50;
    let app = app(b, &[("limits.sandboxes_per_account", json!(N)), ("limits.sandboxes_fleet", json!(20))]).await;
    let mut users = Vec::new();
    for _ in 0..5 {
        let u = std::sync::Arc::new(app.user().await);
        let a = agent(&app, &u).await;
        users.push((u, a));
    }
    let mut creates = tokio::task::JoinSet::new();
    for i in 0..N {
        let (u, a) = users[i % users.len()].clone();
        let req = app.http.post(format!("{}/api/conversations", app.base)).bearer_auth(&u.key).json(&json!({
            "agent_id": a, "prompt": format!("say: answer {i}"), "queue": true
        }));
        creates.spawn(async move { (u, crate::common::into_resp(req.send().await.expect("request sent")).await) });
    }
    let mut started = Vec::new();
    let mut queued = Vec::new();
    while let Some(r) = creates.join_next().await {
        let (u, r) = r.unwrap();
        match r.status {
            StatusCode::CREATED => started.push((u, r.body["data"]["id"].as_str().unwrap().to_owned())),
            StatusCode::ACCEPTED => queued.push((u, r.body["data"]["id"].clone())),
            _ => panic!("a start was refused: {}", r.text),
        }
    }
    assert_eq!((started.len(), queued.len()), (20, N - 20), "the ceiling decides who waits");

    // Each started conversation answers, then gives its place up; the queue fills it.
    let app = std::sync::Arc::new(app);
    let finish = {
        let app = app.clone();
        move |u: std::sync::Arc<User>, conversation: String| {
            let app = app.clone();
            async move {
                let (prompt, status) = first_turn(&app, &u, &conversation).await;
                terminate(&app, &u, &conversation).await;
                (prompt, status)
            }
        }
    };
    let mut turns = tokio::task::JoinSet::new();
    for (u, c) in started {
        turns.spawn(finish(u, c));
    }
    for (u, id) in queued {
        let (app, finish) = (app.clone(), finish.clone());
        turns.spawn(async move {
            // The last to wait needs places that turns before it free.
            let until = tokio::time::Instant::now() + 4 * WAIT;
            let r = loop {
                let r = request(&app, &u, &id).await;
                if r["status"] != "queued" {
                    break r;
                }
                assert!(tokio::time::Instant::now() < until, "still queued: {r}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            };
            assert_eq!(r["status"], "started", "{r}");
            finish(u, r["conversation_id"].as_str().unwrap().to_owned()).await
        });
    }
    let mut answered = 0;
    while let Some(t) = turns.join_next().await {
        let (prompt, status) = t.unwrap();
        assert_eq!(status, "done", "{prompt}");
        answered += 1;
    }
    assert_eq!(answered, N);
}
