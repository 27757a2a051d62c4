//! Benchmark of account exports (DESIGN 9.3; docs/accounts.md): an account's
//! conversations, turns and events are written straight into the tables,
//! then `POST /api/account/exports` is timed until the worker completed the
//! document, and the download is streamed over loopback HTTP. Memory: the
//! process's peak RSS (VmHWM, reset through /proc/self/clear_refs before each
//! export) above its RSS just before, at two account sizes, to show it stays
//! flat as the account grows. Run through `bench/run`, or alone:
//!
//!     cargo run --release --example bench_export [-- --postgres postgres://postgres@127.0.0.1:5432]
//!
//! Knobs: BENCH_EXPORT_SIZES ("100x100,1000x100": conversations x events
//! each), BENCH_EXPORT_DB (`sqlite` or `postgres`; both when unset).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use uuid::Uuid;

#[path = "util/mod.rs"]
mod util;
use util::{account, on_each_database, pg_base, start_server};

/// A line of `/proc/self/status` in KiB.
fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with(field)).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// Resets VmHWM to the current RSS (Linux 4.0 and later).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Writes `conversations` conversations with one finished turn and `events` output events each.
async fn fill(state: &acs::core::AppState, account_id: Uuid, conversations: usize, events: usize) {
    let agent = Uuid::now_v7().to_string();
    let now = acs::core::time_fmt::now_micros();
    let id = account_id.to_string();
    let mut tx = state.db.begin().await.unwrap();
    for c in 0..conversations {
        let conv = Uuid::now_v7().to_string();
        let turn = Uuid::now_v7().to_string();
        let at = now + c as i64;
        sqlx::query(
            "INSERT INTO conversations (id, account_id, agent_id, runtime, status, title, created_at, updated_at) \
             VALUES ($1, $2, $3, 'acp', 'idle', $4, $5, $5)",
        )
        .bind(conv.clone())
        .bind(id.clone())
        .bind(agent.clone())
        .bind(format!("conversation {c}"))
        .bind(at)
        .execute(&mut *tx)
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO turns (id, conversation_id, account_id, prompt, status, origin, inference, inserted_at, finished_at) \
             VALUES ($1, $2, $3, 'say: hi', 'done', 'api', $4, $5, $5)",
        )
        .bind(turn.clone())
        .bind(conv.clone())
        .bind(id.clone())
        .bind(json!({"origin": "platform", "scope": "platform", "openai_grant_id": null}).to_string())
        .bind(at)
        .execute(&mut *tx)
        .await
        .unwrap();
        // Multi-row inserts of 250 events.
        for start in (0..events).step_by(250) {
            let n = (events - start).min(250);
            let mut sql = String::from(
                "INSERT INTO events (account_id, conversation_id, turn_id, kind, stream, data, blocks, ts) VALUES ",
            );
            for i in 0..n {
                let b = i * 6;
                sql.push_str(&format!(
                    "{}(${}, ${}, ${}, 'output', 'stdout', ${}, ${}, ${})",
                    if i == 0 { "" } else { ", " },
                    b + 1,
                    b + 2,
                    b + 3,
                    b + 4,
                    b + 5,
                    b + 6
                ));
            }
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for i in 0..n {
                let text = format!("line {}: the agent streams a sentence of about eighty characters here.", start + i);
                q = q
                    .bind(id.clone())
                    .bind(conv.clone())
                    .bind(turn.clone())
                    .bind(text.clone())
                    .bind(json!([{"type": "text", "text": text}]).to_string())
                    .bind(at);
            }
            q.execute(&mut *tx).await.unwrap();
        }
    }
    tx.commit().await.unwrap();
}

struct Run {
    conversations: usize,
    events: usize,
    bytes: i64,
    export_s: f64,
    /// Peak RSS during the export above the RSS just before it, KiB.
    growth_kib: u64,
    download_s: f64,
    download_growth_kib: u64,
}

async fn one_size(
    base: &str,
    http: &reqwest::Client,
    state: &acs::core::AppState,
    conversations: usize,
    events: usize,
) -> Run {
    let email = format!("bench-{conversations}x{events}-{}@example.com", &Uuid::new_v4().simple().to_string()[..6]);
    let (account_id, key) = account(http, base, &email).await;
    fill(state, account_id, conversations, events).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = status_kib("VmRSS:");
    reset_peak();
    let t = Instant::now();
    let r: Value =
        http.post(format!("{base}/api/account/exports")).bearer_auth(&key).send().await.unwrap().json().await.unwrap();
    let id = r["data"]["id"].as_str().unwrap_or_else(|| panic!("{r}")).to_owned();
    let export = loop {
        let r: Value = http
            .get(format!("{base}/api/account/exports/{id}"))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if r["data"]["status"] != "pending" {
            break r["data"].clone();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let export_s = t.elapsed().as_secs_f64();
    let growth_kib = status_kib("VmHWM:").saturating_sub(before);
    assert_eq!(export["status"], "completed", "{export}");
    let bytes = export["byte_size"].as_i64().unwrap();

    let before = status_kib("VmRSS:");
    reset_peak();
    let t = Instant::now();
    let mut res = http.get(format!("{base}/api/account/exports/{id}/download")).bearer_auth(&key).send().await.unwrap();
    let mut got = 0usize;
    while let Some(chunk) = res.chunk().await.unwrap() {
        got += chunk.len();
    }
    let download_s = t.elapsed().as_secs_f64();
    let download_growth_kib = status_kib("VmHWM:").saturating_sub(before);
    assert_eq!(got as i64, bytes, "the whole document came down");
    Run { conversations, events: conversations * events, bytes, export_s, growth_kib, download_s, download_growth_kib }
}

async fn run_on(db_url: &str, sizes: &[(usize, usize)]) -> Vec<Run> {
    let dir = std::env::temp_dir().join(format!("acs-bench-export-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let running = start_server(db_url, &dir, &[]).await;
    let base = format!("http://{}", running.addr);
    let http = reqwest::Client::new();
    let mut runs = Vec::new();
    for &(c, e) in sizes {
        runs.push(one_size(&base, &http, &running.state, c, e).await);
    }
    running.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    runs
}

fn sizes() -> Vec<(usize, usize)> {
    let spec = std::env::var("BENCH_EXPORT_SIZES").unwrap_or_else(|_| "100x100,1000x100".into());
    spec.split(',')
        .map(|s| {
            let (c, e) = s.trim().split_once('x').expect("BENCH_EXPORT_SIZES: <conversations>x<events>,...");
            (c.parse().unwrap(), e.parse().unwrap())
        })
        .collect()
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let pg_base = pg_base();
    let only = std::env::var("BENCH_EXPORT_DB").unwrap_or_default();
    let sizes = sizes();
    let results = on_each_database(&only, &pg_base, |_, url| {
        let sizes = sizes.clone();
        async move { run_on(&url, &sizes).await }
    })
    .await;
    println!(
        "| account export | conversations | events | document | export (ask to `completed`) | MB/s | peak RSS growth, export | \
         download (streamed) | peak RSS growth, download | goal: memory flat as the account grows |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
    for (label, runs) in &results {
        let runs = match runs {
            Ok(r) => r,
            Err(e) => {
                println!("| {label} | {e} | | | | | | | | |");
                continue;
            }
        };
        let first = runs.first().map(|r| r.growth_kib).unwrap_or_default();
        for r in runs {
            let mb = r.bytes as f64 / 1e6;
            // Flat: the largest account needs no more than 4 MiB above the smallest.
            let verdict = if r.growth_kib <= first + 4096 { "met" } else { "**missed**" };
            println!(
                "| {label} | {} | {} | {mb:.1} MB | {:.2} s | {:.1} | {:.1} MiB | {:.2} s | {:.1} MiB | {verdict} |",
                r.conversations,
                r.events,
                r.export_s,
                mb / r.export_s,
                r.growth_kib as f64 / 1024.0,
                r.download_s,
                r.download_growth_kib as f64 / 1024.0,
            );
        }
    }
}
