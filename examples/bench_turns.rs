//! Benchmark of turns on the `local` provider with the scripted ACP agent
//! (tests/scripted-agent), in one run: time from `POST /api/conversations`
//! with a prompt to the first output event on the SSE stream, the same for a
//! later prompt on an awake conversation, and memory per idle conversation
//! (its agent process, its machine, and the server's share), and a burst:
//! BENCH_BURST creates with a prompt sent at once, each one's time from the
//! burst's start to its first output. Needs root and
//! scripts/setup. Run through `bench/run`, or alone:
//!
//!     cargo build --release --bin sandboxd -p acs-scripted-agent && cargo run --release --example bench_turns
//!
//! Knobs: BENCH_TURN_RUNS (20), BENCH_IDLE_CONVERSATIONS (20), BENCH_BURST (100).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use uuid::Uuid;

#[path = "util/mod.rs"]
mod util;
use util::{bench_account, burst_of_creates, env_or, first_output, percentile, pss_of, purge, start_server};

fn self_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let runs = env_or("BENCH_TURN_RUNS", 20);
    let idle = env_or("BENCH_IDLE_CONVERSATIONS", 20);
    let burst = env_or("BENCH_BURST", 100);
    let agent_bin = std::env::current_exe().unwrap().parent().unwrap().join("../scripted-agent");
    let agent_bin =
        agent_bin.canonicalize().expect("target/<profile>/scripted-agent (cargo build -p acs-scripted-agent)");
    let dir = std::env::temp_dir().join(format!("acs-bench-turns-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let binds = json!([format!("{}:/opt/acs/bin/scripted-agent", agent_bin.display())]);
    let db_url = format!("sqlite://{}", dir.join("acs.db").display());
    let places = json!(burst.max(idle).max(100));
    let running = start_server(
        &db_url,
        &dir,
        &[
            ("sandbox.ro_binds", binds),
            ("limits.sandboxes_per_account", places.clone()),
            ("limits.sandboxes_fleet", places),
        ],
    )
    .await;
    let sandbox_cfg = &running.state.config().sandbox;
    let (lease_dir, run_dir) = (sandbox_cfg.lease_dir.clone(), sandbox_cfg.run_dir.clone());
    let base = format!("http://{}", running.addr);
    let http = reqwest::Client::new();
    let (_, key) = bench_account(&http, &base).await;
    let post = |path: &str, body: Value| http.post(format!("{base}{path}")).bearer_auth(&key).json(&body).send();
    let agent: Value =
        post("/api/agents", json!({"name": "bench", "runtime": "acp", "command": ["/opt/acs/bin/scripted-agent"]}))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    let agent_id = agent["data"]["id"].as_str().unwrap().to_owned();
    let mut stream = http.get(format!("{base}/api/events/stream")).bearer_auth(&key).send().await.unwrap();
    let mut buf = String::new();

    // 1. create with a prompt -> first output on the stream (a new machine and agent each time).
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    let mut conversations = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let c: Value = post("/api/conversations", json!({"agent_id": agent_id, "prompt": "say: hi"}))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = c["data"]["id"].as_str().expect("conversation created").to_owned();
        cold.push(first_output(&mut stream, &mut buf, &id).await.duration_since(t).as_secs_f64() * 1000.0);
        conversations.push(id);
    }
    // 2. a later prompt on an awake conversation -> first output.
    for id in &conversations {
        // Wait for the first turn to end (its `turn` stage closes the prompt's answer).
        loop {
            let c: Value = http
                .get(format!("{base}/api/conversations/{id}"))
                .bearer_auth(&key)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if c["data"]["status"] == "idle" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let t = Instant::now();
        let r = post(&format!("/api/conversations/{id}/prompts"), json!({"prompt": "say: again"})).await.unwrap();
        assert_eq!(r.status(), 202);
        warm.push(first_output(&mut stream, &mut buf, id).await.duration_since(t).as_secs_f64() * 1000.0);
    }
    for id in &conversations {
        post(&format!("/api/conversations/{id}/terminate"), json!({})).await.unwrap();
    }

    // 3. memory of idle conversations: each has run one turn and keeps its agent and machine.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let server_before = self_rss_kib();
    let machine = ["bwrap", "sandboxd"];
    let (_, machines_before) = pss_of(&machine);
    let mut idle_ids = Vec::new();
    for _ in 0..idle {
        let c: Value = post("/api/conversations", json!({"agent_id": agent_id, "prompt": "say: hi"}))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = c["data"]["id"].as_str().unwrap().to_owned();
        first_output(&mut stream, &mut buf, &id).await;
        idle_ids.push(id);
    }
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let server_per = (self_rss_kib().saturating_sub(server_before)) as f64 / idle as f64 / 1024.0;
    let (agents, agent_kib) = pss_of(&["scripted-agent"]);
    let (_, machines_kib) = pss_of(&machine);
    let agent_per = agent_kib as f64 / agents.max(1) as f64 / 1024.0;
    let machine_per = (machines_kib.saturating_sub(machines_before)) as f64 / idle as f64 / 1024.0;
    for id in &idle_ids {
        post(&format!("/api/conversations/{id}/terminate"), json!({})).await.unwrap();
    }

    // 4. a burst: every create sent at once; each one's first output, from the burst's start.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let burst_of = burst_of_creates(&http, (&base, &key), &agent_id, burst, (&mut stream, &mut buf)).await;
    let (firsts, refused, created_s) = (burst_of.firsts, burst_of.refused, burst_of.answered_s);
    let mut bursts: Vec<f64> = firsts.values().copied().collect();
    let burst_ids: Vec<String> = firsts.into_keys().collect();
    for id in &burst_ids {
        post(&format!("/api/conversations/{id}/terminate"), json!({})).await.unwrap();
    }

    println!("| turns, scripted agent, local provider | p50 | p90 | goal |");
    println!("| --- | ---: | ---: | --- |");
    let (c50, c90) = (percentile(&mut cold, 0.5), percentile(&mut cold, 0.9));
    println!(
        "| `POST /api/conversations` with a prompt to its first output on SSE, new machine ({runs} runs) | {c50:.0} ms | {c90:.0} ms | p50 < 300 ms |"
    );
    let (w50, w90) = (percentile(&mut warm, 0.5), percentile(&mut warm, 0.9));
    println!(
        "| `POST .../prompts` on an awake conversation to its first output ({runs} runs) | {w50:.1} ms | {w90:.1} ms | |"
    );
    println!(
        "| memory per idle conversation ({idle} at once): agent process PSS {agent_per:.1} MB + machine (bwrap, sandboxd) PSS {machine_per:.1} MB + server RSS {server_per:.2} MB | {:.1} MB | | |",
        agent_per + machine_per + server_per
    );

    let (b50, b95, b99) = (percentile(&mut bursts, 0.5), percentile(&mut bursts, 0.95), percentile(&mut bursts, 0.99));
    let all = bursts.iter().copied().fold(0.0, f64::max);
    let verdict = if refused == 0 && all < 3000.0 { "met" } else { "**missed**" };
    println!(
        "| a burst of {burst} creates with a prompt at once, each to its first output: p50 / p95 / p99 / all | {b50:.0} / {b95:.0} / {b99:.0} / {all:.0} ms | {refused} refused; every answer sent in {created_s:.2} s | all within 3 s, none refused: {verdict} |"
    );

    running.shutdown().await.unwrap();
    purge(&dir, &run_dir, &lease_dir);
}
