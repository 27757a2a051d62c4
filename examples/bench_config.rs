//! Benchmark of the account-configuration store: agent creates and reads per
//! second over HTTP on SQLite and on PostgreSQL, and the cost of sealing and
//! opening one secret value. Run through `bench/run`, or alone:
//!
//!     cargo run --release --example bench_config [-- --postgres postgres://postgres@127.0.0.1:5432]
//!
//! Each database gets a fresh server on 127.0.0.1:0 (in this process), one
//! account, then `AGENTS` creates and `READS` reads from `CONCURRENCY` tasks.

use std::time::{Duration, Instant};

use acs::core::secrets::{open, seal};
use serde_json::{Value, json};
use sqlx::Connection;

const AGENTS: usize = 2000;
const READS: usize = 10000;
#[path = "util/mod.rs"]
mod util;
use util::{bench_account, pg_base, start_server};

const CONCURRENCY: usize = 16;
const CRYPTO_ROUNDS: u32 = 100_000;

/// Runs `n` requests made by `make(i)` from CONCURRENCY tasks; returns requests per second.
async fn rate<F>(n: usize, make: F) -> f64
where
    F: Fn(usize) -> reqwest::RequestBuilder + Send + Sync + 'static,
{
    let make = std::sync::Arc::new(make);
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..CONCURRENCY {
        let (make, next) = (make.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let res = make(i).send().await.expect("request");
                assert!(res.status().is_success(), "status {}", res.status());
                res.bytes().await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    n as f64 / start.elapsed().as_secs_f64()
}

async fn agents_on(label: &str, db_url: &str) -> (f64, f64) {
    let dir = std::env::temp_dir().join(format!("acs-bench-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let running = start_server(db_url, &dir, &[]).await;
    let base = format!("http://{}", running.addr);
    let http = reqwest::Client::new();
    let (_, key) = bench_account(&http, &base).await;

    let (h, b, k) = (http.clone(), base.clone(), key.clone());
    let creates = rate(AGENTS, move |i| {
        h.post(format!("{b}/api/agents"))
            .bearer_auth(&k)
            .json(&json!({"name": format!("agent {i}"), "runtime": "claude", "model": "anthropic/claude-sonnet-4-5",
                "session_config": {"effort": "high"}, "permission_policy": {"execute": "ask", "default": "auto_allow"}}))
    })
    .await;
    let list: Value =
        http.get(format!("{base}/api/agents")).bearer_auth(&key).send().await.unwrap().json().await.unwrap();
    let ids: Vec<String> =
        list["data"].as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(ids.len(), AGENTS);
    let (h, b, k) = (http.clone(), base.clone(), key.clone());
    let reads = rate(READS, move |i| h.get(format!("{b}/api/agents/{}", ids[i % ids.len()])).bearer_auth(&k)).await;
    println!("| {label} | {creates:.0} | {reads:.0} |");
    running.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (creates, reads)
}

fn crypto() {
    let key = [7u8; 32];
    let value = b"sk-ant-api03-0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz";
    let aad = "vault_secret:01a20764-1bd5-7288-87bf-ff25e36ae8e5:ANTHROPIC_API_KEY";
    let start = Instant::now();
    let mut sealed = String::new();
    for _ in 0..CRYPTO_ROUNDS {
        sealed = seal(&key, aad, value);
    }
    let seal_us = start.elapsed().as_secs_f64() * 1e6 / CRYPTO_ROUNDS as f64;
    let start = Instant::now();
    for _ in 0..CRYPTO_ROUNDS {
        assert_eq!(open(&key, aad, &sealed).unwrap().len(), value.len());
    }
    let open_us = start.elapsed().as_secs_f64() * 1e6 / CRYPTO_ROUNDS as f64;
    println!();
    println!("| secret encryption ({} bytes, {CRYPTO_ROUNDS} rounds) | microseconds |", value.len());
    println!("| --- | ---: |");
    println!("| seal (XChaCha20-Poly1305, fresh nonce, base64) | {seal_us:.2} |");
    println!("| open | {open_us:.2} |");
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let pg_base = pg_base();
    println!("| agents, {CONCURRENCY} concurrent clients | creates/s | reads/s |");
    println!("| --- | ---: | ---: |");
    let dir = std::env::temp_dir().join(format!("acs-bench-sqlite-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    agents_on("SQLite", &format!("sqlite://{}", dir.join("acs.db").display())).await;
    let name = format!("acs_bench_{}", uuid::Uuid::new_v4().simple());
    match sqlx::PgConnection::connect(&format!("{pg_base}/test")).await {
        Ok(mut admin) => {
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut admin).await.unwrap();
            agents_on("PostgreSQL", &format!("{pg_base}/{name}")).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
            let _ = sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE {name} WITH (FORCE)")))
                .execute(&mut admin)
                .await;
        }
        Err(e) => println!("| PostgreSQL | skipped: {e} | |"),
    }
    let _ = std::fs::remove_dir_all(&dir);
    crypto();
}
