//! Benchmark of the teammate scheduler (docs/team.md) on one server, on
//! SQLite and on PostgreSQL: with BENCH_SCHEDULES enabled schedules due at
//! the same minute, how far behind the due time each one fires. Run through
//! `bench/run`, or alone:
//!
//!     cargo run --release --example bench_schedules [-- --postgres postgres://postgres@127.0.0.1:5432]
//!
//! Each database gets a fresh server in this process with credits on and a
//! zero grant, so every run is refused at the credit gate (402
//! `insufficient_credits`, recorded in the schedule's `last_error`): no
//! machine is launched, and what is measured is the scheduler and the
//! run's path up to the gate. BENCH_SCHEDULE_TEAMMATES teammates (agents on
//! the team, spread over BENCH_SCHEDULE_ACCOUNTS accounts) get
//! BENCH_SCHEDULES / teammates schedules each, all `* * * * *`, created
//! through the API by 16 concurrent clients.
//!
//! The clock: the first server's schedule clock (`team.clock_offset_seconds`)
//! reads one second past a minute when it starts, so every schedule is
//! created with the same `next_run_at`, the next minute. That server stops
//! and a second one starts on the database with its clock set so that this
//! minute comes BENCH_SCHEDULE_LEAD_SECONDS later, the way a test restarts a
//! server just before a due time. A schedule's lag is its `last_run_at` (the
//! scheduler's claim, on the schedule clock) minus that minute.
//!
//! Knobs: BENCH_SCHEDULES (10000), BENCH_SCHEDULE_TEAMMATES (100),
//! BENCH_SCHEDULE_ACCOUNTS (4), BENCH_SCHEDULE_LEAD_SECONDS (3),
//! BENCH_SCHEDULE_TICK (unset: the server's default `team.tick_seconds`),
//! BENCH_SCHEDULE_DB (`sqlite` or `postgres` for one of them; unset: both).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use uuid::Uuid;

#[path = "util/mod.rs"]
mod util;
use util::{account, env_or, fan_out, on_each_database, percentile, pg_base, start_server};

const MINUTE: i64 = 60_000_000;
/// How often the claims are counted once the due time is near.
const POLL: Duration = Duration::from_millis(10);

fn now_micros() -> i64 {
    i64::try_from(std::time::UNIX_EPOCH.elapsed().unwrap().as_micros()).unwrap()
}

/// The settings of a server whose schedule clock is `offset` µs ahead of the wall clock.
fn settings(offset: i64, tick: Option<f64>) -> Vec<(&'static str, Value)> {
    let mut s = vec![
        ("credits.enabled", json!(true)),
        ("credits.initial_grant", json!(0)),
        ("team.clock_offset_seconds", json!(offset as f64 / 1e6)),
    ];
    if let Some(tick) = tick {
        s.push(("team.tick_seconds", json!(tick)));
    }
    s
}

/// A teammate: its account's key and its agent.
struct Teammate {
    key: String,
    agent: String,
}

async fn post(http: &reqwest::Client, url: String, key: &str, body: Value) -> Value {
    let r = http.post(url).bearer_auth(key).json(&body).send().await.unwrap();
    let status = r.status();
    let body: Value = r.json().await.unwrap_or_default();
    assert_eq!(status.as_u16(), 201, "{body}");
    body
}

/// Adds `n` agents to the team of `key`'s account.
async fn teammates(http: &reqwest::Client, base: &str, key: &str, n: usize) -> Vec<Teammate> {
    let mut all = Vec::with_capacity(n);
    for i in 0..n {
        let agent = json!({"name": format!("teammate-{i}"), "runtime": "acp", "command": ["/bin/true"]});
        let agent = post(http, format!("{base}/api/agents"), key, agent).await;
        let agent = agent["data"]["id"].as_str().unwrap().to_owned();
        let r = http.put(format!("{base}/api/team/{agent}")).bearer_auth(key).json(&json!({})).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 201, "adding a teammate: {}", r.text().await.unwrap_or_default());
        all.push(Teammate { key: key.to_owned(), agent });
    }
    all
}

struct Outcome {
    /// Polls of the claims: ms after the due time, and how many schedules had been claimed.
    seen: Vec<(f64, usize)>,
    /// Each schedule's `last_run_at` minus the due time (ms).
    stamped: Vec<f64>,
    /// From the due time until every run's outcome was recorded (s; polled every POLL).
    recorded_s: Option<f64>,
    /// Schedules whose `last_error` reads the credit refusal.
    refused: i64,
    /// Schedules moved on to the next minute exactly (fired once).
    moved_on: i64,
    created_per_s: f64,
    tick: f64,
}

async fn run_on(label: &str, db_url: &str, schedules: usize, mates: usize, accounts: usize) -> Outcome {
    let lead = env_or("BENCH_SCHEDULE_LEAD_SECONDS", 3) as i64 * 1_000_000;
    let tick = std::env::var("BENCH_SCHEDULE_TICK").ok().map(|t| t.parse::<f64>().expect("BENCH_SCHEDULE_TICK"));
    let dir = std::env::temp_dir().join(format!("acs-bench-schedules-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();

    // Set-up server: its schedule clock starts one second past a minute.
    let now = now_micros();
    let minute = (now / MINUTE + 1) * MINUTE;
    let running = start_server(db_url, &dir, &settings(minute + 1_000_000 - now, tick)).await;
    let base = format!("http://{}", running.addr);
    let http = reqwest::Client::new();
    let mut team = Vec::with_capacity(mates);
    for a in 0..accounts {
        let (_, key) = account(&http, &base, &format!("bench-{a}@example.com")).await;
        let n = mates / accounts + usize::from(a < mates % accounts);
        team.extend(teammates(&http, &base, &key, n).await);
    }
    let team = Arc::new(team);
    let t0 = Instant::now();
    let created = {
        let (http, base, team) = (http.clone(), base.clone(), team.clone());
        fan_out(16, schedules, move |i| {
            let (http, base, team) = (http.clone(), base.clone(), team.clone());
            async move {
                let m = &team[i % team.len()];
                let body = json!({"name": format!("every minute {i}"), "cron": "* * * * *", "prompt": "say: hi"});
                let s = post(&http, format!("{base}/api/team/{}/schedules", m.agent), &m.key, body).await;
                s["data"]["next_run_at"].as_str().unwrap().to_owned()
            }
        })
        .await
    };
    let created_per_s = schedules as f64 / t0.elapsed().as_secs_f64();
    let due_times: std::collections::BTreeSet<&String> = created.iter().collect();
    assert_eq!(due_times.len(), 1, "set-up crossed a minute: the schedules are due at {due_times:?}");
    let state = running.state.clone();
    let due: i64 =
        sqlx::query_scalar("SELECT MIN(next_run_at) FROM team_schedules").fetch_one(&state.db.pool).await.unwrap();
    let tick = state.config().team.tick_seconds;
    running.shutdown().await.unwrap();
    eprintln!("bench_schedules: {label}: {schedules} schedules of {mates} teammates created, {created_per_s:.0} per s");

    // The measured server: its clock reaches the due minute `lead` from now.
    let offset = due - (now_micros() + lead);
    let running = start_server(db_url, &dir, &settings(offset, Some(tick))).await;
    let state = running.state.clone();
    // From just before the due minute, count the claims (`next_run_at` moved on: a read of the
    // index) every POLL until all are in, then the recorded outcomes (a scan) likewise.
    let clock = || now_micros() + offset;
    tokio::time::sleep(Duration::from_micros(u64::try_from(due - clock() - 20_000).unwrap_or(0))).await;
    let until = Instant::now() + Duration::from_secs(300);
    let mut seen: Vec<(f64, usize)> = Vec::new();
    let mut all_claimed = false;
    let recorded_s = loop {
        let pool = &state.db.pool;
        let n = if all_claimed {
            let sql = "SELECT COUNT(last_error) + COUNT(last_conversation_id) FROM team_schedules";
            sqlx::query_scalar::<_, i64>(sql).fetch_one(pool).await
        } else {
            let sql = "SELECT COUNT(*) FROM team_schedules WHERE next_run_at > $1";
            sqlx::query_scalar::<_, i64>(sql).bind(due).fetch_one(pool).await
        };
        let n = n.unwrap() as usize;
        let at = (clock() - due) as f64 / 1000.0;
        if all_claimed && n == schedules {
            break Some(at / 1000.0);
        }
        if !all_claimed {
            seen.push((at, n));
            all_claimed = n == schedules;
            if all_claimed {
                continue; // count the outcomes at once
            }
        }
        if Instant::now() > until {
            let what = if all_claimed { "outcomes recorded" } else { "claimed" };
            eprintln!("bench_schedules: {label}: after 300 s only {n} of {schedules} {what}");
            break None;
        }
        tokio::time::sleep(POLL).await;
    };
    let runs: Vec<(Option<i64>,)> =
        sqlx::query_as("SELECT last_run_at FROM team_schedules").fetch_all(&state.db.pool).await.unwrap();
    let stamped = runs.iter().filter_map(|(at,)| at.map(|at| (at - due) as f64 / 1000.0)).collect();
    let refused: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM team_schedules WHERE last_error LIKE 'insufficient_credits%'")
            .fetch_one(&state.db.pool)
            .await
            .unwrap();
    let moved_on: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM team_schedules WHERE next_run_at = $1")
        .bind(due + MINUTE)
        .fetch_one(&state.db.pool)
        .await
        .unwrap();
    running.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    Outcome { seen, stamped, recorded_s, refused, moved_on, created_per_s, tick }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let pg_base = pg_base();
    let schedules = env_or("BENCH_SCHEDULES", 10_000);
    let mates = env_or("BENCH_SCHEDULE_TEAMMATES", 100);
    let accounts = env_or("BENCH_SCHEDULE_ACCOUNTS", 4);
    let only = std::env::var("BENCH_SCHEDULE_DB").unwrap_or_default();

    let mut results =
        on_each_database(
            &only,
            &pg_base,
            |label, url| async move { run_on(label, &url, schedules, mates, accounts).await },
        )
        .await;

    let tick = results.iter().find_map(|(_, o)| o.as_ref().ok().map(|o| o.tick)).unwrap_or_default();
    println!(
        "| scheduler: {schedules} enabled `* * * * *` schedules of {mates} teammates due at one minute, \
         `team.tick_seconds` {tick}, runs refused at the credit gate | first claimed | half claimed | 99% \
         claimed | all claimed (max lag) | `last_run_at` stamps: p50 / max | all outcomes recorded | goal: max lag < 1 s | \
         each fired once, refusal recorded |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |");
    for (label, o) in results.iter_mut() {
        let o = match o {
            Ok(o) => o,
            Err(e) => {
                println!("| {label} | {e} | | | | | | | |");
                continue;
            }
        };
        // When the first poll saw at least `share` of the schedules claimed.
        let by = |share: f64| {
            let k = ((share * schedules as f64).ceil() as usize).max(1);
            o.seen.iter().find(|(_, n)| *n >= k).map_or_else(|| "**never**".to_owned(), |(ms, _)| format!("{ms:.0} ms"))
        };
        let all = o.seen.iter().find(|(_, n)| *n >= schedules).map(|(ms, _)| *ms);
        let verdict = if all.is_some_and(|ms| ms < 1000.0) { "met" } else { "**missed**" };
        let stamps = if o.stamped.is_empty() {
            "none".to_owned()
        } else {
            let p50 = percentile(&mut o.stamped, 0.5);
            format!("{p50:.0} / {:.0} ms", o.stamped.last().copied().unwrap_or_default())
        };
        let recorded = o.recorded_s.map_or_else(|| "**not all**".to_owned(), |s| format!("{s:.2} s"));
        println!(
            "| {label} | {} | {} | {} | {} | {stamps} | {recorded} | {verdict} | {} of {schedules} fired, {} moved on \
             one minute, {} refused (schedules created at {:.0} per s) |",
            by(0.0),
            by(0.5),
            by(0.99),
            by(1.0),
            o.stamped.len(),
            o.moved_on,
            o.refused,
            o.created_per_s
        );
    }
}
