//! Signed webhooks (spec 2.7, 3.2, 6.1; docs/webhooks.md), black box: the
//! endpoints API and its rules, then real deliveries to a real HTTP
//! receiver (tests/api/receiver.rs), checked as a receiver would check
//! them: the signature over the raw bytes (here and with Stripe's stock
//! verifier), the headers, the payload, retries, timeouts, auto-disable,
//! redelivery, the address refusals, crashes and replicas.
//!
//! Stage events come from two sources. Where the events of a real
//! conversation matter (what is sent, filters) the scripted agent runs a
//! real turn. Where many or precisely placed events are needed (retries,
//! auto-disable, replicas, paging) they are written through the event log's
//! own writer to a conversation row, the way every stage event is written;
//! the webhook side is still only observed over HTTP.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use acs_core::AppState;
use acs_core::conversations::store::{self, NewConversation};
use acs_core::events::{self, NewEvent, Scope, StageState};
use hmac::{Hmac, KeyInit, Mac};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sha2::Sha256;
use uuid::Uuid;

use crate::common::{Backend, Resp, TestApp, User, assert_error, assert_refused, scripted_agent, spawn_with};
use crate::receiver::{Received, Receiver, Reply, WAIT};

crate::both!(
    endpoints_are_created_read_updated_and_deleted,
    endpoints_belong_to_their_account_and_changes_need_a_full_scope_key,
    endpoint_urls_are_checked_at_save,
    http_urls_are_accepted_when_the_instance_allows_them,
    descriptions_and_event_type_filters_are_checked_at_save,
    rotating_the_secret_signs_later_deliveries_with_the_new_secret_only,
    a_real_turn_is_delivered_signed_with_the_documented_headers_and_payload,
    each_endpoint_receives_exactly_the_types_its_filters_match,
    failures_and_redirects_are_retried_with_the_same_body_and_kept_in_the_log,
    an_attempt_that_times_out_is_retried,
    five_exhausted_events_in_a_row_disable_the_endpoint_until_resumed,
    a_success_after_fewer_than_five_exhausted_events_resets_the_count,
    an_owner_disabled_endpoint_holds_queued_deliveries_until_resumed,
    a_redelivery_uses_the_current_url_and_secret,
    delivery_reads_never_mix_two_states,
    private_and_reserved_addresses_are_refused_before_any_request,
    a_delivery_in_flight_when_the_server_stops_is_sent_after_the_restart,
    a_delivery_abandoned_at_shutdown_is_claimed_again_once_its_lease_runs_out,
    deliveries_older_than_the_retention_are_deleted,
    the_delivery_log_pages_filters_and_stays_in_its_account,
    with_the_flag_off_the_routes_answer_not_enabled_and_events_enqueue_nothing,
);

const AGENT: &str = "/opt/acs/bin/scripted-agent";

/// Conversation stages and states of spec 6.1's table: the types that are sent.
const TABLE: &[(&str, &[&str])] = &[
    ("provision", &["started", "done", "failed"]),
    ("clone", &["started", "done", "failed"]),
    ("packages", &["started", "done", "failed"]),
    ("network", &["started", "done", "failed"]),
    ("broker", &["started", "done", "failed"]),
    ("setup", &["started", "done", "failed"]),
    ("checkpoint_restore", &["started", "done", "failed"]),
    ("checkpoint", &["done", "failed"]),
    ("connection", &["started", "done"]),
    ("reattach", &["started", "done", "failed", "interrupted"]),
    ("wake", &["failed"]),
    ("turn", &["started", "done", "failed", "interrupted"]),
    ("request", &["started", "done"]),
    ("model", &["done", "failed"]),
    ("session", &["done"]),
    ("sandbox", &["done"]),
    ("configuration", &["done", "failed"]),
    ("terminate", &["done"]),
];

const DEFAULT_TYPES: [&str; 3] =
    ["conversation.turn.done", "conversation.turn.failed", "conversation.provision.failed"];

fn in_table(stage: &str, state: &str) -> bool {
    TABLE.iter().any(|(s, states)| *s == stage && states.contains(&state))
}

// ---------------------------------------------------------------------------------------------
// Servers, accounts, endpoints

/// A server that may deliver to the receiver on 127.0.0.1 (http allowed, loopback exempted), with
/// rate limits out of the way of polling, and `extra` on top.
async fn app(b: Backend, extra: &[(&str, Value)]) -> TestApp {
    let mut o: Vec<(&str, Value)> = vec![
        ("webhooks.allow_http", json!(true)),
        ("webhooks.allowed_private_cidrs", json!(["127.0.0.0/8"])),
        ("limits.requests_per_key", json!(1_000_000)),
        ("limits.requests_per_address", json!(1_000_000)),
    ];
    o.extend(extra.iter().cloned());
    spawn_with(b, &o).await
}

/// `app` plus the scripted agent bound into sandboxes.
async fn app_with_agent(b: Backend, extra: &[(&str, Value)]) -> TestApp {
    let bind = format!("{}:{AGENT}", scripted_agent().display());
    let mut o: Vec<(&str, Value)> = vec![("sandbox.ro_binds", json!([bind]))];
    o.extend(extra.iter().cloned());
    app(b, &o).await
}

struct Hook {
    id: String,
    secret: String,
}

async fn create_hook(app: &TestApp, key: &str, url: &str, event_types: Option<Value>) -> Hook {
    let mut body = json!({"url": url});
    if let Some(t) = event_types {
        body["event_types"] = t;
    }
    let r = app.post("/api/webhooks", key, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    Hook {
        id: r.body["data"]["id"].as_str().unwrap().to_owned(),
        secret: r.body["data"]["secret"].as_str().expect("secret on create").to_owned(),
    }
}

async fn patch(app: &TestApp, key: &str, path: &str, body: Value) -> Resp {
    app.request(Method::PATCH, path, Some(key), Some(body)).await
}

async fn endpoint(app: &TestApp, key: &str, hook: &str) -> Value {
    let r = app.get(&format!("/api/webhooks/{hook}"), key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body["data"].clone()
}

async fn restricted_key(app: &TestApp, u: &User) -> String {
    let r = app.post("/api/keys", &u.key, json!({"name": "narrow", "scope": "restricted"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"]["api_key"].as_str().unwrap().to_owned()
}

#[track_caller]
fn assert_invalid(r: &Resp, field: &str) {
    assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert!(r.body["errors"][field].is_array(), "validation_failed naming {field}: {}", r.text);
}

// ---------------------------------------------------------------------------------------------
// Polling

/// Polls `probe` every 50 ms until it gives `Ok`, or panics after `within` with the last `Err`.
async fn eventually<T, F, Fut>(what: &str, within: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + within;
    loop {
        match probe().await {
            Ok(v) => return v,
            Err(last) if Instant::now() > deadline => panic!("waited {within:?} for {what}; last seen: {last}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

async fn deliveries(app: &TestApp, key: &str, hook: &str, query: &str) -> Vec<Value> {
    let r = app.get(&format!("/api/webhooks/{hook}/deliveries?{query}"), key).await;
    assert_eq!(r.status, StatusCode::OK, "{query}: {}", r.text);
    r.body["data"].as_array().unwrap().clone()
}

/// Waits until the endpoint's delivery log (up to 200, newest first) satisfies `done`.
async fn wait_deliveries(
    app: &TestApp,
    key: &str,
    hook: &str,
    what: &str,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let done = &done;
    eventually(what, WAIT, || async move {
        let d = deliveries(app, key, hook, "limit=200").await;
        if done(&d) { Ok(d) } else { Err(serde_json::to_string_pretty(&d).unwrap()) }
    })
    .await
}

/// Waits until one delivery satisfies `done`; returns it.
async fn wait_delivery(app: &TestApp, key: &str, hook: &str, delivery: &str, done: impl Fn(&Value) -> bool) -> Value {
    let done = &done;
    eventually(&format!("delivery {delivery}"), WAIT, || async move {
        let r = app.get(&format!("/api/webhooks/{hook}/deliveries/{delivery}"), key).await;
        if r.status == StatusCode::OK && done(&r.body["data"]) { Ok(r.body["data"].clone()) } else { Err(r.text) }
    })
    .await
}

/// The delivery of event `event_id`, once it is no longer pending.
async fn settled(app: &TestApp, key: &str, hook: &str, event_id: &str) -> Value {
    let d = wait_deliveries(app, key, hook, &format!("the delivery of event {event_id} to settle"), |d| {
        d.iter().any(|d| d["event_id"] == event_id && d["status"] != "pending")
    })
    .await;
    d.into_iter().find(|d| d["event_id"] == event_id).unwrap()
}

async fn wait_endpoint(app: &TestApp, key: &str, hook: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let done = &done;
    eventually(what, WAIT, || async move {
        let e = endpoint(app, key, hook).await;
        if done(&e) { Ok(e) } else { Err(e.to_string()) }
    })
    .await
}

/// Sends a test event; returns the 202 answer's delivery.
async fn send_test(app: &TestApp, key: &str, hook: &str) -> Value {
    let r = app.post(&format!("/api/webhooks/{hook}/test"), key, json!({})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    r.body["data"].clone()
}

/// Sends a test event and waits for its one attempt to be recorded.
async fn tested(app: &TestApp, key: &str, hook: &str) -> Value {
    let d = send_test(app, key, hook).await;
    let id = d["id"].as_str().unwrap().to_owned();
    wait_delivery(app, key, hook, &id, |d| d["status"] != "pending" && !attempts(d).is_empty()).await
}

fn attempts(d: &Value) -> Vec<Value> {
    d["attempts"].as_array().cloned().unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Signatures

fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

/// `(t, [v1...])` of a `Service-Signature`, read by name.
fn parse_signature(header: &str) -> (Option<i64>, Vec<String>) {
    let mut t = None;
    let mut v1 = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = v.parse().ok(),
            Some(("v1", v)) => v1.push(v.to_owned()),
            _ => {}
        }
    }
    (t, v1)
}

/// What a receiver does: HMAC-SHA256 keyed with the whole secret over `<t>.<raw body>`.
fn verifies(secret: &str, header: &str, body: &[u8]) -> bool {
    let (Some(t), v1) = parse_signature(header) else { return false };
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    let expected = hex::encode(mac.finalize().into_bytes());
    v1.contains(&expected)
}

/// The request is signed with `secret` (and `t` is within the 300 s window).
#[track_caller]
fn assert_signed(q: &Received, secret: &str) {
    let header = q.signature();
    assert!(header.starts_with("t=") && header.contains(",v1="), "Service-Signature {header:?}");
    let (t, v1) = parse_signature(&header);
    assert!(v1.iter().all(|v| v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit())), "{header}");
    assert!((t.unwrap() - unix_now()).abs() <= 300, "t={t:?} is outside the 300 s window");
    assert!(verifies(secret, &header, &q.body), "signature {header} does not verify over {:?}", q.text());
}

/// Stripe's stock verifier (`pip install stripe`) on the raw body: Ok when it accepts.
fn stripe_verify(body: &[u8], header: &str, secret: &str) -> Result<(), String> {
    let file = std::env::temp_dir().join(format!("acs-webhook-{}.json", Uuid::new_v4().simple()));
    std::fs::write(&file, body).unwrap();
    let script = r#"
import sys
try:
    import stripe
except ImportError:
    sys.exit(3)
path, header, secret = sys.argv[1:4]
payload = open(path, "rb").read().decode("utf-8")
try:
    stripe.WebhookSignature.verify_header(payload, header, secret, tolerance=300)
except Exception as e:
    print(type(e).__name__, e)
    sys.exit(1)
print("ok")
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", script, file.to_str().unwrap(), header, secret])
        .output()
        .expect("python3 runs");
    let _ = std::fs::remove_file(&file);
    match out.status.code() {
        Some(0) => Ok(()),
        Some(3) => panic!("run scripts/setup (pip install stripe)"),
        _ => Err(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))),
    }
}

// ---------------------------------------------------------------------------------------------
// Events

/// A conversation row whose stage events the test writes itself.
struct Conv {
    id: Uuid,
    agent_id: Uuid,
    account_id: Uuid,
}

async fn stored_conversation(app: &TestApp, u: &User, labels: &[(&str, &str)]) -> Conv {
    let c = Conv { id: Uuid::now_v7(), agent_id: Uuid::now_v7(), account_id: u.id.parse().unwrap() };
    let new = NewConversation {
        id: c.id,
        account_id: c.account_id,
        agent_id: c.agent_id,
        runtime: "acp".into(),
        api_access: "owner".into(),
        labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..NewConversation::default()
    };
    store::insert(&app.state().db, &new).await.unwrap();
    c
}

/// Writes one stage event through the log; returns its id.
async fn emit(state: &AppState, c: &Conv, stage: &str, st: StageState, turn: Option<Uuid>) -> String {
    let scope = Scope { account_id: c.account_id, sandbox_id: None, conversations: vec![c.id], turn_id: turn };
    let rows = events::append(state, &scope, &[NewEvent::stage(stage, st, &json!({}))], None).await.unwrap();
    rows[0].id.to_string()
}

async fn turn_done(state: &AppState, c: &Conv) -> String {
    emit(state, c, "turn", StageState::Done, Some(Uuid::now_v7())).await
}

/// The conversation's whole log through the API, oldest first.
async fn feed(app: &TestApp, key: &str, conv: &str) -> Vec<Value> {
    let r = app.get(&format!("/api/conversations/{conv}/events?limit=5000"), key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body["data"].as_array().unwrap().clone()
}

/// Stage events of the feed that are sent: id -> (stage, state, turn_id).
fn sendable(feed: &[Value]) -> BTreeMap<String, (String, String, Value)> {
    feed.iter()
        .filter(|e| e["kind"] == "stage")
        .filter(|e| in_table(e["stage"].as_str().unwrap_or(""), e["state"].as_str().unwrap_or("")))
        .map(|e| {
            let id = e["id"].as_i64().unwrap().to_string();
            (
                id,
                (
                    e["stage"].as_str().unwrap().to_owned(),
                    e["state"].as_str().unwrap().to_owned(),
                    e["turn_id"].clone(),
                ),
            )
        })
        .collect()
}

async fn vault_with(app: &TestApp, u: &User, key: &str, value: &str) -> String {
    let r = app.post("/api/vaults", &u.key, json!({"name": "v"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let id = r.body["data"]["id"].as_str().unwrap().to_owned();
    let r = app
        .request(Method::PUT, &format!("/api/vaults/{id}/secrets/{key}"), Some(&u.key), Some(json!({"value": value})))
        .await;
    assert!(r.status.is_success(), "{}", r.text);
    id
}

/// Mails in the outbox to `to` (file transport: one JSON file {to, subject, body} each).
fn mails_to(app: &TestApp, to: &str) -> Vec<Value> {
    std::fs::read_dir(app.dir.join("outbox"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| serde_json::from_slice::<Value>(&std::fs::read(e.path()).ok()?).ok())
        .filter(|m| m["to"] == to)
        .collect()
}

// =============================================================================================
// 1. The endpoints API

async fn endpoints_are_created_read_updated_and_deleted(b: Backend) {
    let app = spawn_with(b, &[]).await;
    let u = app.user().await;

    let r = app.post("/api/webhooks", &u.key, json!({"url": "https://example.com/hooks/acs"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let e = &r.body["data"];
    let id = e["id"].as_str().unwrap().to_owned();
    id.parse::<Uuid>().expect("id is a UUID");
    assert_eq!(e["url"], "https://example.com/hooks/acs");
    let types: BTreeSet<&str> = e["event_types"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert_eq!(types, BTreeSet::from(DEFAULT_TYPES), "default event_types");
    assert_eq!(e["status"], "active");
    assert_eq!(e["description"], Value::Null);
    assert_eq!(e["consecutive_failures"], 0);
    assert_eq!((&e["disabled_at"], &e["disabled_reason"]), (&Value::Null, &Value::Null));
    assert!(e["inserted_at"].is_string() && e["updated_at"].is_string(), "{e}");
    let secret = e["secret"].as_str().unwrap().to_owned();
    let encoded = secret.strip_prefix("whsec_").expect("secret starts with whsec_");
    assert_eq!(encoded.len(), 43, "{secret}");
    assert!(encoded.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'), "base64url: {secret}");

    // Reads never show the secret.
    let r = app.get(&format!("/api/webhooks/{id}"), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["id"], id);
    assert_eq!(r.body["data"]["url"], "https://example.com/hooks/acs");
    assert!(r.body["data"].get("secret").is_none() && !r.text.contains(&secret), "{}", r.text);

    let r = app
        .post(
            "/api/webhooks",
            &u.key,
            json!({"url": "https://example.org/second", "event_types": ["*"], "description": "the second"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let second = r.body["data"]["id"].as_str().unwrap().to_owned();
    let second_secret = r.body["data"]["secret"].as_str().unwrap().to_owned();
    assert_ne!(secret, second_secret);
    assert_eq!(r.body["data"]["event_types"], json!(["*"]));
    assert_eq!(r.body["data"]["description"], "the second");

    let r = app.get("/api/webhooks", &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let ids: Vec<&str> = r.body["data"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [second.as_str(), id.as_str()], "newest first");
    assert!(!r.text.contains(&secret) && !r.text.contains(&second_secret), "a list never shows secrets");
    assert!(r.body["data"].as_array().unwrap().iter().all(|e| e.get("secret").is_none()));

    // Update.
    let path = format!("/api/webhooks/{id}");
    let r = patch(
        &app,
        &u.key,
        &path,
        json!({"url": "https://example.net/new", "event_types": ["conversation.turn.*"], "description": "changed"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["url"], "https://example.net/new");
    assert_eq!(r.body["data"]["event_types"], json!(["conversation.turn.*"]));
    assert_eq!(r.body["data"]["description"], "changed");
    assert!(r.body["data"].get("secret").is_none() && !r.text.contains(&secret));
    let got = endpoint(&app, &u.key, &id).await;
    assert_eq!((got["url"].as_str(), got["description"].as_str()), (Some("https://example.net/new"), Some("changed")));
    // Absent fields stay, null clears the description.
    let r = patch(&app, &u.key, &path, json!({"description": null})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["description"], Value::Null);
    assert_eq!(r.body["data"]["url"], "https://example.net/new");
    assert_eq!(r.body["data"]["event_types"], json!(["conversation.turn.*"]));
    // The owner switches it off and on.
    let r = patch(&app, &u.key, &path, json!({"status": "disabled"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["status"], "disabled");
    assert_eq!(r.body["data"]["disabled_reason"], "disabled by owner");
    assert!(r.body["data"]["disabled_at"].is_string(), "{}", r.text);
    let r = patch(&app, &u.key, &path, json!({"status": "active"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(
        (r.body["data"]["status"].as_str(), r.body["data"]["consecutive_failures"].as_i64()),
        (Some("active"), Some(0))
    );
    assert_invalid(&patch(&app, &u.key, &path, json!({"status": "paused"})).await, "status");

    // Delete.
    let r = app.delete(&path, &u.key).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    assert_error(&app.get(&path, &u.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.delete(&path, &u.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&patch(&app, &u.key, &path, json!({"description": "x"})).await, StatusCode::NOT_FOUND, "not_found");
    let r = app.get("/api/webhooks", &u.key).await;
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1, "{}", r.text);
    let missing = Uuid::new_v4();
    assert_error(&app.get(&format!("/api/webhooks/{missing}"), &u.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.get("/api/webhooks/not-a-uuid", &u.key).await, StatusCode::NOT_FOUND, "not_found");
}

async fn endpoints_belong_to_their_account_and_changes_need_a_full_scope_key(b: Backend) {
    let app = spawn_with(b, &[]).await;
    let u = app.user().await;
    let other = app.user().await;
    let hook = create_hook(&app, &u.key, "https://example.com/mine", None).await;
    let path = format!("/api/webhooks/{}", hook.id);

    // Another account sees nothing and can change nothing.
    let r = app.get("/api/webhooks", &other.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"], json!([]));
    assert_error(&app.get(&path, &other.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(
        &patch(&app, &other.key, &path, json!({"description": "x"})).await,
        StatusCode::NOT_FOUND,
        "not_found",
    );
    assert_error(&app.delete(&path, &other.key).await, StatusCode::NOT_FOUND, "not_found");
    for action in ["rotate-secret", "resume", "test"] {
        let r = app.post(&format!("{path}/{action}"), &other.key, json!({})).await;
        assert_error(&r, StatusCode::NOT_FOUND, "not_found");
    }
    assert_error(&app.get(&format!("{path}/deliveries"), &other.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_eq!(endpoint(&app, &u.key, &hook.id).await["description"], Value::Null, "unchanged");

    // A restricted key reads but does not change.
    let narrow = restricted_key(&app, &u).await;
    let r = app.post("/api/webhooks", &narrow, json!({"url": "https://example.com/narrow"})).await;
    assert_refused(&r, StatusCode::FORBIDDEN, "insufficient_scope");
    assert_refused(
        &patch(&app, &narrow, &path, json!({"description": "x"})).await,
        StatusCode::FORBIDDEN,
        "insufficient_scope",
    );
    for action in ["rotate-secret", "resume", "test"] {
        let r = app.post(&format!("{path}/{action}"), &narrow, json!({})).await;
        assert_refused(&r, StatusCode::FORBIDDEN, "insufficient_scope");
    }
    let r = app.get("/api/webhooks", &narrow).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(app.get(&path, &narrow).await.status, StatusCode::OK);
    assert_eq!(app.get(&format!("{path}/deliveries"), &narrow).await.status, StatusCode::OK);
    let r = app.get("/api/webhooks", "acs_not_a_key").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.text);
}

async fn endpoint_urls_are_checked_at_save(b: Backend) {
    let app = spawn_with(b, &[]).await;
    let u = app.user().await;
    let refused = [
        "http://example.com/hook", // http without webhooks.allow_http
        "https://user:pass@example.com/hook",
        "https://user@example.com/hook",
        "https://:pass@example.com/hook",
        "not a url",
        "example.com/hook",
        "/relative/path",
        "ftp://example.com/hook",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "https://",
        "",
    ];
    for url in refused {
        let r = app.post("/api/webhooks", &u.key, json!({"url": url})).await;
        assert_invalid(&r, "url");
        assert!(r.text.contains("url"), "{url}: {}", r.text);
    }
    assert_invalid(&app.post("/api/webhooks", &u.key, json!({})).await, "url");
    // At most 2048 characters.
    let base = "https://example.com/";
    let at_limit = format!("{base}{}", "a".repeat(2048 - base.len()));
    assert_eq!(at_limit.len(), 2048);
    let r = app.post("/api/webhooks", &u.key, json!({"url": at_limit})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let hook = r.body["data"]["id"].as_str().unwrap().to_owned();
    assert_invalid(&app.post("/api/webhooks", &u.key, json!({"url": format!("{at_limit}a")})).await, "url");
    // The same rules on update; a refused update changes nothing.
    let path = format!("/api/webhooks/{hook}");
    for url in ["http://example.com/hook", "https://user:pass@example.com/", "nope"] {
        assert_invalid(&patch(&app, &u.key, &path, json!({"url": url})).await, "url");
    }
    assert_eq!(endpoint(&app, &u.key, &hook).await["url"], at_limit);
    let r = app.get("/api/webhooks", &u.key).await;
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1, "nothing refused was saved: {}", r.text);
}

async fn http_urls_are_accepted_when_the_instance_allows_them(b: Backend) {
    let app = spawn_with(b, &[("webhooks.allow_http", json!(true))]).await;
    let u = app.user().await;
    let r = app.post("/api/webhooks", &u.key, json!({"url": "http://example.com/hook"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.body["data"]["url"], "http://example.com/hook");
    // The switch relaxes the scheme only.
    assert_invalid(&app.post("/api/webhooks", &u.key, json!({"url": "http://u:p@example.com/"})).await, "url");
    assert_invalid(&app.post("/api/webhooks", &u.key, json!({"url": "ftp://example.com/"})).await, "url");
}

async fn descriptions_and_event_type_filters_are_checked_at_save(b: Backend) {
    let app = spawn_with(b, &[]).await;
    let u = app.user().await;
    let url = "https://example.com/hook";
    let create = |body: Value| {
        let app = &app;
        let key = u.key.clone();
        async move { app.post("/api/webhooks", &key, body).await }
    };

    // Description: 500 characters (not bytes) at most.
    for ok in ["x".repeat(500), "é".repeat(500)] {
        let r = create(json!({"url": url, "description": ok})).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        assert_eq!(r.body["data"]["description"], ok);
    }
    for bad in ["x".repeat(501), "é".repeat(501)] {
        assert_invalid(&create(json!({"url": url, "description": bad})).await, "description");
    }

    // Filters.
    let accepted: &[&[&str]] = &[
        &["conversation.turn.done"],
        &["conversation.turn.*"],
        &["*"],
        &["conversation.checkpoint_restore.started", "conversation.wake.failed", "conversation.terminate.*"],
        &["conversation.caller_tool.started"],
        &["conversation.caller_tool.done"],
        &["conversation.caller_tool.*"],
        &["conversation.caller_tool.started", "conversation.caller_tool.done", "conversation.caller_tool.*"],
    ];
    for types in accepted {
        let r = create(json!({"url": url, "event_types": types})).await;
        assert_eq!(r.status, StatusCode::CREATED, "{types:?}: {}", r.text);
        assert_eq!(r.body["data"]["event_types"], json!(types));
    }
    let refused: &[&[&str]] = &[
        &["conversation.turn.don"],
        &["conversation.nope.*"],
        &["conversation.turn.done", "conversation.turn.don"],
        &["conversation.turn.started.extra"],
        &["conversation.*"],
        &["turn.done"],
        &["conversation.wake.started"],
        &["conversation.config.done"],
        &["conversation.admission_refused.*"],
        &["conversation.caller_tool.failed"],
        &["webhook.test"],
        &["**"],
        &[""],
        &[],
    ];
    for types in refused {
        assert_invalid(&create(json!({"url": url, "event_types": types})).await, "event_types");
    }
    // Every type of the table is accepted; 64 filters at most.
    let mut all: Vec<String> = TABLE
        .iter()
        .flat_map(|(stage, states)| states.iter().map(move |s| format!("conversation.{stage}.{s}")))
        .collect();
    all.extend(TABLE.iter().map(|(stage, _)| format!("conversation.{stage}.*")));
    all.extend(["*", "conversation.caller_tool.started", "conversation.caller_tool.done"].map(String::from));
    assert_eq!(all.len(), 64);
    let r = create(json!({"url": url, "event_types": all})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let hook = r.body["data"]["id"].as_str().unwrap().to_owned();
    all.push("conversation.caller_tool.*".into());
    assert_invalid(&create(json!({"url": url, "event_types": all})).await, "event_types");

    // The same rules on update; a refused update changes nothing.
    let path = format!("/api/webhooks/{hook}");
    assert_invalid(&patch(&app, &u.key, &path, json!({"event_types": ["conversation.turn.don"]})).await, "event_types");
    assert_invalid(&patch(&app, &u.key, &path, json!({"event_types": []})).await, "event_types");
    assert_invalid(&patch(&app, &u.key, &path, json!({"description": "x".repeat(501)})).await, "description");
    assert_eq!(endpoint(&app, &u.key, &hook).await["event_types"].as_array().unwrap().len(), 64);
    let r = patch(
        &app,
        &u.key,
        &path,
        json!({"event_types": ["conversation.provision.*"], "description": "é".repeat(500)}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["event_types"], json!(["conversation.provision.*"]));
}

async fn rotating_the_secret_signs_later_deliveries_with_the_new_secret_only(b: Backend) {
    let app = app(b, &[]).await;
    let r = Receiver::start().await;
    let u = app.user().await;
    let hook = create_hook(&app, &u.key, &r.url("/hook"), None).await;

    // A test event, signed with the first secret.
    let d = tested(&app, &u.key, &hook.id).await;
    assert_eq!(d["event_type"], "webhook.test");
    assert_eq!(d["status"], "succeeded", "{d}");
    let first = r.wait_for(1).await.remove(0);
    assert_signed(&first, &hook.secret);
    let body = first.json();
    let test_id = body["id"].as_str().unwrap();
    let uuid = test_id.strip_prefix("test_").expect("a test event id is test_<uuid>");
    uuid.parse::<Uuid>().expect("test_<uuid>");
    assert_eq!(body["type"], "webhook.test");
    assert_eq!(body["data"]["endpoint_id"], hook.id);
    assert_eq!(d["event_id"], test_id);
    assert_eq!((first.event_id().as_str(), first.event_type().as_str()), (test_id, "webhook.test"));
    assert_eq!(first.attempt(), 1);
    let a = attempts(&d);
    assert_eq!(a.len(), 1, "{d}");
    assert_eq!((a[0]["trigger"].as_str(), a[0]["response_status"].as_i64()), (Some("test"), Some(200)));

    // Rotate: a new secret, shown once; the old one stops at once.
    let rot = app.post(&format!("/api/webhooks/{}/rotate-secret", hook.id), &u.key, json!({})).await;
    assert_eq!(rot.status, StatusCode::OK, "{}", rot.text);
    let new_secret = rot.body["data"]["secret"].as_str().unwrap().to_owned();
    assert!(new_secret.starts_with("whsec_") && new_secret.len() == 49, "{new_secret}");
    assert_ne!(new_secret, hook.secret);
    assert_eq!(rot.body["data"]["id"], hook.id);
    let read = app.get(&format!("/api/webhooks/{}", hook.id), &u.key).await;
    assert!(!read.text.contains(&new_secret));

    tested(&app, &u.key, &hook.id).await;
    let second = r.wait_for(2).await.remove(1);
    assert_signed(&second, &new_secret);
    assert!(!verifies(&hook.secret, &second.signature(), &second.body), "the old secret must no longer verify");
}

// =============================================================================================
// 2. Delivery of a real turn

async fn a_real_turn_is_delivered_signed_with_the_documented_headers_and_payload(b: Backend) {
    let app = app_with_agent(b, &[]).await;
    let r = Receiver::start().await;
    let u = app.user().await;
    let hook = create_hook(&app, &u.key, &r.url("/hook"), Some(json!(["*"]))).await;

    let vault = vault_with(&app, &u, "VAULT_TOKEN", "vault-s3cret-0042").await;
    let agent = crate::common::acp_agent(&app, &u, AGENT, json!({"vault_id": vault})).await;
    let marker = "prompt-marker-7Q3Z";
    let script = format!("say: {marker} reply\necho-env: VAULT_TOKEN");
    let labels = json!({"team": "qa", "tier": "gold"});
    let c =
        crate::common::create_conversation(&app, &u, json!({"agent_id": agent, "prompt": script, "labels": labels}))
            .await;
    let conv = c["id"].as_str().unwrap().to_owned();
    let turns = crate::common::finished_turns(&app, conv.parse().unwrap(), 1).await;
    assert_eq!(turns[0].status, "done", "{turns:?}");
    let turn_id = turns[0].id.to_string();

    // Every sendable stage event of the log arrives.
    let log = feed(&app, &u.key, &conv).await;
    let expected = sendable(&log);
    r.wait_until("every sendable stage event of the conversation", WAIT, |got| {
        expected.keys().all(|id| got.iter().any(|q| q.event_id() == *id))
    })
    .await;
    let log = feed(&app, &u.key, &conv).await;
    let expected = sendable(&log);
    let got = r.requests();

    // Nothing else: no output, no config or admission stage events, every (event, attempt) once.
    let outputs: BTreeSet<String> =
        log.iter().filter(|e| e["kind"] != "stage").map(|e| e["id"].as_i64().unwrap().to_string()).collect();
    assert!(!outputs.is_empty(), "the turn wrote output");
    let mut pairs = BTreeSet::new();
    for q in &got {
        let id = q.event_id();
        assert!(!outputs.contains(&id), "output event {id} was delivered");
        assert!(
            expected.contains_key(&id),
            "delivered {id} ({}) is not a sendable stage event of the log",
            q.event_type()
        );
        assert!(pairs.insert((id, q.attempt())), "an attempt went out twice");
    }
    let types: BTreeSet<String> = got.iter().map(Received::event_type).collect();
    for t in [
        "conversation.provision.started",
        "conversation.provision.done",
        "conversation.turn.started",
        "conversation.turn.done",
    ] {
        assert!(types.contains(t), "{t} was delivered: {types:?}");
    }

    for q in &got {
        let id = q.event_id();
        let (stage, state, feed_turn) = &expected[&id];
        assert_eq!((q.method.as_str(), q.path.as_str()), ("POST", "/hook"));
        assert_signed(q, &hook.secret);
        assert!(q.header("content-type").unwrap_or("").starts_with("application/json"), "{:?}", q.headers);
        assert!(q.header("user-agent").unwrap_or("").starts_with("acs-webhooks/"), "{:?}", q.headers);
        assert_eq!(q.attempt(), 1, "the receiver accepted every first attempt");
        let p = q.json();
        assert_eq!(p["id"], json!(id), "Service-Event-Id is the body's id, a string");
        assert_eq!(p["type"], json!(q.event_type()), "Service-Event-Type is the body's type");
        assert_eq!(p["type"], format!("conversation.{stage}.{state}"));
        let created = p["created_at"].as_str().expect("created_at");
        time::OffsetDateTime::parse(created, &time::format_description::well_known::Rfc3339).expect("RFC 3339");
        let frac = created.strip_suffix('Z').expect("UTC, Z").rsplit_once('.').expect("fractional seconds").1;
        assert_eq!(frac.len(), 6, "microseconds: {created}");
        let d = &p["data"];
        let t = q.event_type();
        assert_eq!(d["conversation_id"], conv, "{t}: {d}");
        assert_eq!(d["agent_id"], agent.to_string(), "{t}: {d}");
        assert_eq!(d["parent_conversation_id"], Value::Null, "{t}: {d}");
        assert_eq!(d["labels"], labels, "{t}: {d}");
        assert_eq!((d["stage"].as_str(), d["state"].as_str()), (Some(stage.as_str()), Some(state.as_str())));
        assert!(d["status"].as_str().is_some_and(|s| !s.is_empty()), "status: {d}");
        if stage == "turn" {
            assert_eq!(d["turn_id"], *feed_turn, "{d}");
            assert_eq!(d["turn_id"], turn_id);
        } else {
            assert_eq!(d["turn_id"], Value::Null, "turn_id is for turn events only: {d}");
        }
        assert!(d.get("duration_ms").is_none_or(|v| v.is_null() || v.as_u64().is_some()), "{d}");
        if t == "conversation.turn.done" {
            assert!(d["duration_ms"].as_u64().is_some(), "a turn records its duration: {d}");
        }
        // No prompt, transcript, variable name or secret value.
        let raw = q.text();
        for leak in [marker, "vault-s3cret-0042", "VAULT_TOKEN", "echo-env", hook.secret.as_str()] {
            assert!(!raw.contains(leak), "{leak:?} leaked into a payload: {raw}");
        }
    }

    // Stripe's stock verifier accepts the raw body as sent; a wrong secret is refused.
    let done = got.iter().find(|q| q.event_type() == "conversation.turn.done").unwrap();
    stripe_verify(&done.body, &done.signature(), &hook.secret).unwrap_or_else(|e| panic!("stripe refused: {e}"));
    assert!(stripe_verify(&done.body, &done.signature(), "whsec_not_the_secret").is_err());

    // The delivery log holds the same event and body.
    let d = settled(&app, &u.key, &hook.id, &done.event_id()).await;
    assert_eq!(d["status"], "succeeded", "{d}");
    assert_eq!(d["event_type"], "conversation.turn.done");
    assert_eq!(d["endpoint_id"], hook.id);
    assert_eq!(d["payload"], done.json());
    assert_eq!(d["attempt_count"], 1);
    assert_eq!(d["next_attempt_at"], Value::Null);
    let a = attempts(&d);
    assert_eq!((a[0]["attempt"].as_i64(), a[0]["trigger"].as_str()), (Some(1), Some("automatic")), "{d}");
    assert_eq!((a[0]["response_status"].as_i64(), &a[0]["error"]), (Some(200), &Value::Null));
    assert!(a[0]["latency_ms"].as_i64().is_some_and(|l| l >= 0), "{d}");
}

// =============================================================================================
// 3. Filters

async fn each_endpoint_receives_exactly_the_types_its_filters_match(b: Backend) {
    let app = app_with_agent(b, &[]).await;
    let r = Receiver::start().await;
    let u = app.user().await;
    let only_done = create_hook(&app, &u.key, &r.url("/a"), Some(json!(["conversation.turn.done"]))).await;
    let provision = create_hook(&app, &u.key, &r.url("/b"), Some(json!(["conversation.provision.*"]))).await;
    let retired = create_hook(
        &app,
        &u.key,
        &r.url("/c"),
        Some(json!([
            "conversation.caller_tool.started",
            "conversation.caller_tool.done",
            "conversation.caller_tool.*"
        ])),
    )
    .await;
    let defaults = create_hook(&app, &u.key, &r.url("/d"), None).await;
    // Disabled before the events: it gets none of them.
    let off = create_hook(&app, &u.key, &r.url("/e"), Some(json!(["*"]))).await;
    let rr = patch(&app, &u.key, &format!("/api/webhooks/{}", off.id), json!({"status": "disabled"})).await;
    assert_eq!(rr.status, StatusCode::OK, "{}", rr.text);

    let agent = crate::common::acp_agent(&app, &u, AGENT, json!({})).await;
    let c = crate::common::create_conversation(&app, &u, json!({"agent_id": agent, "prompt": "say: hi"})).await;
    let conv = c["id"].as_str().unwrap().to_owned();
    crate::common::finished_turns(&app, conv.parse().unwrap(), 1).await;

    let log = sendable(&feed(&app, &u.key, &conv).await);
    let of_type = |pred: &dyn Fn(&str, &str) -> bool| -> BTreeSet<String> {
        log.iter().filter(|(_, (s, st, _))| pred(s, st)).map(|(id, _)| id.clone()).collect()
    };
    let want = [
        (&only_done, "/a", of_type(&|s, st| s == "turn" && st == "done")),
        (&provision, "/b", of_type(&|s, _| s == "provision")),
        (&retired, "/c", BTreeSet::new()),
        (
            &defaults,
            "/d",
            of_type(&|s, st| {
                (s, st) == ("turn", "done") || (s, st) == ("turn", "failed") || (s, st) == ("provision", "failed")
            }),
        ),
        (&off, "/e", BTreeSet::new()),
    ];
    assert_eq!(want[0].2.len(), 1, "one turn.done: {log:?}");
    assert!(want[1].2.len() >= 2, "provision started and done: {log:?}");

    // Deliveries are queued with the event: the logs are complete now.
    for (hook, path, ids) in &want {
        let d = wait_deliveries(&app, &u.key, &hook.id, &format!("{path} to settle"), |d| {
            d.iter().all(|d| d["status"] != "pending")
        })
        .await;
        let got: BTreeSet<String> = d.iter().map(|d| d["event_id"].as_str().unwrap().to_owned()).collect();
        assert_eq!(&got, ids, "deliveries of {path}");
        assert!(d.iter().all(|d| d["status"] == "succeeded"), "{path}: {d:?}");
    }
    // And the receiver got exactly those, each at its own path and signed with its own secret.
    for (hook, path, ids) in &want {
        let got: Vec<Received> = r.requests().into_iter().filter(|q| q.path == *path).collect();
        let got_ids: BTreeSet<String> = got.iter().map(Received::event_id).collect();
        assert_eq!(&got_ids, ids, "requests at {path}");
        for q in &got {
            assert_signed(q, &hook.secret);
            let p = q.json();
            let (stage, state, _) = &log[&q.event_id()];
            assert_eq!(p["type"], format!("conversation.{stage}.{state}"));
        }
    }
}

// =============================================================================================
// 4, 5. Retries and timeouts

async fn failures_and_redirects_are_retried_with_the_same_body_and_kept_in_the_log(b: Backend) {
    let app = app(b, &[("webhooks.retry_schedule_seconds", json!([0.05]))]).await;
    let r = Receiver::start().await;
    let big: String = "0123456789abcdef".repeat(640); // 10 KB
    r.plan([
        Reply::status(500).body(big.clone()),
        Reply::status(302).header("Location", &r.url("/elsewhere")).body("moved"),
        Reply::ok().body("fine"),
    ]);
    let u = app.user().await;
    let hook = create_hook(&app, &u.key, &r.url("/hook"), Some(json!(["conversation.turn.done"]))).await;
    let c = stored_conversation(&app, &u, &[("k", "v")]).await;
    emit(app.state(), &c, "turn", StageState::Started, Some(Uuid::now_v7())).await;
    let event = turn_done(app.state(), &c).await;

    r.wait_for(3).await;
    let d = settled(&app, &u.key, &hook.id, &event).await;
    assert_eq!(d["status"], "succeeded", "{d}");
    assert_eq!(d["attempt_count"], 3, "{d}");
    assert_eq!(d["next_attempt_at"], Value::Null);
    assert_eq!(d["event_type"], "conversation.turn.done");
    let got = r.requests();
    assert_eq!(got.len(), 3, "nothing after the success, and the redirect was not followed");
    assert!(got.iter().all(|q| q.path == "/hook"), "the Location was fetched");
    for (i, q) in got.iter().enumerate() {
        assert_eq!(q.attempt(), i as u32 + 1, "Service-Delivery-Attempt");
        assert_eq!(q.event_id(), event);
        assert_eq!(q.event_type(), "conversation.turn.done");
        assert_eq!(q.body, got[0].body, "the same bytes on every attempt");
        assert_signed(q, &hook.secret);
    }
    assert_eq!(d["payload"], got[0].json());
    assert_eq!(d["payload"]["data"]["labels"], json!({"k": "v"}));

    let a = attempts(&d);
    let statuses: Vec<Option<i64>> = a.iter().map(|a| a["response_status"].as_i64()).collect();
    assert_eq!(statuses, [Some(500), Some(302), Some(200)], "{d}");
    for (i, a) in a.iter().enumerate() {
        assert_eq!((a["attempt"].as_i64(), a["trigger"].as_str()), (Some(i as i64 + 1), Some("automatic")));
        assert_eq!(a["error"], Value::Null, "an HTTP answer is not an error: {a}");
        assert!(a["at"].is_string());
    }
    let kept = a[0]["response_body"].as_str().unwrap();
    assert_eq!(kept.len(), 4096, "the first 4 KB of a 10 KB answer");
    assert!(big.starts_with(kept));
    assert_eq!(a[1]["response_body"], "moved");
    assert_eq!(a[2]["response_body"], "fine");
    // The unmatched turn.started was never queued.
    assert_eq!(deliveries(&app, &u.key, &hook.id, "").await.len(), 1);
}

async fn an_attempt_that_times_out_is_retried(b: Backend) {
    let app = app(
        b,
        &[
            ("webhooks.timeout_seconds", json!(0.5)),
            ("webhooks.lease_seconds", json!(5.0)),
            ("webhooks.retry_schedule_seconds", json!([0.05])),
        ],
    )
    .await;
    let r = Receiver::start().await;
    r.plan([Reply::ok().after(Duration::from_secs(2))]);
    let u = app.user().await;
    let hook = create_hook(&app, &u.key, &r.url("/hook"), Some(json!(["conversation.turn.done"]))).await;
    let c = stored_conversation(&app, &u, &[]).await;
    let event = turn_done(app.state(), &c).await;

    let got = r.wait_for(2).await;
    assert_eq!((got[0].attempt(), got[1].attempt()), (1, 2));
    assert_eq!(got[0].body, got[1].body);
    let d = settled(&app, &u.key, &hook.id, &event).await;
    assert_eq!((d["status"].as_str(), d["attempt_count"].as_i64()), (Some("succeeded"), Some(2)), "{d}");
    let a = attempts(&d);
    assert_eq!((a[0]["error"].as_str(), &a[0]["response_status"]), (Some("timeout"), &Value::Null), "{d}");
    assert_eq!((&a[1]["error"], a[1]["response_status"].as_i64()), (&Value::Null, Some(200)), "{d}");
}

// =============================================================================================
// 6. Auto-disable, resume, reset

async fn five_exhausted_events_in_a_row_disable_the_endpoint_until_resumed(b: Backend) {
    let app = app(b, &[("webhooks.retry_schedule_seconds", json!([0.01]))]).await;
    let r = Receiver::start().await;
    r.set_default(Reply::status(500));
    let u = app.user().await;
    let url = r.url("/hook");
    let hook = create_hook(&app, &u.key, &url, Some(json!(["conversation.turn.done"]))).await;
    let c = stored_conversation(&app, &u, &[]).await;
    let mails_before = mails_to(&app, &u.email).len();

    let mut events = Vec::new();
    for _ in 0..5 {
        events.push(turn_done(app.state(), &c).await);
    }
    let e = wait_endpoint(&app, &u.key, &hook.id, "the endpoint to be disabled", |e| e["status"] == "disabled").await;
    assert_eq!(e["consecutive_failures"], 5, "{e}");
    assert!(e["disabled_at"].is_string(), "{e}");
    assert!(e["disabled_reason"].as_str().is_some_and(|s| !s.is_empty()), "{e}");
    assert_ne!(e["disabled_reason"], "disabled by owner");

    // Every event went out 8 times, once per attempt number, and gave up.
    let d = deliveries(&app, &u.key, &hook.id, "").await;
    assert_eq!(d.len(), 5);
    for d in &d {
        assert_eq!((d["status"].as_str(), d["attempt_count"].as_i64()), (Some("failed"), Some(8)), "{d}");
        assert_eq!(d["next_attempt_at"], Value::Null);
        assert!(attempts(d).iter().all(|a| a["response_status"] == 500));
    }
    let got = r.requests();
    assert_eq!(got.len(), 40, "8 attempts for each of 5 events");
    for ev in &events {
        let mut n: Vec<u32> = got.iter().filter(|q| q.event_id() == *ev).map(Received::attempt).collect();
        n.sort();
        assert_eq!(n, (1..=8).collect::<Vec<_>>(), "attempts of event {ev}");
    }

    // The owner is told.
    let (outbox, owner) = (&app, u.email.as_str());
    let mail = eventually("the owner's email", WAIT, || async move {
        let mails = mails_to(outbox, owner);
        if mails.len() > mails_before { Ok(mails) } else { Err(format!("{mails:?}")) }
    })
    .await;
    assert!(
        mail.iter().any(|m| format!("{} {}", m["subject"], m["body"]).to_lowercase().contains("webhook")),
        "a mail about the webhook: {mail:?}"
    );

    // An event written while disabled is not queued for it.
    let sixth = turn_done(app.state(), &c).await;
    assert_eq!(deliveries(&app, &u.key, &hook.id, "").await.len(), 5, "no delivery for an event while disabled");

    // A test event still goes out; its failure does not count.
    let t = tested(&app, &u.key, &hook.id).await;
    assert_eq!((t["status"].as_str(), t["attempt_count"].as_i64()), (Some("failed"), Some(1)), "{t}");
    assert_eq!(attempts(&t)[0]["trigger"], "test");
    r.wait_for_one("the test event", |q| q.event_type() == "webhook.test").await;
    let e = endpoint(&app, &u.key, &hook.id).await;
    assert_eq!((e["status"].as_str(), e["consecutive_failures"].as_i64()), (Some("disabled"), Some(5)), "{e}");
    // A test the fixed receiver accepts clears the count (it stays disabled until resumed).
    r.set_default(Reply::ok());
    let t = tested(&app, &u.key, &hook.id).await;
    assert_eq!(t["status"], "succeeded", "{t}");
    let e = endpoint(&app, &u.key, &hook.id).await;
    assert_eq!((e["status"].as_str(), e["consecutive_failures"].as_i64()), (Some("disabled"), Some(0)), "{e}");

    // Resume (full scope only): later events are delivered.
    let narrow = restricted_key(&app, &u).await;
    let resume = format!("/api/webhooks/{}/resume", hook.id);
    assert_refused(&app.post(&resume, &narrow, json!({})).await, StatusCode::FORBIDDEN, "insufficient_scope");
    let rr = app.post(&resume, &u.key, json!({})).await;
    assert_eq!(rr.status, StatusCode::OK, "{}", rr.text);
    assert_eq!(
        (rr.body["data"]["status"].as_str(), rr.body["data"]["consecutive_failures"].as_i64()),
        (Some("active"), Some(0))
    );
    let seventh = turn_done(app.state(), &c).await;
    r.wait_for_one("the event after the resume", |q| q.event_id() == seventh).await;
    let d = settled(&app, &u.key, &hook.id, &seventh).await;
    assert_eq!(d["status"], "succeeded", "{d}");
    assert!(r.requests().iter().all(|q| q.event_id() != sixth), "the event written while disabled never goes out");
    assert_eq!(endpoint(&app, &u.key, &hook.id).await["status"], "active");
}

async fn a_success_after_fewer_than_five_exhausted_events_resets_the_count(b: Backend) {
    let app = app(b, &[("webhooks.retry_schedule_seconds", json!([0.01]))]).await;
    let r = Receiver::start().await;
    r.set_default(Reply::status(503));
    let u = app.user().await;
    let hook = create_hook(&app, &u.key, &r.url("/hook"), Some(json!(["conversation.turn.done"]))).await;
    let c = stored_conversation(&app, &u, &[]).await;
    for n in 1..=2 {
        let ev = turn_done(app.state(), &c).await;
        let d = settled(&app, &u.key, &hook.id, &ev).await;
        assert_eq!((d["status"].as_str(), d["attempt_count"].as_i64()), (Some("failed"), Some(8)), "{d}");
        let e = wait_endpoint(&app, &u.key, &hook.id, "the count", |e| e["consecutive_failures"] == n).await;
        assert_eq!(e["status"], "active");
    }
    r.set_default(Reply::status(204));
    let ev = turn_done(app.state(), &c).await;
    let d = settled(&app, &u.key, &hook.id, &ev).await;
    assert_eq!(d["status"], "succeeded", "any 2xx is a success: {d}");
    let e = endpoint(&app, &u.key, &hook.id).await;
    assert_eq!((e["status"].as_str(), e["consecutive_failures"].as_i64()), (Some("active"), Some(0)), "{e}");
}

async fn an_owner_disabled_endpoint_holds_queued_deliveries_until_resumed(b: Backend) {
    let app = app(b, &[("webhooks.retry_schedule_seconds", json!([2.0]))]).await;
    let r = Receiver::start().await;
    r.plan([Reply::status(500)]);
    let u = app.user().await;
    let hook = create_hook(&app, &u.key, &r.url("/hook"), Some(json!(["conversation.turn.done"]))).await;
    let path = format!("/api/webhooks/{}", hook.id);
    let c = stored_conversation(&app, &u, &[]).await;
    let queued = turn_done(app.state(), &c).await;
    r.wait_for(1).await;
    let rr = patch(&app, &u.key, &path, json!({"status": "disabled"})).await;
    assert_eq!(rr.status, StatusCode::OK, "{}", rr.text);
    assert_eq!(rr.body["data"]["disabled_reason"], "disabled by owner");
    let later = turn_done(app.state(), &c).await;

    // Past the retry's due time nothing goes out: the delivery waits.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(r.count(), 1, "nothing is sent while disabled");
    let d = deliveries(&app, &u.key, &hook.id, "").await;
    assert_eq!(d.len(), 1, "the event written while disabled was not queued: {d:?}");
    assert_eq!((d[0]["event_id"].as_str(), d[0]["status"].as_str()), (Some(queued.as_str()), Some("pending")), "{d:?}");

    let rr = patch(&app, &u.key, &path, json!({"status": "active"})).await;
    assert_eq!(rr.status, StatusCode::OK, "{}", rr.text);
    assert_eq!(
        (rr.body["data"]["status"].as_str(), rr.body["data"]["consecutive_failures"].as_i64()),
        (Some("active"), Some(0))
    );
    let second = r.wait_for(2).await.remove(1);
    assert_eq!((second.event_id(), second.attempt()), (queued.clone(), 2));
    let d = settled(&app, &u.key, &hook.id, &queued).await;
    assert_eq!((d["status"].as_str(), d["attempt_count"].as_i64()), (Some("succeeded"), Some(2)), "{d}");
    assert!(r.requests().iter().all(|q| q.event_id() != later));
}

// =============================================================================================
// 7. Redelivery

async fn a_redelivery_uses_the_current_url_and_secret(b: Backend) {
    let app = app(b, &[]).await;
    let first = Receiver::start().await;
    let second = Receiver::start().await;
    let u = app.user().await;
    let hook = create_hook(&app, &u.key, &first.url("/one"), Some(json!(["conversation.turn.done"]))).await;
    let c = stored_conversation(&app, &u, &[]).await;
    let event = turn_done(app.state(), &c).await;
    let original = first.wait_for(1).await.remove(0);
    let d = settled(&app, &u.key, &hook.id, &event).await;
    assert_eq!(d["status"], "succeeded");
    let delivery = d["id"].as_str().unwrap().to_owned();

    let path = format!("/api/webhooks/{}", hook.id);
    let rr = patch(&app, &u.key, &path, json!({"url": second.url("/two")})).await;
    assert_eq!(rr.status, StatusCode::OK, "{}", rr.text);
    let rot = app.post(&format!("{path}/rotate-secret"), &u.key, json!({})).await;
    let secret = rot.body["data"]["secret"].as_str().unwrap().to_owned();

    let redeliver = format!("{path}/deliveries/{delivery}/redeliver");
    let narrow = restricted_key(&app, &u).await;
    assert_refused(&app.post(&redeliver, &narrow, json!({})).await, StatusCode::FORBIDDEN, "insufficient_scope");
    let other = app.user().await;
    assert_error(&app.post(&redeliver, &other.key, json!({})).await, StatusCode::NOT_FOUND, "not_found");
    let rr = app.post(&redeliver, &u.key, json!({})).await;
    assert_eq!(rr.status, StatusCode::ACCEPTED, "{}", rr.text);
    assert_eq!(rr.body["data"]["id"], delivery);

    let again = second.wait_for(1).await.remove(0);
    assert_eq!(again.path, "/two");
    assert_eq!(again.attempt(), 2, "the attempt number goes on");
    assert_eq!(again.event_id(), event);
    assert_eq!(again.body, original.body, "the same body");
    assert_signed(&again, &secret);
    assert!(!verifies(&hook.secret, &again.signature(), &again.body));
    let d =
        wait_delivery(&app, &u.key, &hook.id, &delivery, |d| attempts(d).len() == 2 && d["next_attempt_at"].is_null())
            .await;
    assert_eq!((d["status"].as_str(), d["attempt_count"].as_i64()), (Some("succeeded"), Some(2)), "{d}");
    let a = attempts(&d);
    assert_eq!((a[1]["attempt"].as_i64(), a[1]["trigger"].as_str()), (Some(2), Some("redeliver")), "{d}");
    assert_eq!(a[1]["response_status"], 200);
    assert_eq!(first.count(), 1, "the old URL is not used");

    // Once more: attempt 3.
    let rr2 = app.post(&redeliver, &u.key, json!({})).await;
    assert_eq!(rr2.status, StatusCode::ACCEPTED, "{}", rr2.text);
    let third = second.wait_for(2).await.remove(1);
    assert_eq!((third.attempt(), third.body.as_slice()), (3, original.body.as_slice()));
    let d =
        wait_delivery(&app, &u.key, &hook.id, &delivery, |d| attempts(d).len() == 3 && d["next_attempt_at"].is_null())
            .await;
    assert_eq!((d["status"].as_str(), d["attempt_count"].as_i64()), (Some("succeeded"), Some(3)), "{d}");
    assert_eq!(second.count(), 2, "each redelivery is one attempt");

    // While the redelivery was due, the 202 answer said so: `pending` while an attempt is due.
    let answered = &rr.body["data"];
    if attempts(answered).len() == 1 {
        assert!(!answered["next_attempt_at"].is_null(), "an attempt is due: {answered}");
        assert_eq!(answered["status"], "pending", "status is `pending` while an attempt is due: {answered}");
    }
}

/// What a single read of a delivery may not show: an attempt numbered beyond `attempt_count`, or an
/// attempt due (`next_attempt_at`) under another status than `pending`.
fn inconsistency(d: &Value) -> Option<String> {
    let count = d["attempt_count"].as_i64().unwrap_or(-1);
    let highest = attempts(d).iter().filter_map(|a| a["attempt"].as_i64()).max().unwrap_or(0);
    if highest > count {
        return Some(format!("attempt {highest} listed with attempt_count {count}: {d}"));
    }
    if !d["next_attempt_at"].is_null() && d["status"] != "pending" {
        return Some(format!("an attempt is due but status is {}: {d}", d["status"]));
    }
    None
}

/// Reads the log while attempts are being recorded: each answer is one state of each delivery,
/// never its row from before an attempt beside the attempts from after it.
async fn delivery_reads_never_mix_two_states(b: Backend) {
    let app = app(b, &[("webhooks.retry_schedule_seconds", json!([0.01]))]).await;
    let r = Receiver::start().await;
    r.respond_with(|q| if q.attempt() == 1 { Reply::status(500) } else { Reply::ok() });
    let u = app.user().await;
    let hook = create_hook(&app, &u.key, &r.url("/hook"), Some(json!(["conversation.turn.done"]))).await;
    let c = stored_conversation(&app, &u, &[]).await;
    const N: usize = 30;
    let writer = async {
        for _ in 0..N {
            turn_done(app.state(), &c).await;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    let reader = async {
        let mut seen = Vec::new();
        let deadline = Instant::now() + WAIT;
        loop {
            let d = deliveries(&app, &u.key, &hook.id, "limit=200").await;
            seen.extend(d.iter().filter_map(inconsistency));
            if d.len() == N && d.iter().all(|d| d["status"] == "succeeded") {
                return seen;
            }
            assert!(Instant::now() < deadline, "deliveries did not all succeed: {d:?}");
        }
    };
    let ((), seen) = tokio::join!(writer, reader);
    assert!(seen.is_empty(), "{} inconsistent read(s), the first: {}", seen.len(), seen[0]);
}

// =============================================================================================
// 8. Address refusals

async fn private_and_reserved_addresses_are_refused_before_any_request(b: Backend) {
    // http allowed, nothing exempted.
    let app =
        spawn_with(b, &[("webhooks.allow_http", json!(true)), ("limits.requests_per_key", json!(1_000_000))]).await;
    let r = Receiver::start().await;
    // A receiver on ::1 too, so that a wrongly allowed [::1] would really be reached.
    let r6 = Receiver::bind("[::1]:0".parse().unwrap()).await.ok();
    let port = r.port();
    let port6 = r6.as_ref().map_or(port, Receiver::port);
    let u = app.user().await;
    let urls = [
        format!("http://127.0.0.1:{port}/"),
        format!("http://localhost:{port}/"),
        format!("http://127.1:{port}/"),
        format!("http://2130706433:{port}/"),
        format!("http://0.0.0.0:{port}/"),
        "http://10.0.0.1/".to_owned(),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://100.64.0.1/".to_owned(),
        "http://192.168.1.1/".to_owned(),
        "http://172.16.0.1/".to_owned(),
        "http://192.0.2.1/".to_owned(),
        "http://198.18.0.1/".to_owned(),
        "http://224.0.0.1/".to_owned(),
        format!("http://[::1]:{port6}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
        "http://[fe80::1]/".to_owned(),
        "http://[fc00::1]/".to_owned(),
        "http://[2001:db8::1]/".to_owned(),
    ];
    for url in &urls {
        let hook = create_hook(&app, &u.key, url, None).await;
        let d = tested(&app, &u.key, &hook.id).await;
        let a = attempts(&d);
        assert_eq!(a.len(), 1, "{url}: {d}");
        assert_eq!(a[0]["error"], "address_refused", "{url}: {d}");
        assert_eq!(a[0]["response_status"], Value::Null, "{url}: {d}");
        assert_eq!((d["status"].as_str(), d["attempt_count"].as_i64()), (Some("failed"), Some(1)), "{url}: {d}");
        assert_eq!(d["next_attempt_at"], Value::Null, "a test is one attempt: {d}");
    }
    assert_eq!(r.count(), 0, "the receiver on 127.0.0.1 saw nothing: {:?}", r.requests());
    if let Some(r6) = &r6 {
        assert_eq!(r6.count(), 0, "the receiver on ::1 saw nothing");
    }
}

// =============================================================================================
// 9. A crash costs a repeat, never a loss

/// Holds the first attempt at the receiver, restarts the server, and checks that the event is sent
/// again exactly once more, signed, with the same body, and settles as succeeded.
async fn restart_mid_delivery(b: Backend, timeout_seconds: f64, lease_seconds: f64) {
    let mut app = app(
        b,
        &[
            ("webhooks.lease_seconds", json!(lease_seconds)),
            ("webhooks.timeout_seconds", json!(timeout_seconds)),
            ("webhooks.retry_schedule_seconds", json!([0.05])),
        ],
    )
    .await;
    let r = Receiver::start().await;
    r.plan([Reply::ok().held()]);
    let u = app.user().await;
    let hook = create_hook(&app, &u.key, &r.url("/hook"), Some(json!(["conversation.turn.done"]))).await;
    let c = stored_conversation(&app, &u, &[]).await;
    let event = turn_done(app.state(), &c).await;
    let held = r.wait_for(1).await.remove(0);
    assert_eq!(held.event_id(), event);

    // The server goes away while the receiver holds the request.
    app.restart().await;
    let again = r.wait_for(2).await.remove(1);
    assert_eq!((again.event_id(), again.body.as_slice()), (event.clone(), held.body.as_slice()));
    assert_signed(&again, &hook.secret);
    assert!(again.attempt() == 1 || again.attempt() == 2, "the same attempt again, or the next: {}", again.attempt());
    let d = settled(&app, &u.key, &hook.id, &event).await;
    assert_eq!(d["status"], "succeeded", "{d}");
    assert_eq!(attempts(&d).last().unwrap()["response_status"], 200, "{d}");
    assert_eq!(deliveries(&app, &u.key, &hook.id, "").await.len(), 1);
    assert_eq!(r.count(), 2, "sent again once, not more");
    r.release();
}

/// The held attempt times out within the shutdown's grace, is recorded, and is retried after the restart.
async fn a_delivery_in_flight_when_the_server_stops_is_sent_after_the_restart(b: Backend) {
    restart_mid_delivery(b, 1.0, 2.0).await;
}

/// The attempt outlives the shutdown: the server stops waiting for it (a graceful stop gives attempts
/// in flight a few seconds at most), so the claim is left behind like a crashed worker's, and the next
/// server claims it again once its lease has run out.
async fn a_delivery_abandoned_at_shutdown_is_claimed_again_once_its_lease_runs_out(b: Backend) {
    restart_mid_delivery(b, 5.5, 6.0).await;
}

// =============================================================================================
// 10. Replicas share the queue

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_send_each_attempt_exactly_once() {
    let app = app(Backend::Postgres, &[("webhooks.retry_schedule_seconds", json!([0.05]))]).await;
    let replica = app.replica().await;
    let r = Receiver::start().await;
    // Every event fails once, so both first attempts and retries are shared.
    r.respond_with(|q| if q.attempt() == 1 { Reply::status(500) } else { Reply::ok() });
    let u = app.user().await;
    let hook = create_hook(&app, &u.key, &r.url("/hook"), Some(json!(["conversation.turn.done"]))).await;
    let convs = [
        stored_conversation(&app, &u, &[]).await,
        stored_conversation(&app, &u, &[]).await,
        stored_conversation(&app, &u, &[]).await,
    ];
    const N: usize = 30;
    let mut events = BTreeSet::new();
    for i in 0..N {
        let state = if i % 2 == 0 { app.state() } else { &replica.state };
        events.insert(turn_done(state, &convs[i % 3]).await);
    }
    let d = wait_deliveries(&app, &u.key, &hook.id, "every delivery to succeed", |d| {
        d.len() == N && d.iter().all(|d| d["status"] == "succeeded")
    })
    .await;
    assert!(d.iter().all(|d| d["attempt_count"] == 2), "{d:?}");
    let got = r.requests();
    let mut pairs = BTreeMap::new();
    for q in &got {
        *pairs.entry((q.event_id(), q.attempt())).or_insert(0) += 1;
    }
    let repeated: Vec<_> = pairs.iter().filter(|(_, n)| **n > 1).collect();
    assert!(repeated.is_empty(), "(event, attempt) sent more than once: {repeated:?}");
    let want: BTreeSet<(String, u32)> = events.iter().flat_map(|e| [(e.clone(), 1), (e.clone(), 2)]).collect();
    assert_eq!(pairs.keys().cloned().collect::<BTreeSet<_>>(), want);
    assert_eq!(got.len(), 2 * N);
    replica.shutdown().await.unwrap();
}

// =============================================================================================
// 11, 12. The delivery log

async fn deliveries_older_than_the_retention_are_deleted(b: Backend) {
    let app =
        app(b, &[("webhooks.retention_seconds", json!(1)), ("webhooks.cleanup_interval_seconds", json!(1))]).await;
    let r = Receiver::start().await;
    let u = app.user().await;
    let hook = create_hook(&app, &u.key, &r.url("/hook"), Some(json!(["*"]))).await;
    let t = tested(&app, &u.key, &hook.id).await;
    let c = stored_conversation(&app, &u, &[]).await;
    let event = turn_done(app.state(), &c).await;
    let d = settled(&app, &u.key, &hook.id, &event).await;

    wait_deliveries(&app, &u.key, &hook.id, "the log to be emptied", |d| d.is_empty()).await;
    for id in [t["id"].as_str().unwrap(), d["id"].as_str().unwrap()] {
        let rr = app.get(&format!("/api/webhooks/{}/deliveries/{id}", hook.id), &u.key).await;
        assert_error(&rr, StatusCode::NOT_FOUND, "not_found");
    }
    assert_eq!(endpoint(&app, &u.key, &hook.id).await["status"], "active", "the endpoint itself stays");
}

async fn the_delivery_log_pages_filters_and_stays_in_its_account(b: Backend) {
    let app = app(b, &[]).await;
    let r = Receiver::start().await;
    let u = app.user().await;
    let hook = create_hook(&app, &u.key, &r.url("/hook"), None).await;
    // Five test deliveries, oldest first; the 2nd and 4th fail.
    let mut ids = Vec::new();
    for i in 1..=5 {
        r.set_default(if i % 2 == 0 { Reply::status(500) } else { Reply::ok() });
        let d = tested(&app, &u.key, &hook.id).await;
        assert_eq!(d["status"], if i % 2 == 0 { "failed" } else { "succeeded" }, "{d}");
        ids.push(d["id"].as_str().unwrap().to_owned());
    }
    let (d1, d2, d3, d4, d5) = (ids[0].as_str(), ids[1].as_str(), ids[2].as_str(), ids[3].as_str(), ids[4].as_str());
    let list = |query: &str| {
        let app = &app;
        let key = u.key.clone();
        let path = format!("/api/webhooks/{}/deliveries?{query}", hook.id);
        async move {
            let rr = app.get(&path, &key).await;
            assert_eq!(rr.status, StatusCode::OK, "{}", rr.text);
            let got: Vec<String> =
                rr.body["data"].as_array().unwrap().iter().map(|d| d["id"].as_str().unwrap().to_owned()).collect();
            (got, rr.body["meta"].clone())
        }
    };

    let (got, meta) = list("").await;
    assert_eq!(got, [d5, d4, d3, d2, d1], "newest first");
    assert_eq!((meta["limit"].as_i64(), meta["has_more"].as_bool()), (Some(50), Some(false)), "{meta}");
    let (got, meta) = list("limit=2").await;
    assert_eq!(got, [d5, d4]);
    assert_eq!(meta["limit"], 2);
    assert_eq!(meta["has_more"], true);
    assert_eq!(meta["next_cursor"], json!(d4));
    let (got, meta) = list(&format!("limit=2&before={d4}")).await;
    assert_eq!(got, [d3, d2]);
    assert_eq!((meta["has_more"].as_bool(), meta["next_cursor"].as_str()), (Some(true), Some(d2)));
    let (got, meta) = list(&format!("limit=2&before={d2}")).await;
    assert_eq!(got, [d1]);
    assert_eq!(meta["has_more"], false);
    let (got, _) = list("status=failed").await;
    assert_eq!(got, [d4, d2]);
    let (got, _) = list("status=succeeded&limit=2").await;
    assert_eq!(got, [d5, d3]);
    let (got, _) = list(&format!("status=succeeded&before={d3}")).await;
    assert_eq!(got, [d1]);
    let (got, _) = list("status=pending").await;
    assert!(got.is_empty());
    let (got, _) = list("limit=200").await;
    assert_eq!(got.len(), 5);

    let base = format!("/api/webhooks/{}/deliveries", hook.id);
    for (query, field) in
        [("limit=0", "limit"), ("limit=201", "limit"), ("status=bogus", "status"), ("before=nope", "before")]
    {
        assert_invalid(&app.get(&format!("{base}?{query}"), &u.key).await, field);
    }

    // One delivery; other accounts and other endpoints do not see it.
    let rr = app.get(&format!("{base}/{d3}"), &u.key).await;
    assert_eq!(rr.status, StatusCode::OK, "{}", rr.text);
    assert_eq!(
        (rr.body["data"]["id"].as_str(), rr.body["data"]["endpoint_id"].as_str()),
        (Some(d3), Some(hook.id.as_str()))
    );
    assert_eq!(rr.body["data"]["event_type"], "webhook.test");
    let other = app.user().await;
    assert_error(&app.get(&base, &other.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.get(&format!("{base}/{d3}"), &other.key).await, StatusCode::NOT_FOUND, "not_found");
    let second = create_hook(&app, &u.key, &r.url("/second"), None).await;
    let wrong = format!("/api/webhooks/{}/deliveries/{d3}", second.id);
    assert_error(&app.get(&wrong, &u.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.post(&format!("{wrong}/redeliver"), &u.key, json!({})).await, StatusCode::NOT_FOUND, "not_found");
    assert_error(&app.get(&format!("{base}/{}", Uuid::new_v4()), &u.key).await, StatusCode::NOT_FOUND, "not_found");
    let (got, _) = list("").await;
    assert_eq!(got.len(), 5, "the second endpoint's deliveries are its own");
}

// ---------------------------------------------------------------------------------------------
// The runtime flag

async fn with_the_flag_off_the_routes_answer_not_enabled_and_events_enqueue_nothing(b: Backend) {
    let mut app = app(b, &[]).await;
    let r = Receiver::start().await;
    let u = app.user().await;
    let hook = create_hook(&app, &u.key, &r.url("/hook"), None).await;
    let c = stored_conversation(&app, &u, &[]).await;
    turn_done(app.state(), &c).await;
    let deliveries = |app: &TestApp| {
        let pool = app.state().db.pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM webhook_deliveries").fetch_one(&pool).await.unwrap()
        }
    };
    assert_eq!(deliveries(&app).await, 1, "with the flag on, an event enqueues its delivery");

    app.restart_with(&[("features.webhooks", json!(false))]).await;
    let listed = app.get("/api/webhooks", &u.key).await;
    assert_error(&listed, StatusCode::NOT_FOUND, "webhooks_not_enabled");
    let one = app.get(&format!("/api/webhooks/{}", hook.id), &u.key).await;
    assert_error(&one, StatusCode::NOT_FOUND, "webhooks_not_enabled");
    turn_done(app.state(), &c).await;
    assert_eq!(deliveries(&app).await, 1, "with the flag off, the event log enqueues nothing");
}
