//! Benchmark of webhook delivery (docs/webhooks.md) by one server (replica),
//! on SQLite and on PostgreSQL: deliveries per second to a loopback receiver,
//! and the delay from the start of a stage event's append to the receiver
//! getting its POST when the queue is at rest. Run through `bench/run`, or
//! alone:
//!
//!     cargo run --release --example bench_webhooks [-- --postgres postgres://postgres@127.0.0.1:5432]
//!
//! Each database gets a fresh server on 127.0.0.1:0 in this process (with
//! `webhooks.allow_http`, `127.0.0.0/8` exempted from the address checks and a
//! 60 s attempt timeout), one account, and one endpoint (`event_types: ["*"]`)
//! pointing at a receiver in this process: axum on 127.0.0.1:0 answering 200
//! with an empty body and noting when each `Service-Event-Id` (the event id)
//! first arrives. Every event must arrive; repeated ids are counted. The
//! events' conversations are rows written straight into the table (idle, no
//! machine).
//!
//! 1. End to end: BENCH_WEBHOOK_EVENTS `turn`/`done` stage events appended
//!    through `events::append`, 100 per call (25 for each of 4 conversations),
//!    as fast as they go while the server delivers; the clock runs from the
//!    first append to the receipt of the last event.
//! 2. Backlog: the receiver holds its answers while as many events again are
//!    appended (the appends/s column: the append path with the deliveries'
//!    enqueue and nothing else running), then answers; the clock runs from
//!    then to the receipt of the last event: the worker alone.
//! 3. At rest: one event every BENCH_WEBHOOK_INTERVAL_MS, BENCH_WEBHOOK_SAMPLES
//!    times.
//!
//! Knobs: BENCH_WEBHOOK_EVENTS (10000), BENCH_WEBHOOK_SAMPLES (200),
//! BENCH_WEBHOOK_INTERVAL_MS (50), BENCH_WEBHOOK_CONCURRENCY (unset: the
//! server's default `webhooks.concurrency`), BENCH_WEBHOOK_DB (`sqlite` or
//! `postgres` for one of them; unset: both).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use acs::core::events::{self, NewEvent, Scope, StageState};
use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use tokio::sync::{Notify, watch};
use uuid::Uuid;

#[path = "util/mod.rs"]
mod util;
use util::{bench_account, env_or, on_each_database, percentile, pg_base, start_server};

/// The clock appends and receipts are both read from (one process).
fn clock() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

fn micros_now() -> u64 {
    u64::try_from(clock().elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// What the receiver saw: the first receipt of each event id, how many
/// requests repeated an id already seen, and the ids a waiter still expects.
#[derive(Default)]
struct Receipts {
    first: HashMap<i64, u64>,
    repeats: u64,
    awaited: HashSet<i64>,
    /// The latest first receipt of an awaited id.
    last: u64,
}

#[derive(Default)]
struct Seen {
    receipts: Mutex<Receipts>,
    /// Rung when the last awaited id arrives.
    done: Notify,
}

type Shared = Arc<Seen>;

/// The loopback receiver: answers every POST 200 with an empty body once
/// `open` is true, and notes the time it answered.
async fn receiver(seen: Shared, open: watch::Receiver<bool>) -> std::net::SocketAddr {
    let app = Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap| {
            let (seen, mut open) = (seen.clone(), open.clone());
            async move {
                let _ = open.wait_for(|o| *o).await;
                let at = micros_now();
                let id = headers.get("service-event-id").and_then(|v| v.to_str().ok()?.parse::<i64>().ok());
                let mut r = seen.receipts.lock().unwrap();
                match id {
                    Some(id) if r.first.contains_key(&id) => r.repeats += 1,
                    Some(id) => {
                        r.first.insert(id, at);
                        if r.awaited.remove(&id) {
                            r.last = r.last.max(at);
                            if r.awaited.is_empty() {
                                seen.done.notify_one();
                            }
                        }
                    }
                    None => {}
                }
                StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// Waits until every id in `ids` has arrived or `limit` passed; returns how
/// many are missing and the receipt time of the last that arrived.
async fn wait_for(seen: &Shared, ids: &[i64], limit: Duration) -> (usize, u64) {
    {
        let mut r = seen.receipts.lock().unwrap();
        let r = &mut *r;
        r.last = ids.iter().filter_map(|id| r.first.get(id)).max().copied().unwrap_or_default();
        r.awaited = ids.iter().copied().filter(|id| !r.first.contains_key(id)).collect();
    }
    let until = tokio::time::Instant::now() + limit;
    loop {
        {
            let r = seen.receipts.lock().unwrap();
            if r.awaited.is_empty() || tokio::time::Instant::now() >= until {
                return (r.awaited.len(), r.last);
            }
        }
        let _ = tokio::time::timeout_at(until, seen.done.notified()).await;
    }
}

/// Waits (at most 60 s) until every delivery is settled as `succeeded`; the
/// receipt comes before the settle.
async fn settled(state: &acs::core::AppState) {
    let until = Instant::now() + Duration::from_secs(60);
    while Instant::now() < until {
        let left = sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM webhook_deliveries WHERE status <> 'succeeded'")
            .fetch_one(&state.db.pool)
            .await
            .unwrap();
        if left == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    eprintln!("bench_webhooks: deliveries still unsettled after 60 s");
}

fn turn_done() -> NewEvent {
    NewEvent::stage("turn", StageState::Done, &json!({}))
}

/// This process's CPU time (user + system), in seconds.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat[stat.rfind(')').map_or(0, |i| i + 2)..].split(' ').collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// A conversation row for the events (no machine, no agent process): a
/// delivery whose conversation row is missing waits up to 30 s for it.
async fn conversation(state: &acs::core::AppState, account: Uuid) -> Uuid {
    let id = Uuid::now_v7();
    let now = i64::try_from(std::time::UNIX_EPOCH.elapsed().unwrap().as_micros()).unwrap();
    sqlx::query(
        "INSERT INTO conversations (id, account_id, agent_id, runtime, status, labels, created_at, updated_at) \
         VALUES ($1, $2, $3, 'claude', 'idle', '{\"bench\":\"webhooks\"}', $4, $4)",
    )
    .bind(id.to_string())
    .bind(account.to_string())
    .bind(Uuid::now_v7().to_string())
    .bind(now)
    .execute(&state.db.pool)
    .await
    .unwrap();
    id
}

/// Appends `total` stage events, 100 per call; their ids and the time it took (s).
async fn append_all(state: &acs::core::AppState, account: Uuid, total: usize) -> (Vec<i64>, f64) {
    let mut conversations = Vec::new();
    for _ in 0..4 {
        conversations.push(conversation(state, account).await);
    }
    let scope = Scope { account_id: account, sandbox_id: None, conversations, turn_id: None };
    let batch = vec![turn_done(); 25];
    let mut ids = Vec::with_capacity(total + 100);
    let t = Instant::now();
    for _ in 0..total.div_ceil(100) {
        ids.extend(events::append(state, &scope, &batch, None).await.unwrap().iter().map(|e| e.id));
    }
    (ids, t.elapsed().as_secs_f64())
}

struct Outcome {
    end_to_end: f64,
    drain: f64,
    appends: f64,
    events: usize,
    missing: usize,
    repeats: u64,
    delays: Vec<f64>,
    late: usize,
}

async fn run_on(label: &str, db_url: &str, total: usize, samples: usize, interval: Duration) -> (usize, Outcome) {
    let dir = std::env::temp_dir().join(format!("acs-bench-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut extra = vec![
        ("webhooks.allow_http", json!(true)),
        ("webhooks.allowed_private_cidrs", json!(["127.0.0.0/8"])),
        // The backlog run holds answers while it appends.
        ("webhooks.timeout_seconds", json!(60)),
        ("webhooks.lease_seconds", json!(120)),
    ];
    if let Ok(n) = std::env::var("BENCH_WEBHOOK_CONCURRENCY") {
        extra.push(("webhooks.concurrency", json!(n.parse::<usize>().expect("BENCH_WEBHOOK_CONCURRENCY"))));
    }
    let running = start_server(db_url, &dir, &extra).await;
    let state = running.state.clone();
    let webhooks: serde_json::Value = state.loaded.section("webhooks").unwrap();
    let concurrency = webhooks["concurrency"].as_u64().unwrap() as usize;
    let base = format!("http://{}", running.addr);
    let http = reqwest::Client::new();
    let (account, key) = bench_account(&http, &base).await;

    let seen: Shared = Arc::default();
    let (gate, open) = watch::channel(true);
    let hook = receiver(seen.clone(), open).await;
    let resp = http
        .post(format!("{base}/api/webhooks"))
        .bearer_auth(&key)
        .json(&json!({"url": format!("http://{hook}/hook"), "event_types": ["*"]}))
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let body: Value = resp.json().await.unwrap_or_default();
    assert_eq!(status.as_u16(), 201, "creating the endpoint: {body}");

    // Warm-up: the sender's connections, the statement caches.
    let (ids, _) = append_all(&state, account, 200).await;
    assert_eq!(wait_for(&seen, &ids, Duration::from_secs(30)).await.0, 0, "the warm-up events never arrived");
    settled(&state).await;

    // (1) End to end.
    let cpu0 = cpu_seconds();
    let t0 = micros_now();
    let (ids, appended_s) = append_all(&state, account, total).await;
    let (mut missing, last) = wait_for(&seen, &ids, Duration::from_secs(120)).await;
    let wall_s = (last - t0) as f64 / 1e6;
    let cpu = 100.0 * (cpu_seconds() - cpu0) / wall_s;
    let end_to_end = (ids.len() - missing) as f64 / wall_s;
    settled(&state).await;
    let settled_s = (micros_now() - t0) as f64 / 1e6;
    let events_n = ids.len();
    eprintln!(
        "bench_webhooks: {label}, end to end: appended in {appended_s:.2} s, last receipt {wall_s:.2} s, all settled \
         {settled_s:.2} s, this process's CPU {cpu:.0}% of one core"
    );

    // (2) A backlog, drained by the worker alone.
    gate.send_replace(false);
    let (ids, appended_s) = append_all(&state, account, total).await;
    let appends = ids.len() as f64 / appended_s;
    let cpu0 = cpu_seconds();
    let t0 = micros_now();
    gate.send_replace(true);
    let (gone, last) = wait_for(&seen, &ids, Duration::from_secs(120)).await;
    missing += gone;
    let wall_s = (last - t0) as f64 / 1e6;
    let cpu = 100.0 * (cpu_seconds() - cpu0) / wall_s;
    let drain = (ids.len() - gone) as f64 / wall_s;
    settled(&state).await;
    eprintln!(
        "bench_webhooks: {label}, backlog: appended in {appended_s:.2} s, drained in {wall_s:.2} s, all settled {:.2} s, \
         this process's CPU {cpu:.0}% of one core",
        (micros_now() - t0) as f64 / 1e6
    );

    // (3) At rest: one event at a time.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let one = Scope {
        account_id: account,
        sandbox_id: None,
        conversations: vec![conversation(&state, account).await],
        turn_id: None,
    };
    let mut sent: Vec<(i64, u64)> = Vec::with_capacity(samples);
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for _ in 0..samples {
        tick.tick().await;
        let at = micros_now();
        let id = events::append(&state, &one, &[turn_done()], None).await.unwrap()[0].id;
        sent.push((id, at));
    }
    let sample_ids: Vec<i64> = sent.iter().map(|(id, _)| *id).collect();
    let (late, _) = wait_for(&seen, &sample_ids, Duration::from_secs(30)).await;
    let delays: Vec<f64> = {
        let r = seen.receipts.lock().unwrap();
        sent.iter().filter_map(|(id, at)| r.first.get(id).map(|got| (got - at) as f64 / 1000.0)).collect()
    };
    let repeats = seen.receipts.lock().unwrap().repeats;

    running.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (concurrency, Outcome { end_to_end, drain, appends, events: events_n, missing, repeats, delays, late })
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    clock();
    let pg_base = pg_base();
    let total = env_or("BENCH_WEBHOOK_EVENTS", 10_000);
    let samples = env_or("BENCH_WEBHOOK_SAMPLES", 200);
    let interval = Duration::from_millis(env_or("BENCH_WEBHOOK_INTERVAL_MS", 50) as u64);
    let only = std::env::var("BENCH_WEBHOOK_DB").unwrap_or_default();

    let runs =
        on_each_database(
            &only,
            &pg_base,
            |label, url| async move { run_on(label, &url, total, samples, interval).await },
        )
        .await;
    // Every run reports the server's delivery concurrency; the table header shows it once.
    let concurrency = runs.iter().find_map(|(_, r)| r.as_ref().ok().map(|(c, _)| *c)).unwrap_or_default();
    let mut results: Vec<(&str, Result<Outcome, String>)> =
        runs.into_iter().map(|(l, r)| (l, r.map(|(_, o)| o))).collect();

    println!(
        "| webhooks to a loopback receiver, one server, `webhooks.concurrency` {concurrency} | deliveries/s, \
         appending as fast as it goes | deliveries/s, draining a backlog | appends/s (100 per call) with \
         the deliveries' enqueue | every event delivered |"
    );
    println!("| --- | ---: | ---: | ---: | --- |");
    for (label, o) in &results {
        match o {
            Ok(o) => {
                let delivered = if o.missing == 0 {
                    format!("yes, {} events in each run, {} repeats", o.events, o.repeats)
                } else {
                    format!("**no: {} missing** of {} per run, {} repeats", o.missing, o.events, o.repeats)
                };
                println!("| {label} | {:.0} | {:.0} | {:.0} | {delivered} |", o.end_to_end, o.drain, o.appends);
            }
            Err(e) => println!("| {label} | {e} | | | |"),
        }
    }
    println!();
    println!(
        "| webhook delay at rest, append to receipt, one event every {} ms | p50 | p90 | p99 | max | delivered |",
        interval.as_millis()
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for (label, o) in results.iter_mut() {
        let Ok(o) = o else { continue };
        let got = o.delays.len();
        if got == 0 {
            println!("| {label} | | | | | 0 of {samples} |");
            continue;
        }
        let d = &mut o.delays;
        let (p50, p90, p99) = (percentile(d, 0.5), percentile(d, 0.9), percentile(d, 0.99));
        let max = d.last().copied().unwrap_or_default();
        let late = if o.late > 0 { format!(" ({} late)", o.late) } else { String::new() };
        println!("| {label} | {p50:.1} ms | {p90:.1} ms | {p99:.1} ms | {max:.1} ms | {got} of {samples}{late} |");
    }
}
