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

/// Reads SSE frames until an output event of `conversation`; returns when it arrived.
pub async fn first_output(stream: &mut reqwest::Response, buf: &mut String, conversation: &str) -> std::time::Instant {
    loop {
        let (of, at) = next_output(stream, buf).await;
        if of == conversation {
            return at;
        }
    }
}

/// Reads SSE frames until any conversation's output event: which, and when.
pub async fn next_output(stream: &mut reqwest::Response, buf: &mut String) -> (String, std::time::Instant) {
    loop {
        while let Some(end) = buf.find("\n\n") {
            let frame: String = buf.drain(..end + 2).collect();
            let data: String = frame.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).collect();
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&data)
                && v["kind"] == "output"
                && let Some(c) = v["conversation_id"].as_str()
            {
                return (c.to_owned(), std::time::Instant::now());
            }
        }
        let chunk =
            tokio::time::timeout(std::time::Duration::from_secs(60), stream.chunk()).await.expect("an event in 60 s");
        buf.push_str(&String::from_utf8_lossy(&chunk.unwrap().expect("stream open")));
    }
}

/// Wall times (ms) of a bare `bwrap --unshare-all ... /bin/true`, `runs` after 3 discarded.
pub fn bare_bwrap(runs: usize) -> Vec<f64> {
    let args = [
        "--unshare-all",
        "--die-with-parent",
        "--ro-bind",
        "/usr",
        "/usr",
        "--symlink",
        "usr/bin",
        "/bin",
        "--symlink",
        "usr/lib",
        "/lib",
        "--symlink",
        "usr/lib64",
        "/lib64",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        "/bin/true",
    ];
    (0..runs + 3)
        .map(|_| {
            let t = std::time::Instant::now();
            let ok = std::process::Command::new("bwrap").args(args).status().expect("bwrap").success();
            assert!(ok);
            t.elapsed().as_secs_f64() * 1000.0
        })
        .skip(3)
        .collect()
}

/// Waits until the sandbox is `ready` (panics when it failed).
pub async fn ready(state: &acs::core::AppState, id: uuid::Uuid) {
    loop {
        let row = acs::core::sandboxes::store::get(&state.db, id).await.unwrap().unwrap();
        match row.status {
            acs::core::sandboxes::model::SandboxState::Ready => return,
            acs::core::sandboxes::model::SandboxState::Failed => panic!("sandbox failed: {:?}", row.error),
            _ => tokio::time::sleep(std::time::Duration::from_micros(500)).await,
        }
    }
}

/// Processes named one of `comms` and their PSS summed (KiB).
pub fn pss_of(comms: &[&str]) -> (usize, u64) {
    let mut n = 0;
    let mut kib = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(name) = std::fs::read_to_string(format!("/proc/{pid}/comm")) else { continue };
        if !comms.contains(&name.trim()) {
            continue;
        }
        let Ok(smaps) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) else { continue };
        n += 1;
        kib += smaps
            .lines()
            .find(|l| l.starts_with("Pss:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    (n, kib)
}

/// A launch of a fresh ephemeral machine for `agent`, with the callback key.
pub fn launch_request(account_id: uuid::Uuid, agent: &acs::core::agents::Agent) -> acs::core::sandboxes::LaunchRequest {
    acs::core::sandboxes::LaunchRequest {
        account_id,
        agent: agent.clone(),
        environment_id: None,
        vault_id: None,
        mode: None,
        machine_name: None,
        api_access: acs::core::sandboxes::model::ApiAccess::Owner,
        conversation_id: None,
    }
}

/// What a burst of conversation creates came to.
pub struct Burst {
    /// Each created conversation's first output, ms from the burst's start.
    pub firsts: std::collections::HashMap<String, f64>,
    pub refused: usize,
    /// When the last create was answered, s from the burst's start.
    pub answered_s: f64,
}

/// `n` `POST /api/conversations` of `agent_id` with a prompt, all sent at once; the
/// all-conversations `stream` is read while the answers come, as a client would.
pub async fn burst_of_creates(
    http: &reqwest::Client,
    (base, key): (&str, &str),
    agent_id: &str,
    n: usize,
    (stream, buf): (&mut reqwest::Response, &mut String),
) -> Burst {
    let started = std::time::Instant::now();
    let mut creates = tokio::task::JoinSet::new();
    for i in 0..n {
        let req = http
            .post(format!("{base}/api/conversations"))
            .bearer_auth(key)
            .json(&serde_json::json!({"agent_id": agent_id, "prompt": format!("say: n{i}")}));
        creates.spawn(async move { req.send().await.map(|r| r.status()) });
    }
    let (mut refused, mut pending, mut answered_s) = (0, n, 0.0);
    let mut firsts = std::collections::HashMap::new();
    while firsts.len() < n - refused {
        tokio::select! {
            Some(r) = creates.join_next(), if pending > 0 => {
                pending -= 1;
                if !matches!(r, Ok(Ok(s)) if s == 201) {
                    refused += 1;
                }
                if pending == 0 {
                    answered_s = started.elapsed().as_secs_f64();
                }
            }
            (conversation, at) = next_output(stream, buf) => {
                firsts.entry(conversation).or_insert_with(|| at.duration_since(started).as_secs_f64() * 1000.0);
            }
        }
    }
    Burst { firsts, refused, answered_s }
}

/// Removes what a benchmark's server left: its machines (they outlive servers), then its directory.
pub fn purge(dir: &std::path::Path, run_dir: &str, lease_dir: &str) {
    acs::core::provider::local::purge_blocking(
        &dir.join("sandboxes/machines"),
        std::path::Path::new(run_dir),
        std::path::Path::new(lease_dir),
    );
    let _ = std::fs::remove_dir_all(dir);
}
