//! Helpers shared by the benchmark examples (a directory, so Cargo does not
//! take it for an example of its own).
#![allow(dead_code)] // each example uses a different part

pub fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The PostgreSQL server to benchmark on: `--postgres <url>` (without a database name), else the local one.
pub fn pg_base() -> String {
    std::env::args()
        .skip_while(|a| a != "--postgres")
        .nth(1)
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432".into())
}

pub fn percentile(samples: &mut [f64], p: f64) -> f64 {
    samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[i]
}

/// Proportional set size of every process of a machine (its bwrap and all
/// descendants), in KiB: shared pages are split among their users.
pub fn machine_pss_kib(root_pid: i32) -> u64 {
    let mut parents: Vec<(i32, i32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let ppid: i32 = after.split(' ').nth(1).unwrap().parse().unwrap();
        parents.push((pid, ppid));
    }
    let mut family = vec![root_pid];
    let mut i = 0;
    while i < family.len() {
        let p = family[i];
        family.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    family.iter().map(|pid| pss_kib(*pid)).sum()
}

/// Proportional set size of one process in KiB (0 once it is gone).
pub fn pss_kib(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Pss:")).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// A server for a benchmark on 127.0.0.1:0: the database at `db_url`, its
/// key and sandboxes under `dir`, rate limits lifted, warnings only, then
/// `extra` settings (dotted keys).
pub async fn start_server(
    db_url: &str,
    dir: &std::path::Path,
    extra: &[(&str, serde_json::Value)],
) -> acs::core::server::Running {
    use figment::providers::Serialized;
    let mut fig = acs::core::extension::config::figment(None)
        .merge(Serialized::default("listen", "127.0.0.1:0"))
        .merge(Serialized::default("database.url", db_url))
        .merge(Serialized::default("secrets.master_key_file", dir.join("acs.key").display().to_string()))
        .merge(Serialized::default("sandbox.dir", dir.join("sandboxes").display().to_string()))
        .merge(Serialized::default("limits.requests_per_key", 100_000_000))
        .merge(Serialized::default("limits.requests_per_address", 100_000_000))
        .merge(Serialized::default("log.level", "warn"));
    for (key, value) in extra {
        fig = fig.merge(Serialized::default(key, value));
    }
    let loaded = acs::core::extension::config::from_figment(fig).expect("configuration");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    acs::core::server::start(loaded, listener).await.expect("server starts")
}

/// Registers the benchmark's account and logs in: its id and a full-scope key.
pub async fn bench_account(http: &reqwest::Client, base: &str) -> (uuid::Uuid, String) {
    account(http, base, "bench@example.com").await
}

/// Registers an account with `email` and logs in: its id and a full-scope key.
pub async fn account(http: &reqwest::Client, base: &str, email: &str) -> (uuid::Uuid, String) {
    let creds = serde_json::json!({"email": email, "password": "benchmark password"});
    let r: serde_json::Value =
        http.post(format!("{base}/api/auth/register")).json(&creds).send().await.unwrap().json().await.unwrap();
    let account = r["data"]["user_id"].as_str().unwrap_or_else(|| panic!("registering {email}: {r}")).parse().unwrap();
    let login: serde_json::Value =
        http.post(format!("{base}/api/auth/login")).json(&creds).send().await.unwrap().json().await.unwrap();
    (account, login["data"]["api_key"].as_str().unwrap().to_owned())
}

/// Runs `f(0..n)` on `clients` concurrent tasks (each takes the next index
/// when it is done with one); the results in index order.
pub async fn fan_out<T, F, Fut>(clients: usize, n: usize, f: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = T> + Send,
{
    use std::sync::atomic::{AtomicUsize, Ordering};
    let f = std::sync::Arc::new(f);
    let next = std::sync::Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients.min(n) {
        let (f, next) = (f.clone(), next.clone());
        tasks.spawn(async move {
            let mut done = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return done;
                }
                done.push((i, f(i).await));
            }
        });
    }
    let mut all: Vec<(usize, T)> = Vec::with_capacity(n);
    while let Some(part) = tasks.join_next().await {
        all.extend(part.unwrap());
    }
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, t)| t).collect()
}

/// Runs `run(label, database url)` on a fresh SQLite file and on a fresh
/// PostgreSQL database under `pg_base` (created, then dropped), or on the one
/// `only` names (`sqlite`, `postgres`); PostgreSQL is skipped, with the
/// reason, when it cannot be reached.
pub async fn on_each_database<T, F, Fut>(
    only: &str,
    pg_base: &str,
    mut run: F,
) -> Vec<(&'static str, Result<T, String>)>
where
    F: FnMut(&'static str, String) -> Fut,
    Fut: std::future::Future<Output = T>,
{
    use sqlx::Connection;
    let mut results = Vec::new();
    if only.is_empty() || only == "sqlite" {
        let dir = std::env::temp_dir().join(format!("acs-bench-sqlite-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("sqlite://{}", dir.join("acs.db").display());
        results.push(("SQLite", Ok(run("SQLite", url).await)));
        let _ = std::fs::remove_dir_all(&dir);
    }
    if only.is_empty() || only == "postgres" {
        let name = format!("acs_bench_{}", uuid::Uuid::new_v4().simple());
        match sqlx::PgConnection::connect(&format!("{pg_base}/test")).await {
            Ok(mut admin) => {
                sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut admin).await.unwrap();
                results.push(("PostgreSQL", Ok(run("PostgreSQL", format!("{pg_base}/{name}")).await)));
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                let _ = sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE {name} WITH (FORCE)")))
                    .execute(&mut admin)
                    .await;
            }
            Err(e) => results.push(("PostgreSQL", Err(format!("skipped: {e}")))),
        }
    }
    results
}
