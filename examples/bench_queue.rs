//! Benchmark of the sandbox queue (docs/queue.md) on one server, on SQLite
//! and on PostgreSQL: how fast `queue: true` starts are taken in while the
//! fleet ceiling is full, and how fast the queue's worker starts them once
//! places free. Needs root and scripts/setup (the starts launch real `local`
//! machines). Run through `bench/run`, or alone:
//!
//!     cargo build --release --bin sandboxd -p acs-scripted-agent && \
//!       cargo run --release --example bench_queue [-- --postgres postgres://postgres@127.0.0.1:5432]
//!
//! Each database gets a fresh server on 127.0.0.1:0 in this process with no
//! per-account ceiling and a fleet ceiling of BENCH_QUEUE_ADMIT places, held
//! full by as many `ready` sandbox rows of a filler account written straight
//! into the table (no machine behind them). Every account has one `acp`
//! agent running the scripted agent (tests/scripted-agent).
//!
//! 1. Enqueue: BENCH_QUEUE_ACCOUNTS accounts x 10 `POST /api/conversations`
//!    `{agent_id, queue: true}` (no prompt), round by round over the
//!    accounts, from BENCH_QUEUE_CLIENTS concurrent keep-alive clients over
//!    loopback HTTP; each must answer 202. Then an 11th per account, which
//!    must keep the ceiling's 503 `fleet_at_capacity`.
//! 2. Admission: the requests of all but the first BENCH_QUEUE_ADMIT / 10
//!    accounts are cancelled (`DELETE /api/sandbox-queue/{id}`), so the ones
//!    left fill the freed fleet exactly. The filler rows are set
//!    `terminated` and this server's doorbell is rung, as a machine leaving
//!    the active states does. The clock runs from just before that update to
//!    each request's `started_at`, until every one reads `started`; each
//!    start opens a conversation and launches a machine (built in the
//!    background), and the time until all those machines are `ready` is
//!    reported too. The worker starts requests one at a time; each start's
//!    own time (its `began_at` to its `started_at`) is reported beside.
//!
//! Knobs: BENCH_QUEUE_ACCOUNTS (100), BENCH_QUEUE_CLIENTS (16),
//! BENCH_QUEUE_ADMIT (100, a multiple of 10), BENCH_QUEUE_DB (`sqlite` or
//! `postgres` for one of them; unset: both).

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

#[path = "util/mod.rs"]
mod util;
use util::{account, env_or, fan_out, on_each_database, percentile, pg_base, start_server};

/// Waiting requests per account (`queue.max_per_account`, the spec's 10).
const PER_ACCOUNT: usize = 10;
const AGENT: &str = "/opt/acs/bin/scripted-agent";

fn now_micros() -> i64 {
    i64::try_from(std::time::UNIX_EPOCH.elapsed().unwrap().as_micros()).unwrap()
}

/// An account of the benchmark: its key and its agent.
struct Tenant {
    key: String,
    agent: String,
}

/// Registers account `i`, logs in and creates its agent.
async fn tenant(http: &reqwest::Client, base: &str, i: usize) -> (Uuid, Tenant) {
    let (account, key) = account(http, base, &format!("bench-{i}@example.com")).await;
    let agent: Value = http
        .post(format!("{base}/api/agents"))
        .bearer_auth(&key)
        .json(&json!({"name": "bench", "runtime": "acp", "command": [AGENT]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let agent = agent["data"]["id"].as_str().unwrap_or_else(|| panic!("creating the agent: {agent}")).to_owned();
    (account, Tenant { key, agent })
}

/// `POST /api/conversations` with `queue: true`: the status, the body and the latency (ms).
async fn submit(http: &reqwest::Client, base: &str, t: &Tenant) -> (StatusCode, Value, f64) {
    let t0 = Instant::now();
    let r = http
        .post(format!("{base}/api/conversations"))
        .bearer_auth(&t.key)
        .json(&json!({"agent_id": t.agent, "queue": true}))
        .send()
        .await
        .unwrap();
    let status = r.status();
    let body = r.json().await.unwrap_or_default();
    (status, body, t0.elapsed().as_secs_f64() * 1000.0)
}

/// Fills the fleet: `n` rows `ready` of `account`, with no machine behind them. They are
/// marked busy so that the idle reaper leaves them alone.
async fn fill(state: &acs::core::AppState, account: Uuid, n: usize) {
    let now = now_micros();
    for i in 0..n {
        sqlx::query(
            "INSERT INTO sandboxes (id, account_id, machine_name, status, mode, provider, runtime, \
             sandbox_api_access, busy, touched_at, created_at, updated_at) \
             VALUES ($1, $2, $3, 'ready', 'ephemeral', 'local', 'acp', 'full', 1, $4, $4, $4)",
        )
        .bind(Uuid::now_v7().to_string())
        .bind(account.to_string())
        .bind(format!("bench-filler-{i}"))
        .bind(now)
        .execute(&state.db.pool)
        .await
        .unwrap();
    }
}

async fn count(state: &acs::core::AppState, sql: &'static str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(&state.db.pool).await.unwrap()
}

struct Outcome {
    /// Enqueue: 202s per second, their latencies (ms), and the failures.
    enqueue_rate: f64,
    enqueue_ms: Vec<f64>,
    enqueue_errors: Vec<String>,
    /// 11th requests answered 503 `fleet_at_capacity`, of how many.
    overflow_refused: usize,
    overflow_sent: usize,
    /// Admission: delay from freeing to the first start (ms), starts per second, the
    /// time until the last start and until every started machine was ready (s).
    first_ms: f64,
    admit_rate: f64,
    all_started_s: f64,
    all_ready_s: Option<f64>,
    admitted: usize,
    /// Each start's own time, from the worker's `began_at` to `started_at` (ms).
    start_ms: Vec<f64>,
    /// Requests that did not read `started` (status: count).
    not_started: Vec<(String, i64)>,
}

async fn run_on(label: &str, db_url: &str, accounts: usize, clients: usize, admit: usize) -> Outcome {
    let agent_bin = std::env::current_exe().unwrap().parent().unwrap().join("../scripted-agent");
    let agent_bin =
        agent_bin.canonicalize().expect("target/<profile>/scripted-agent (cargo build -p acs-scripted-agent)");
    let dir = std::env::temp_dir().join(format!("acs-bench-queue-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let extra = [
        ("sandbox.ro_binds", json!([format!("{}:{AGENT}", agent_bin.display())])),
        ("limits.sandboxes_per_account", json!(0)),
        ("limits.sandboxes_fleet", json!(admit)),
    ];
    let running = start_server(db_url, &dir, &extra).await;
    let state = running.state.clone();
    let sandbox_cfg = state.config().sandbox.clone();
    let base = format!("http://{}", running.addr);
    let http = reqwest::Client::new();

    // Accounts: the filler's (index 0), then the benchmark's.
    let t = Instant::now();
    // A few at a time: each registration and login hashes a password.
    let mut all = {
        let (http, base) = (http.clone(), base.clone());
        fan_out(4, accounts + 1, move |i| {
            let (http, base) = (http.clone(), base.clone());
            async move { tenant(&http, &base, i).await }
        })
        .await
    };
    let (filler, _) = all.remove(0);
    let (ids, tenants): (Vec<Uuid>, Vec<Tenant>) = all.into_iter().unzip();
    let tenants = Arc::new(tenants);
    fill(&state, filler, admit).await;
    eprintln!(
        "bench_queue: {label}: {accounts} accounts and the full fleet ready in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    // Warm-up (connections, statement caches): a line of the last account, then cancelled.
    let warm = &tenants[accounts - 1];
    for _ in 0..PER_ACCOUNT {
        let (status, body, _) = submit(&http, &base, warm).await;
        assert_eq!(status, StatusCode::ACCEPTED, "warm-up: {body}");
        let id = body["data"]["id"].as_str().unwrap();
        let r = http.delete(format!("{base}/api/sandbox-queue/{id}")).bearer_auth(&warm.key).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
    }

    // (1) Enqueue, round by round over the accounts.
    let n = accounts * PER_ACCOUNT;
    let t0 = Instant::now();
    let answers = {
        let (http, base, tenants) = (http.clone(), base.clone(), tenants.clone());
        fan_out(clients, n, move |i| {
            let (http, base, tenants) = (http.clone(), base.clone(), tenants.clone());
            async move { submit(&http, &base, &tenants[i % accounts]).await }
        })
        .await
    };
    let wall = t0.elapsed().as_secs_f64();
    let mut enqueue_ms = Vec::with_capacity(n);
    let mut enqueue_errors = Vec::new();
    let mut queued: Vec<Vec<String>> = vec![Vec::new(); accounts];
    for (i, (status, body, ms)) in answers.into_iter().enumerate() {
        if status == StatusCode::ACCEPTED {
            enqueue_ms.push(ms);
            queued[i % accounts].push(body["data"]["id"].as_str().unwrap().to_owned());
        } else {
            enqueue_errors.push(format!("{status} {body}"));
        }
    }
    let enqueue_rate = enqueue_ms.len() as f64 / wall;
    eprintln!("bench_queue: {label}: {} of {n} queued in {wall:.2} s", enqueue_ms.len());

    let overflow = {
        let (http, base, tenants) = (http.clone(), base.clone(), tenants.clone());
        fan_out(clients, accounts, move |i| {
            let (http, base, tenants) = (http.clone(), base.clone(), tenants.clone());
            async move { submit(&http, &base, &tenants[i]).await }
        })
        .await
    };
    let overflow_refused = overflow
        .iter()
        .filter(|(s, b, _)| *s == StatusCode::SERVICE_UNAVAILABLE && b["error"] == "fleet_at_capacity")
        .count();

    // (2) Admission: keep the lines of the first `admit / 10` accounts, cancel the others.
    let keep = admit / PER_ACCOUNT;
    let cancels: Vec<(usize, String)> =
        queued.iter().enumerate().skip(keep).flat_map(|(t, ids)| ids.iter().map(move |id| (t, id.clone()))).collect();
    let cancels = Arc::new(cancels);
    let cancelled = {
        let (http, base, tenants, cancels) = (http.clone(), base.clone(), tenants.clone(), cancels.clone());
        fan_out(clients, cancels.len(), move |i| {
            let (http, base, tenants, cancels) = (http.clone(), base.clone(), tenants.clone(), cancels.clone());
            async move {
                let (t, id) = &cancels[i];
                let r = http.delete(format!("{base}/api/sandbox-queue/{id}")).bearer_auth(&tenants[*t].key);
                r.send().await.unwrap().status()
            }
        })
        .await
    };
    assert!(cancelled.iter().all(|s| *s == StatusCode::OK), "a cancel failed");
    let admitted: usize = queued.iter().take(keep).map(Vec::len).sum();
    tokio::time::sleep(Duration::from_millis(500)).await;

    let freed_at = now_micros();
    sqlx::query("UPDATE sandboxes SET status = 'terminated', updated_at = $2 WHERE account_id = $1")
        .bind(filler.to_string())
        .bind(freed_at)
        .execute(&state.db.pool)
        .await
        .unwrap();
    state.queue.wake();
    let until = Instant::now() + Duration::from_secs(300);
    loop {
        let waiting = count(&state, "SELECT COUNT(*) FROM sandbox_requests WHERE status = 'queued'").await;
        if waiting == 0 || Instant::now() > until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (first, last): (Option<i64>, Option<i64>) =
        sqlx::query_as("SELECT MIN(started_at), MAX(started_at) FROM sandbox_requests WHERE status = 'started'")
            .fetch_one(&state.db.pool)
            .await
            .unwrap();
    let started = count(&state, "SELECT COUNT(*) FROM sandbox_requests WHERE status = 'started'").await as usize;
    // Each start's own time: the worker marks a request begun just before it starts it.
    let spans: Vec<(i64, i64)> =
        sqlx::query_as("SELECT began_at, started_at FROM sandbox_requests WHERE status = 'started'")
            .fetch_all(&state.db.pool)
            .await
            .unwrap();
    let start_ms: Vec<f64> = spans.iter().map(|(b, s)| (s - b) as f64 / 1000.0).collect();
    let not_started: Vec<(String, i64)> = sqlx::query_as(
        "SELECT status, COUNT(*) FROM sandbox_requests WHERE status NOT IN ('started', 'cancelled') GROUP BY status",
    )
    .fetch_all(&state.db.pool)
    .await
    .unwrap();
    let first_ms = (first.unwrap_or(freed_at) - freed_at) as f64 / 1000.0;
    let all_started_s = (last.unwrap_or(freed_at) - freed_at) as f64 / 1e6;
    let admit_rate = started as f64 / all_started_s;
    // Every admitted request reads `started` through the API too.
    for (t, tenant) in tenants.iter().enumerate().take(keep) {
        let r: Value = http
            .get(format!("{base}/api/sandbox-queue"))
            .bearer_auth(&tenant.key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let list = r["data"].as_array().unwrap();
        let reads_started = |id: &String| list.iter().any(|q| q["id"] == id.as_str() && q["status"] == "started");
        assert!(queued[t].iter().all(reads_started), "account {} has a request not started: {r}", ids[t]);
    }
    eprintln!(
        "bench_queue: {label}: {started} of {admitted} started, the first {first_ms:.1} ms and the last \
         {all_started_s:.2} s after the places freed"
    );

    // The machines those starts launched, built in the background.
    let until = Instant::now() + Duration::from_secs(300);
    let all_ready_s = loop {
        let ready = count(&state, "SELECT COUNT(*) FROM sandboxes WHERE status = 'ready'").await as usize;
        if ready >= started {
            break Some((now_micros() - freed_at) as f64 / 1e6);
        }
        let building = count(&state, "SELECT COUNT(*) FROM sandboxes WHERE status IN ('pending', 'starting')").await;
        if building == 0 || Instant::now() > until {
            let failed: Vec<(String, Option<String>)> =
                sqlx::query_as("SELECT status, error FROM sandboxes WHERE status NOT IN ('ready', 'terminated')")
                    .fetch_all(&state.db.pool)
                    .await
                    .unwrap();
            eprintln!("bench_queue: {label}: {ready} of {started} machines ready; the others: {failed:?}");
            break None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };

    running.shutdown().await.unwrap();
    acs::core::provider::local::purge_blocking(
        &dir.join("sandboxes/machines"),
        std::path::Path::new(&sandbox_cfg.run_dir),
        std::path::Path::new(&sandbox_cfg.lease_dir),
    );
    let _ = std::fs::remove_dir_all(&dir);
    Outcome {
        enqueue_rate,
        enqueue_ms,
        enqueue_errors,
        overflow_refused,
        overflow_sent: accounts,
        first_ms,
        admit_rate,
        all_started_s,
        all_ready_s,
        admitted,
        start_ms,
        not_started,
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let pg_base = pg_base();
    let accounts = env_or("BENCH_QUEUE_ACCOUNTS", 100);
    let clients = env_or("BENCH_QUEUE_CLIENTS", 16);
    let admit = env_or("BENCH_QUEUE_ADMIT", 100);
    assert!(
        admit >= PER_ACCOUNT && admit.is_multiple_of(PER_ACCOUNT) && admit / PER_ACCOUNT < accounts,
        "BENCH_QUEUE_ADMIT must be a multiple of 10 below 10 x BENCH_QUEUE_ACCOUNTS"
    );
    let only = std::env::var("BENCH_QUEUE_DB").unwrap_or_default();

    let mut results =
        on_each_database(
            &only,
            &pg_base,
            |label, url| async move { run_on(label, &url, accounts, clients, admit).await },
        )
        .await;

    println!(
        "| sandbox queue, fleet ceiling {admit} held full: `POST /api/conversations` `queue: true`, {accounts} \
         accounts x {PER_ACCOUNT}, {clients} clients | 202s per second | p50 | p99 | every one 202; the 11th \
         per account refused |"
    );
    println!("| --- | ---: | ---: | ---: | --- |");
    for (label, o) in results.iter_mut() {
        match o {
            Ok(o) => {
                let n = o.enqueue_ms.len();
                let (p50, p99) = (percentile(&mut o.enqueue_ms, 0.5), percentile(&mut o.enqueue_ms, 0.99));
                let all = if o.enqueue_errors.is_empty() {
                    format!("yes, {n}")
                } else {
                    format!("**no: {} failed** (first: {})", o.enqueue_errors.len(), o.enqueue_errors[0])
                };
                let refused = format!("{} of {} with 503 `fleet_at_capacity`", o.overflow_refused, o.overflow_sent);
                println!("| {label} | {:.0} | {p50:.1} ms | {p99:.1} ms | {all}; {refused} |", o.enqueue_rate);
            }
            Err(e) => println!("| {label} | {e} | | | |"),
        }
    }
    println!();
    println!(
        "| admission: {admit} places free at once, {} accounts x {PER_ACCOUNT} waiting, each start a new \
         `local` machine | first start after freeing | starts per second | all started | all their machines \
         ready | one start, p50 / max | every request started |",
        admit / PER_ACCOUNT
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | --- |");
    for (label, o) in results.iter_mut() {
        let Ok(o) = o else { continue };
        let ready = o.all_ready_s.map_or_else(|| "**not all**".to_owned(), |s| format!("{s:.2} s"));
        let all = if o.not_started.is_empty() {
            format!("yes, {} of {}", o.admitted, o.admitted)
        } else {
            format!("**no**: {:?}", o.not_started)
        };
        let one = if o.start_ms.is_empty() {
            String::new()
        } else {
            let p50 = percentile(&mut o.start_ms, 0.5);
            format!("{p50:.0} / {:.0} ms", o.start_ms.last().copied().unwrap_or_default())
        };
        println!(
            "| {label} | {:.1} ms | {:.0} | {:.2} s | {ready} | {one} | {all} |",
            o.first_ms, o.admit_rate, o.all_started_s
        );
    }
}
