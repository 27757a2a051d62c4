//! Helpers shared by the benchmark examples (a directory, so Cargo does not
//! take it for an example of its own).
#![allow(dead_code)] // each example uses a different part

pub fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
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
    family
        .iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok())
        .filter_map(|s| s.lines().find(|l| l.starts_with("Pss:")).map(str::to_owned))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
        .sum()
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
    let mut fig = acs::core::config::figment(None)
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
    let loaded = acs::core::config::from_figment(fig).expect("configuration");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    acs::core::server::start(loaded, listener).await.expect("server starts")
}

/// Registers the benchmark's account and logs in: its id and a full-scope key.
pub async fn bench_account(http: &reqwest::Client, base: &str) -> (uuid::Uuid, String) {
    let creds = serde_json::json!({"email": "bench@example.com", "password": "benchmark password"});
    let r: serde_json::Value =
        http.post(format!("{base}/api/auth/register")).json(&creds).send().await.unwrap().json().await.unwrap();
    let account = r["data"]["user_id"].as_str().unwrap().parse().unwrap();
    let login: serde_json::Value =
        http.post(format!("{base}/api/auth/login")).json(&creds).send().await.unwrap().json().await.unwrap();
    (account, login["data"]["api_key"].as_str().unwrap().to_owned())
}
