//! Benchmark of the real runtimes (docs/runtimes.md) against the scripted
//! ACP agent: what a turn on a real adapter adds, and the memory of a running
//! agent. Every runtime runs in a `local` machine and talks to the fake model
//! server of the tests (tests/api/fake_model.rs, replies at once) on the
//! host's own address through the machine's egress proxy, so the times are
//! the runtimes' own overhead. Needs root, scripts/setup and npm (the pinned
//! runtimes are installed into target/acs-runtimes, as the tests do). Run
//! through `bench/run`, or alone:
//!
//!     cargo build --release --bin sandboxd -p acs-scripted-agent && \
//!       cargo run --release --example bench_runtimes
//!
//! BENCH_RUNTIMES (`claude,codex,gemini,opencode`) chooses the runtimes run
//! beside the scripted agent. For each runtime, BENCH_RUNTIME_RUNS times (3): `POST /api/conversations`
//! with a prompt on a new machine, timed to the conversation's first agent
//! output (`stdout`) on the SSE stream and to its `turn` stage `done` (agent
//! start, ACP handshake, model request, reply); then a second prompt on the
//! awake conversation, timed the same way; then the PSS of the agent's
//! process tree in the machine (everything under the machine's supervisor).
//! Then the server restarts with a warm pool of one machine per runtime
//! (docs/scale.md, "Warm pools") and each runtime's new conversation is
//! timed again, claiming a machine whose agent waits started, once every
//! pool holds its machine and BENCH_POOL_SETTLE_MS (3000) more have passed.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use uuid::Uuid;

#[path = "util/mod.rs"]
mod util;
use util::{bench_account, env_or, machine_pss_kib, percentile, pss_kib, purge, start_server};

use acs_testkit::fake_model;

const AGENT: &str = "/opt/acs/bin/scripted-agent";

/// The host's address on its default route (the machines' own 127.0.0.1 is their loopback).
fn host_ip() -> String {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    s.connect("192.0.2.1:9").unwrap();
    s.local_addr().unwrap().ip().to_string()
}

/// When the conversation's first agent output and its turn's end arrived on the stream.
async fn turn_times(stream: &mut reqwest::Response, buf: &mut String, conversation: &str) -> (Instant, Instant) {
    let mut first = None;
    loop {
        while let Some(end) = buf.find("\n\n") {
            let frame: String = buf.drain(..end + 2).collect();
            let data: String = frame.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).collect();
            let Ok(v) = serde_json::from_str::<Value>(&data) else { continue };
            if v["conversation_id"] != conversation {
                continue;
            }
            if first.is_none() && v["kind"] == "output" && v["stream"] == "stdout" {
                first = Some(Instant::now());
            }
            if v["stage"] == "turn" && v["state"] != "started" {
                assert_eq!(v["state"], "done", "the turn failed: {v}");
                let done = Instant::now();
                return (first.unwrap_or(done), done);
            }
        }
        let chunk = tokio::time::timeout(Duration::from_secs(120), stream.chunk()).await.expect("an event in 120 s");
        buf.push_str(&String::from_utf8_lossy(&chunk.unwrap().expect("stream open")));
    }
}

/// PSS (KiB) of the machine's processes under its supervisor: the agent and its children.
fn agent_pss_kib(dir: &std::path::Path, sandbox: &str) -> u64 {
    let info: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("sandboxes/machines").join(sandbox).join("bwrap.json")).unwrap(),
    )
    .unwrap();
    let supervisor = info["child-pid"].as_i64().unwrap() as i32;
    machine_pss_kib(supervisor).saturating_sub(pss_kib(supervisor))
}

struct Row {
    name: &'static str,
    cold_first: Vec<f64>,
    cold_done: Vec<f64>,
    warm_first: Vec<f64>,
    warm_done: Vec<f64>,
    pss_mb: Vec<f64>,
    pooled_first: Vec<f64>,
    pooled_done: Vec<f64>,
}

/// Waits until each of `pools` holds a claimable machine, then `settle` more: a claim times one
/// runtime's first turn, not the refill another claim started nor what a just-started agent
/// still does in the background (a pooled machine usually waits longer than that).
async fn pools_warm(state: &acs::core::AppState, pools: usize, settle: Duration) {
    for _ in 0..1200 {
        let here = acs::core::sandboxes::store::pooled_here(&state.db, state.events.server()).await.unwrap();
        if here.iter().filter(|m| !m.building).count() >= pools {
            tokio::time::sleep(settle).await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the pools never held {pools} warm machines");
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let runs = env_or("BENCH_RUNTIME_RUNS", 3);
    let settle = Duration::from_millis(env_or("BENCH_POOL_SETTLE_MS", 3000) as u64);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let runtimes_dir = root.join("target/acs-runtimes");
    let chosen = std::env::var("BENCH_RUNTIMES").unwrap_or_else(|_| "claude,codex,gemini,opencode".into());
    let names: Vec<String> = chosen.split(',').map(str::trim).filter(|n| !n.is_empty()).map(String::from).collect();
    acs::core::runtimes::install(&runtimes_dir, &names).expect("the pinned runtimes install (npm)");
    let agent_bin = std::env::current_exe().unwrap().parent().unwrap().join("../scripted-agent");
    let agent_bin =
        agent_bin.canonicalize().expect("target/<profile>/scripted-agent (cargo build -p acs-scripted-agent)");

    let fake = fake_model::FakeModel::start().await;
    let base_url = format!("http://{}:{}", host_ip(), fake.port());
    let dir = std::env::temp_dir().join(format!("acs-bench-runtimes-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let db_url = format!("sqlite://{}", dir.join("acs.db").display());
    let settings = vec![
        ("sandbox.ro_binds", json!([format!("{}:{AGENT}", agent_bin.display())])),
        ("sandbox.blocked_cidrs", json!([])),
        ("runtimes.dir", json!(runtimes_dir.display().to_string())),
        ("inference.base_urls.anthropic", json!(base_url)),
        ("inference.base_urls.openai", json!(format!("{base_url}/v1"))),
        ("inference.base_urls.google", json!(base_url)),
        ("inference.platform.anthropic_api_key", json!("sk-ant-bench")),
        ("inference.platform.openai_api_key", json!("sk-bench")),
        ("inference.platform.gemini_api_key", json!("bench-gemini-key")),
    ];
    let running = start_server(&db_url, &dir, &settings).await;
    let sandbox_cfg = &running.state.config().sandbox;
    let (lease_dir, run_dir) = (sandbox_cfg.lease_dir.clone(), sandbox_cfg.run_dir.clone());
    let base = format!("http://{}", running.addr);
    let http = reqwest::Client::new();
    let (account_id, key) = bench_account(&http, &base).await;
    let post = |path: String, body: Value| http.post(format!("{base}{path}")).bearer_auth(&key).json(&body).send();
    let mut stream = http.get(format!("{base}/api/events/stream")).bearer_auth(&key).send().await.unwrap();
    let mut buf = String::new();

    let kinds: Vec<(&'static str, Value, &str)> = [
        ("scripted agent (`acp`)", json!({"runtime": "acp", "command": [AGENT]}), "say: Hello."),
        ("claude", json!({"runtime": "claude"}), "Say hello."),
        ("codex", json!({"runtime": "codex"}), "Say hello."),
        ("gemini", json!({"runtime": "gemini"}), "Say hello."),
        ("opencode", json!({"runtime": "opencode", "model": "anthropic/claude-sonnet-4-5"}), "Say hello."),
    ]
    .into_iter()
    .filter(|(name, spec, _)| spec["runtime"] == "acp" || names.iter().any(|n| n == name))
    .collect();
    let mut rows = Vec::new();
    let mut agent_ids = Vec::new();
    for (name, spec, prompt) in kinds.clone() {
        let mut body = json!({"name": name});
        body.as_object_mut().unwrap().extend(spec.as_object().unwrap().clone());
        let agent: Value = post("/api/agents".into(), body).await.unwrap().json().await.unwrap();
        let agent_id = agent["data"]["id"].as_str().expect("agent created").to_owned();
        agent_ids.push(agent_id.clone());
        let mut row = Row {
            name,
            cold_first: vec![],
            cold_done: vec![],
            warm_first: vec![],
            warm_done: vec![],
            pss_mb: vec![],
            pooled_first: vec![],
            pooled_done: vec![],
        };
        for _ in 0..runs {
            let t = Instant::now();
            let c: Value = post("/api/conversations".into(), json!({"agent_id": agent_id, "prompt": prompt}))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let id = c["data"]["id"].as_str().expect("conversation created").to_owned();
            let sandbox = c["data"]["sandbox_id"].as_str().unwrap().to_owned();
            let (first, done) = turn_times(&mut stream, &mut buf, &id).await;
            row.cold_first.push(first.duration_since(t).as_secs_f64() * 1000.0);
            row.cold_done.push(done.duration_since(t).as_secs_f64() * 1000.0);
            let t = Instant::now();
            let r = post(format!("/api/conversations/{id}/prompts"), json!({"prompt": prompt})).await.unwrap();
            assert_eq!(r.status(), 202);
            let (first, done) = turn_times(&mut stream, &mut buf, &id).await;
            row.warm_first.push(first.duration_since(t).as_secs_f64() * 1000.0);
            row.warm_done.push(done.duration_since(t).as_secs_f64() * 1000.0);
            tokio::time::sleep(Duration::from_millis(500)).await;
            row.pss_mb.push(agent_pss_kib(&dir, &sandbox) as f64 / 1024.0);
            post(format!("/api/conversations/{id}/terminate"), json!({})).await.unwrap();
        }
        rows.push(row);
    }

    drop(stream);
    running.shutdown().await.unwrap();

    // The same new conversations, each claiming from a warm pool of one machine per runtime.
    let pools: Vec<Value> = agent_ids
        .iter()
        .enumerate()
        .map(|(i, a)| json!({"name": format!("r{i}"), "account_id": account_id, "agent_id": a, "size": 1}))
        .collect();
    let mut settings = settings;
    settings.push(("sandbox.warm_pools", json!(pools)));
    let running = start_server(&db_url, &dir, &settings).await;
    let base = format!("http://{}", running.addr);
    let post = |path: String, body: Value| http.post(format!("{base}{path}")).bearer_auth(&key).json(&body).send();
    let mut stream = http.get(format!("{base}/api/events/stream")).bearer_auth(&key).send().await.unwrap();
    let mut buf = String::new();
    for (i, (_, _, prompt)) in kinds.iter().enumerate() {
        for _ in 0..runs {
            pools_warm(&running.state, kinds.len(), settle).await;
            let t = Instant::now();
            let c: Value = post("/api/conversations".into(), json!({"agent_id": agent_ids[i], "prompt": prompt}))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let id = c["data"]["id"].as_str().expect("conversation created").to_owned();
            let (first, done) = turn_times(&mut stream, &mut buf, &id).await;
            rows[i].pooled_first.push(first.duration_since(t).as_secs_f64() * 1000.0);
            rows[i].pooled_done.push(done.duration_since(t).as_secs_f64() * 1000.0);
            post(format!("/api/conversations/{id}/terminate"), json!({})).await.unwrap();
        }
    }

    println!(
        "| runtime ({runs} runs each, median) | new machine: first output | turn done | added over scripted | awake: first output | turn done | added over scripted | warm pool: first output | turn done | added over scripted (goal ≤ 300 ms) | agent PSS |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let median = |v: &[f64]| percentile(&mut v.to_vec(), 0.5);
    let (base_cold, base_warm, base_pooled) =
        (median(&rows[0].cold_done), median(&rows[0].warm_done), median(&rows[0].pooled_done));
    for row in &rows {
        let (cold_done, warm_done, pooled_done) =
            (median(&row.cold_done), median(&row.warm_done), median(&row.pooled_done));
        let added = pooled_done - base_pooled;
        println!(
            "| {} | {:.0} ms | {cold_done:.0} ms | {:+.0} ms | {:.0} ms | {warm_done:.0} ms | {:+.0} ms | {:.0} ms | {pooled_done:.0} ms | {added:+.0} ms{} | {:.0} MB |",
            row.name,
            median(&row.cold_first),
            cold_done - base_cold,
            median(&row.warm_first),
            warm_done - base_warm,
            median(&row.pooled_first),
            if added <= 300.0 { "" } else { " (missed)" },
            median(&row.pss_mb),
        );
    }

    running.shutdown().await.unwrap();
    purge(&dir, &run_dir, &lease_dir);
}
