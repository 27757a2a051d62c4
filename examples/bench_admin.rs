//! Benchmark of the admin extension's account search (docs/admin.md) on
//! SQLite and on PostgreSQL: with BENCH_ADMIN_ACCOUNTS accounts, the latency
//! of `GET /api/admin/accounts?q=` as an operator asks it, one request at a
//! time. Run through `bench/run`, or alone:
//!
//!     cargo run --release --example bench_admin [-- --postgres postgres://postgres@127.0.0.1:5432]
//!
//! The accounts are written straight into the table (1,000 per statement;
//! registering 100,000 through the API would measure password hashing),
//! with emails `user<N>@<domain N mod 100>.example`. Four searches, each
//! BENCH_ADMIN_REQUESTS times: the first page with no `q`; a common part
//! (`example`, every account matches: the page fills at once); one account's
//! whole address (one match: every row is looked at); and a part no email has
//! (no match, every row looked at); plus walking 20 pages with the cursor.
//!
//! Knobs: BENCH_ADMIN_ACCOUNTS (100000), BENCH_ADMIN_REQUESTS (200),
//! BENCH_ADMIN_DB (`sqlite` or `postgres` for one of them; unset: both).

use std::time::Instant;

use serde_json::{Value, json};

#[path = "util/mod.rs"]
mod util;
use util::{account, env_or, on_each_database, percentile, pg_base, start_server};

const OPERATOR: &str = "ops@bench.example";

struct Outcome {
    /// (search, p50 ms, p99 ms, rows on the page)
    searches: Vec<(&'static str, f64, f64, usize)>,
    seeded_s: f64,
}

async fn seed(url: &str, n: usize) {
    use sqlx::any::AnyPoolOptions;
    sqlx::any::install_default_drivers();
    let pool = AnyPoolOptions::new().max_connections(1).connect(url).await.unwrap();
    let created = i64::try_from(std::time::UNIX_EPOCH.elapsed().unwrap().as_micros()).unwrap() - 1_000_000_000;
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let mut sql = String::from(
            "INSERT INTO accounts (id, email, password_hash, email_verified, created_at, updated_at) VALUES ",
        );
        for (k, i) in chunk.iter().enumerate() {
            if k > 0 {
                sql.push(',');
            }
            // UUIDv7 in creation order, as registration makes them.
            let id = uuid::Uuid::now_v7();
            sql.push_str(&format!(
                "('{id}', 'user{i}@d{}.example', 'x', 1, {t}, {t})",
                i % 100,
                t = created + *i as i64
            ));
        }
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&pool).await.unwrap();
    }
    pool.close().await;
}

async fn run_on(url: &str, accounts: usize, requests: usize) -> Outcome {
    let dir = std::env::temp_dir().join(format!("acs-bench-admin-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let server = start_server(url, &dir, &[("admin.operators", json!([OPERATOR]))]).await;
    let base = format!("http://{}", server.addr);
    let http = reqwest::Client::new();
    let (_, key) = account(&http, &base, OPERATOR).await;
    let started = Instant::now();
    seed(url, accounts).await;
    let seeded_s = started.elapsed().as_secs_f64();

    let ask = |path: String| {
        let (http, key) = (http.clone(), key.clone());
        async move {
            let t = Instant::now();
            let r = http.get(&path).bearer_auth(&key).send().await.unwrap();
            assert!(r.status().is_success(), "{path}: {}", r.status());
            let body: Value = r.json().await.unwrap();
            (t.elapsed().as_secs_f64() * 1000.0, body)
        }
    };
    let one = format!("user{}@d{}.example", accounts / 2, (accounts / 2) % 100);
    let searches: [(&str, String); 4] = [
        ("first page, no `q`", String::new()),
        ("`q=example` (every account matches)", "example".into()),
        ("`q=` one whole address (one match)", one),
        ("`q=nobody` (no match)", "nobody".into()),
    ];
    let mut out = Vec::new();
    for (label, q) in searches {
        let mut samples = Vec::with_capacity(requests);
        let mut rows = 0;
        for _ in 0..requests {
            let (ms, body) = ask(format!("{base}/api/admin/accounts?q={q}")).await;
            rows = body["data"].as_array().map_or(0, Vec::len);
            samples.push(ms);
        }
        out.push((label, percentile(&mut samples, 0.5), percentile(&mut samples, 0.99), rows));
    }
    // Walking pages with the cursor, 100 a page.
    let mut samples = Vec::new();
    for _ in 0..(requests / 20).max(1) {
        let mut cursor = String::new();
        for _ in 0..20 {
            let (ms, body) = ask(format!("{base}/api/admin/accounts?limit=100{cursor}")).await;
            samples.push(ms);
            cursor = format!("&cursor={}", body["meta"]["next_cursor"].as_str().unwrap());
        }
    }
    out.push((
        "20 pages of 100 by cursor, each page",
        percentile(&mut samples, 0.5),
        percentile(&mut samples, 0.99),
        100,
    ));
    server.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    Outcome { searches: out, seeded_s }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let pg_base = pg_base();
    let accounts = env_or("BENCH_ADMIN_ACCOUNTS", 100_000);
    let requests = env_or("BENCH_ADMIN_REQUESTS", 200);
    let only = std::env::var("BENCH_ADMIN_DB").unwrap_or_default();
    let results =
        on_each_database(&only, &pg_base, |_, url| async move { run_on(&url, accounts, requests).await }).await;
    println!(
        "| account search, {accounts} accounts, {requests} requests each, one at a time | p50 | p99 | rows | goal: p99 < 100 ms |"
    );
    println!("| --- | ---: | ---: | ---: | --- |");
    for (label, outcome) in &results {
        match outcome {
            Ok(o) => {
                for (search, p50, p99, rows) in &o.searches {
                    let verdict = if *p99 < 100.0 { "met" } else { "**missed**" };
                    println!("| {label}: {search} | {p50:.1} ms | {p99:.1} ms | {rows} | {verdict} |");
                }
                println!("| {label}: accounts written in | {:.1} s | | | |", o.seeded_s);
            }
            Err(e) => println!("| {label} | {e} | | | |"),
        }
    }
}
