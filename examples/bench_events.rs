//! Benchmark of the event log, in one run: the append rate through
//! `events::append` (100 events per call, and 1 per call) on SQLite and on
//! PostgreSQL, and SSE fan-out: many concurrent subscribers of
//! `GET /api/events/stream` on one account, with the delay from the start of
//! an append to each subscriber's receipt of the frame. Run through
//! `bench/run`, or alone:
//!
//!     cargo run --release --example bench_events [-- --postgres postgres://postgres@127.0.0.1:5432]
//!
//! Each database gets a fresh server on 127.0.0.1:0 in this process. The
//! fan-out run holds two sockets per subscriber (about 1,100 descriptors).
//! Knobs: BENCH_APPEND_EVENTS (20000), BENCH_FANOUT_SUBSCRIBERS (500),
//! BENCH_FANOUT_EVENTS (200), BENCH_FANOUT_INTERVAL_MS (20).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use acs::core::events::{self, NewEvent, Scope};
use serde_json::{Value, json};
use sqlx::Connection;
use uuid::Uuid;

#[path = "util/mod.rs"]
mod util;
use util::{bench_account, env_or, percentile, pg_base, start_server};

/// The clock appends and receipts are both read from (one process).
fn clock() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

fn micros_now() -> u64 {
    u64::try_from(clock().elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// An agent's text chunk as the turn engine writes it.
fn chunk(i: usize) -> NewEvent {
    let text = format!("line {i}: the agent streams a sentence of about eighty characters here.");
    NewEvent::output("stdout", text.clone()).with_blocks(json!([{"type": "text", "text": text}]))
}

/// Appends `total` events, `per_call` per `events::append`, from one task
/// (as one conversation's writer does); returns events per second.
async fn append_rate(state: &acs::core::AppState, total: usize, per_call: usize) -> f64 {
    let scope = Scope {
        account_id: Uuid::now_v7(),
        sandbox_id: Some(Uuid::now_v7()),
        conversations: vec![Uuid::now_v7()],
        turn_id: Some(Uuid::now_v7()),
    };
    let batch: Vec<NewEvent> = (0..per_call).map(chunk).collect();
    for _ in 0..(200 / per_call).max(3) {
        events::append(state, &scope, &batch, None).await.unwrap();
    }
    let calls = total.div_ceil(per_call);
    let t = Instant::now();
    for _ in 0..calls {
        events::append(state, &scope, &batch, None).await.unwrap();
    }
    (calls * per_call) as f64 / t.elapsed().as_secs_f64()
}

async fn appends_on(label: &str, db_url: &str, total: usize) {
    let dir = std::env::temp_dir().join(format!("acs-bench-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let running = start_server(db_url, &dir, &[]).await;
    let batched = append_rate(&running.state, total, 100).await;
    let single = append_rate(&running.state, total / 10, 1).await;
    println!("| {label} | {batched:.0} | {single:.0} |");
    running.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Reads one subscriber's stream until `expect` measured frames came;
/// returns the delay of each in milliseconds. Frames whose data is not a
/// send time (the warm-up) only count towards `ready`.
async fn subscriber(
    mut resp: reqwest::Response,
    expect: usize,
    ready: tokio::sync::mpsc::UnboundedSender<()>,
) -> Vec<f64> {
    let mut buf = String::new();
    let mut delays = Vec::with_capacity(expect);
    let mut announced = false;
    while delays.len() < expect {
        let Ok(Some(bytes)) = resp.chunk().await else { break };
        buf.push_str(&String::from_utf8_lossy(&bytes));
        while let Some(end) = buf.find("\n\n") {
            let frame: String = buf.drain(..end + 2).collect();
            let Some(data) = frame.lines().find_map(|l| l.strip_prefix("data:")) else { continue };
            let Ok(v) = serde_json::from_str::<Value>(data.trim()) else { continue };
            match v["data"].as_str().and_then(|d| d.parse::<u64>().ok()) {
                Some(sent) => delays.push(micros_now().saturating_sub(sent) as f64 / 1000.0),
                None if !announced => {
                    announced = true;
                    let _ = ready.send(());
                }
                None => {}
            }
        }
    }
    delays
}

async fn fanout(subscribers: usize, events_n: usize, interval: Duration) {
    let dir = std::env::temp_dir().join(format!("acs-bench-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let running = start_server(&format!("sqlite://{}", dir.join("acs.db").display()), &dir, &[]).await;
    let base = format!("http://{}", running.addr);
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let (account, key) = bench_account(&http, &base).await;
    let scope = Scope { account_id: account, sandbox_id: None, conversations: vec![Uuid::now_v7()], turn_id: None };

    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut tasks = Vec::with_capacity(subscribers);
    for _ in 0..subscribers {
        let resp = http.get(format!("{base}/api/events/stream")).bearer_auth(&key).send().await.unwrap();
        assert!(resp.status().is_success(), "status {}", resp.status());
        tasks.push(tokio::spawn(subscriber(resp, events_n, ready_tx.clone())));
    }
    drop(ready_tx);
    // Every subscriber is on the bus once it has seen a warm-up event.
    let mut ready = 0;
    while ready < subscribers {
        events::append(&running.state, &scope, &[NewEvent::output("stdout", "warm-up")], None).await.unwrap();
        let wait = tokio::time::sleep(Duration::from_millis(200));
        tokio::pin!(wait);
        loop {
            tokio::select! {
                _ = &mut wait => break,
                got = ready_rx.recv() => match got {
                    Some(()) => ready += 1,
                    None => panic!("the subscribers ended early"),
                },
            }
        }
    }
    let mut tick = tokio::time::interval(interval);
    for _ in 0..events_n {
        tick.tick().await;
        let sent = micros_now().to_string();
        events::append(&running.state, &scope, &[NewEvent::output("stdout", sent)], None).await.unwrap();
    }
    let mut delays = Vec::with_capacity(subscribers * events_n);
    for t in tasks {
        delays.extend(tokio::time::timeout(Duration::from_secs(60), t).await.expect("every frame arrives").unwrap());
    }
    let delivered = delays.len();
    let (p50, p99) = (percentile(&mut delays, 0.5), percentile(&mut delays, 0.99));
    let max = delays.last().copied().unwrap_or_default();
    println!(
        "| {subscribers} subscribers of /api/events/stream, {events_n} events {} ms apart | {p50:.2} ms | {p99:.2} ms | {max:.2} ms | {delivered} of {} |",
        interval.as_millis(),
        subscribers * events_n
    );
    running.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    clock();
    let pg_base = pg_base();
    let total = env_or("BENCH_APPEND_EVENTS", 20_000);
    println!("| event appends (`events::append`, one writer) | events/s, 100 per call | events/s, 1 per call |");
    println!("| --- | ---: | ---: |");
    let dir = std::env::temp_dir().join(format!("acs-bench-sqlite-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    appends_on("SQLite", &format!("sqlite://{}", dir.join("acs.db").display()), total).await;
    let _ = std::fs::remove_dir_all(&dir);
    let name = format!("acs_bench_{}", Uuid::new_v4().simple());
    match sqlx::PgConnection::connect(&format!("{pg_base}/test")).await {
        Ok(mut admin) => {
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut admin).await.unwrap();
            appends_on("PostgreSQL", &format!("{pg_base}/{name}"), total).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
            let _ = sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE {name} WITH (FORCE)")))
                .execute(&mut admin)
                .await;
        }
        Err(e) => println!("| PostgreSQL | skipped: {e} | |"),
    }
    println!();
    println!("| SSE fan-out, SQLite, append to receipt | p50 | p99 | max | frames delivered |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    fanout(
        env_or("BENCH_FANOUT_SUBSCRIBERS", 500),
        env_or("BENCH_FANOUT_EVENTS", 200),
        Duration::from_millis(env_or("BENCH_FANOUT_INTERVAL_MS", 20) as u64),
    )
    .await;
}
