//! Benchmark of the openai subscriptions extension (docs/subscriptions.md):
//! device-code sign-ins (RFC 8628) started and polled at scale, and the
//! token the broker attaches per model request. One in-process server on a
//! new SQLite file and a minimal fake vendor (axum) in this process, all on
//! 127.0.0.1. Run through `bench/run`, or alone:
//!
//!     cargo run --release --example bench_subscriptions
//!
//! The fake vendor: `POST /device` (device authorization) hands out
//! `dc-N`/`UC-N` with `interval` 1 and `expires_in` 900; `POST /token`
//! answers `authorization_pending` (400, RFC 6749 5.2) unless the user code
//! was approved, then an access token; `GET /usage` says not exhausted. It
//! counts the token endpoint's device-code polls and when each attempt was
//! polled.
//!
//! 1. Sign-ins: BENCH_SUBS_ATTEMPTS attempts (`POST
//!    /api/account/openai-subscriptions/attempts`, a new link each) over as
//!    many accounts as the limit of 3 open per account needs, from 16
//!    concurrent keep-alive clients; creates/s and the POST's p50/p99. Then,
//!    for BENCH_SUBS_SECONDS, the token endpoint's polls per second (the
//!    server's one poller; ideal: one per attempt per second), how many
//!    attempts were polled and how long one waited between two polls; the
//!    process's threads, VmRSS (after `malloc_trim`) and tokio alive tasks
//!    before the first attempt, after the creates and after the window
//!    (server, vendor and clients share them; the goal is judged on the
//!    window: the poller must not grow a task or memory per attempt).
//! 2. Token attachment: one subscription linked through the flow (its user
//!    code approved at the fake vendor), then `GrantSource::attach` (vendor
//!    `openai`, from `state.extensions.grant_sources`) BENCH_SUBS_ATTACHES
//!    times one at a time after a tenth as warm-up, p50/p99, at rest (before
//!    the attempts) and again with the attempts open and polled.
//!
//! Knobs: BENCH_SUBS_ATTEMPTS (1000), BENCH_SUBS_SECONDS (10),
//! BENCH_SUBS_ATTACHES (3000).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use serde_json::{Value, json};
use uuid::Uuid;

#[path = "util/mod.rs"]
mod util;
use util::{account, env_or, fan_out, percentile, start_server};

const BASE: &str = "/api/account/openai-subscriptions";
const OPEN_PER_ACCOUNT: usize = 3;
const CLIENTS: usize = 16;

/// The fake vendor's state.
#[derive(Default)]
struct Vendor {
    issued: AtomicU64,
    polls: AtomicU64,
    /// Device codes whose user code was approved.
    approved: Mutex<HashSet<String>>,
    /// Device code -> the times it was polled, while `recording`.
    seen: Mutex<HashMap<String, Vec<Instant>>>,
    recording: std::sync::atomic::AtomicBool,
}

impl Vendor {
    fn approve(&self, user_code: &str) {
        let n = user_code.strip_prefix("UC-").expect("a user code of this vendor");
        self.approved.lock().unwrap().insert(format!("dc-{n}"));
    }
}

async fn device(State(v): State<Arc<Vendor>>) -> axum::Json<Value> {
    let n = v.issued.fetch_add(1, Ordering::Relaxed);
    axum::Json(json!({
        "device_code": format!("dc-{n}"),
        "user_code": format!("UC-{n}"),
        "verification_uri": "http://127.0.0.1/device",
        "expires_in": 900,
        "interval": 1,
    }))
}

async fn token(State(v): State<Arc<Vendor>>, body: String) -> Response {
    let fields: HashMap<String, String> = form_urlencoded::parse(body.as_bytes()).into_owned().collect();
    let device_code = fields.get("device_code").cloned().unwrap_or_default();
    if fields.get("grant_type").map(String::as_str) == Some("urn:ietf:params:oauth:grant-type:device_code") {
        v.polls.fetch_add(1, Ordering::Relaxed);
        if v.recording.load(Ordering::Relaxed) {
            v.seen.lock().unwrap().entry(device_code.clone()).or_default().push(Instant::now());
        }
    }
    if v.approved.lock().unwrap().contains(&device_code) {
        let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"sub":"bench-vendor-account","email":"bench@vendor.test","plan":"plus"}"#);
        return axum::Json(json!({
            "access_token": format!("at-{device_code}"),
            "refresh_token": format!("rt-{device_code}"),
            "token_type": "Bearer",
            "expires_in": 86_400,
            "id_token": format!("h.{claims}.s"),
        }))
        .into_response();
    }
    (StatusCode::BAD_REQUEST, axum::Json(json!({"error": "authorization_pending"}))).into_response()
}

async fn usage() -> axum::Json<Value> {
    axum::Json(json!({"exhausted": false}))
}

async fn start_vendor() -> (String, Arc<Vendor>) {
    let v = Arc::new(Vendor::default());
    let app = Router::new()
        .route("/device", post(device))
        .route("/token", post(token))
        .route("/usage", get(usage))
        .with_state(v.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, v)
}

fn self_status(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Threads, VmRSS (KB) and tokio alive tasks of this process.
struct Snapshot {
    threads: u64,
    rss_kb: u64,
    tasks: usize,
}

/// Taken after `malloc_trim`, so what the allocator keeps of freed memory (the
/// accounts' Argon2 hashing leaves hundreds of MB) does not count.
fn snapshot() -> Snapshot {
    // SAFETY: malloc_trim only returns free memory to the system.
    unsafe { libc::malloc_trim(0) };
    Snapshot {
        threads: self_status("Threads:"),
        rss_kb: self_status("VmRSS:"),
        tasks: tokio::runtime::Handle::current().metrics().num_alive_tasks(),
    }
}

async fn post_attempt(http: &reqwest::Client, base: &str, key: &str, name: &str) -> (StatusCode, Value) {
    let r =
        http.post(format!("{base}{BASE}/attempts")).bearer_auth(key).json(&json!({"name": name})).send().await.unwrap();
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// p50 and p99 of `n` calls of `attach`, one at a time, after `n / 10` warm-up calls, in ms.
async fn attach_latency(state: &acs::core::AppState, account_id: Uuid, grant_id: Uuid, n: usize) -> (f64, f64) {
    let source = state
        .extensions
        .grant_sources
        .iter()
        .find(|s| s.vendor() == "openai")
        .expect("the openai grant source")
        .clone();
    let mut ms = Vec::with_capacity(n);
    for i in 0..n + n / 10 {
        let t = Instant::now();
        let a = source.attach(state, account_id, grant_id).await.unwrap();
        let elapsed = t.elapsed().as_secs_f64() * 1000.0;
        assert_eq!(a.value.as_deref().map(|v| v.starts_with("Bearer at-dc-")), Some(true), "{:?}", a.value);
        if i >= n / 10 {
            ms.push(elapsed);
        }
    }
    (percentile(&mut ms, 0.5), percentile(&mut ms, 0.99))
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let attempts = env_or("BENCH_SUBS_ATTEMPTS", 1000);
    let seconds = env_or("BENCH_SUBS_SECONDS", 10);
    let attaches = env_or("BENCH_SUBS_ATTACHES", 3000);
    let accounts = attempts.div_ceil(OPEN_PER_ACCOUNT);

    let (vendor_base, vendor) = start_vendor().await;
    let dir = std::env::temp_dir().join(format!("acs-bench-subs-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = format!("sqlite://{}", dir.join("acs.db").display());
    let config = [
        ("features.openai_subscriptions", json!(true)),
        ("features.brokerage", json!(true)),
        ("subscriptions.openai.device_url", json!(format!("{vendor_base}/device"))),
        ("subscriptions.openai.token_url", json!(format!("{vendor_base}/token"))),
        ("subscriptions.openai.usage_url", json!(format!("{vendor_base}/usage"))),
        ("subscriptions.openai.client_id", json!("acs-bench")),
        ("subscriptions.openai.api_hosts", json!(["api.vendor.test"])),
        ("subscriptions.openai.poll_interval", json!(1)),
    ];
    let server = start_server(&db, &dir, &config).await;
    let base = format!("http://{}", server.addr);
    let http = reqwest::Client::builder().pool_max_idle_per_host(CLIENTS).build().unwrap();

    // The accounts: one that links a subscription, then those holding the attempts.
    let started = Instant::now();
    let keys: Vec<(Uuid, String)> = {
        let (http, base) = (http.clone(), base.clone());
        fan_out(4, accounts + 1, move |i| {
            let (http, base) = (http.clone(), base.clone());
            async move { account(&http, &base, &format!("subs-{i}@bench.example")).await }
        })
        .await
    };
    let accounts_s = started.elapsed().as_secs_f64();
    let accounts_done = Instant::now();

    // One subscription linked through the flow: started, approved at the vendor, polled to completion.
    let (link_account, link_key) = keys[0].clone();
    let (status, body) = post_attempt(&http, &base, &link_key, "bench").await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    vendor.approve(body["data"]["user_code"].as_str().unwrap());
    let attempt_id = body["data"]["id"].as_str().unwrap().to_owned();
    let linked_at = Instant::now();
    let grant_id: Uuid = loop {
        let r: Value = http
            .get(format!("{base}{BASE}/attempts/{attempt_id}"))
            .bearer_auth(&link_key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        match r["data"]["state"].as_str() {
            Some("completed") => break r["data"]["result_grant_id"].as_str().unwrap().parse().unwrap(),
            Some("pending") if linked_at.elapsed() < Duration::from_secs(30) => {}
            _ => panic!("the link attempt did not complete: {r}"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let link_s = linked_at.elapsed().as_secs_f64();
    let (rest50, rest99) = attach_latency(&server.state, link_account, grant_id, attaches).await;

    // The attempts, as fast as the server takes them. First the runtime's blocking
    // threads that hashed the accounts' passwords go idle and exit (after 10 s), with
    // their memory, so the snapshot before is not the hashing's.
    tokio::time::sleep(Duration::from_secs(12).saturating_sub(accounts_done.elapsed())).await;
    let before = snapshot();
    let polls_before_create = vendor.polls.load(Ordering::Relaxed);
    let started = Instant::now();
    let owners: Arc<Vec<String>> = Arc::new(keys[1..].iter().map(|(_, k)| k.clone()).collect());
    let results: Vec<(StatusCode, f64)> = {
        let (http, base, owners) = (http.clone(), base.clone(), owners.clone());
        fan_out(CLIENTS, attempts, move |i| {
            let (http, base, owners) = (http.clone(), base.clone(), owners.clone());
            async move {
                let key = &owners[i / OPEN_PER_ACCOUNT];
                let t = Instant::now();
                let (status, body) = post_attempt(&http, &base, key, &format!("sub-{i}")).await;
                assert_eq!(status, StatusCode::CREATED, "attempt {i}: {body}");
                (status, t.elapsed().as_secs_f64() * 1000.0)
            }
        })
        .await
    };
    let create_s = started.elapsed().as_secs_f64();
    let created = snapshot();
    let polls_during_create = vendor.polls.load(Ordering::Relaxed) - polls_before_create;
    let mut create_ms: Vec<f64> = results.iter().map(|(_, ms)| *ms).collect();
    let (c50, c99) = (percentile(&mut create_ms, 0.5), percentile(&mut create_ms, 0.99));

    // The poller against the open attempts, second by second.
    vendor.recording.store(true, Ordering::Relaxed);
    let window_start = Instant::now();
    let mut per_second = Vec::with_capacity(seconds);
    let mut last = vendor.polls.load(Ordering::Relaxed);
    for s in 1..=seconds {
        tokio::time::sleep_until((window_start + Duration::from_secs(s as u64)).into()).await;
        let now = vendor.polls.load(Ordering::Relaxed);
        per_second.push(now - last);
        last = now;
    }
    vendor.recording.store(false, Ordering::Relaxed);
    let after = snapshot();
    let window_s = window_start.elapsed().as_secs_f64();
    let polled: u64 = per_second.iter().sum();
    let (distinct, mut gaps) = {
        let seen = vendor.seen.lock().unwrap();
        let gaps: Vec<f64> =
            seen.values().flat_map(|times| times.windows(2).map(|w| (w[1] - w[0]).as_secs_f64())).collect();
        (seen.len(), gaps)
    };
    let gap50 = if gaps.is_empty() { f64::NAN } else { percentile(&mut gaps, 0.5) };
    let open: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM openai_link_attempts WHERE state = 'pending'")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();

    // Attachment again, with the attempts open and polled.
    let (load50, load99) = attach_latency(&server.state, link_account, grant_id, attaches).await;
    let after_attach_polls = vendor.polls.load(Ordering::Relaxed);
    server.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);

    let rate = polled as f64 / window_s;
    let (min, max) = (per_second.iter().min().unwrap(), per_second.iter().max().unwrap());
    let met = |ok: bool| if ok { "met" } else { "**missed**" };
    // Keeping up: every open attempt polled, and the typical wait between two polls of one
    // within half again its 1 s interval.
    let keeps_up = distinct as i64 >= open && gap50 <= 1.5;
    let window_tasks = after.tasks as i64 - created.tasks as i64;
    let window_rss_kb = after.rss_kb as f64 - created.rss_kb as f64;
    let show = |s: &Snapshot| format!("{} / {:.1} MB / {}", s.threads, s.rss_kb as f64 / 1024.0, s.tasks);
    // The poller neither starts a task per attempt nor grows while it polls them: what the
    // window adds stays under the poller's polls in flight (32, each with its kept connection).
    let bounded = window_tasks <= 40 && window_rss_kb < 10_240.0 && after.threads <= created.threads;
    println!(
        "| openai subscriptions, SQLite, in-process server and fake RFC 8628 vendor on 127.0.0.1, {attempts} open sign-ins over {accounts} accounts | value | goal |"
    );
    println!("| --- | ---: | --- |");
    println!(
        "| sign-ins started (`POST {BASE}/attempts`, a new link each, the vendor's device authorization in the request), {CLIENTS} concurrent clients: per second | {:.0} ({attempts} in {create_s:.2} s) | |",
        attempts as f64 / create_s
    );
    println!("| same: POST latency p50 / p99 | {c50:.2} / {c99:.2} ms | |");
    println!(
        "| token-endpoint polls per second by the server's poller, {attempts} attempts open at `interval` 1 s, {seconds} s window (per second min / max {min} / {max}; ideal {attempts}) | {rate:.1} | every open attempt polled, p50 between two polls within 1.5x the 1 s interval: {} |",
        met(keeps_up)
    );
    println!(
        "| same window: attempts polled at least once; p50 time between two polls of one attempt | {distinct} of {open} open; {} (at this rate each is polled every {:.0} s) | |",
        if gap50.is_nan() { "no attempt polled twice".to_owned() } else { format!("{gap50:.1} s") },
        open as f64 / rate
    );
    println!(
        "| process threads / VmRSS (after `malloc_trim`) / tokio alive tasks, server, vendor and clients in one process: after the creates, after the {seconds} s window | {}, {} ({:+.1} MB, {window_tasks:+} tasks in the window) | memory bounded, no task per attempt (at most the 32 polls in flight): {} |",
        show(&created),
        show(&after),
        window_rss_kb / 1024.0,
        met(bounded)
    );
    println!(
        "| same, before the first attempt (the accounts' Argon2 hashing just done: its memory is not all returned yet, so no growth per attempt is read from it; the creates add the {CLIENTS} clients' kept connections at the server and the server's at the vendor as tasks) | {} | |",
        show(&before)
    );
    println!(
        "| token attachment per model request (`GrantSource::attach`, vendor `openai`: read, open the sealed token, stamp `last_used_at`), {attaches} calls one at a time, at rest: p50 / p99 | {rest50:.3} / {rest99:.3} ms | under 1 ms p50: {} |",
        met(rest50 < 1.0)
    );
    println!(
        "| same, with the {attempts} attempts open and polled | {load50:.3} / {load99:.3} ms | under 1 ms p50: {} |",
        met(load50 < 1.0)
    );
    eprintln!(
        "bench_subscriptions: {} accounts in {accounts_s:.1} s; the link completed {link_s:.2} s after its start; {polls_during_create} polls while the attempts were created; {after_attach_polls} polls in all",
        accounts + 1
    );
}
