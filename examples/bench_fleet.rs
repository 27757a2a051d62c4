//! Benchmark of starting machines (docs/scale.md), in one run: create to the
//! first command's output, sequential and as a burst of 100 at once, for a
//! new `local` machine and for a claim from a warm pool, with a bare
//! `bwrap ... /bin/true` beside them; a burst of 100 conversations created
//! with a prompt at once, claiming from a warm pool, each to its first output
//! on SSE; the memory a warm machine holds (machines per GB) and what an idle
//! pool costs the server. Needs root and scripts/setup. Run through
//! `bench/run`, or alone:
//!
//!     cargo build --release --bin sandboxd -p acs-scripted-agent && \
//!       cargo run --release --example bench_fleet
//!
//! "Create to first command": `sandboxes::launch` (what a conversation's
//! create calls) until the machine is `ready`, then `echo hi` through its
//! supervisor until the output is back. Knobs: BENCH_FLEET_RUNS (30),
//! BENCH_FLEET_BURST (100).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use acs::core::AppState;
use acs::core::agents::get_agent;
use acs::core::sandboxes::{self, service::service, store};
use serde_json::{Value, json};
use uuid::Uuid;

#[path = "util/mod.rs"]
mod util;
use util::{
    bare_bwrap, bench_account, burst_of_creates, env_or, launch_request, percentile, pss_of, purge, ready, start_server,
};

const AGENT: &str = "/opt/acs/bin/scripted-agent";

/// Launches a machine for `agent` and runs `echo hi` in it: ms from the launch to the output.
async fn create_to_command(state: &AppState, account_id: Uuid, agent: &acs::core::agents::Agent) -> (f64, Uuid) {
    let t = Instant::now();
    let row = sandboxes::launch(state, launch_request(account_id, agent)).await.expect("launch");
    ready(state, row.id).await;
    let exec = sandboxd::proto::ExecRequest {
        argv: vec!["echo".into(), "hi".into()],
        cwd: None,
        env: BTreeMap::new(),
        stdin: None,
        timeout_ms: Some(60_000),
        max_output: None,
    };
    let out = service(state).unwrap().provider(&row).supervisor(row.id).exec(&exec).await.expect("exec");
    assert_eq!(out.stdout, b"hi\n");
    (t.elapsed().as_secs_f64() * 1000.0, row.id)
}

/// `n` creates at once, each timed from the burst's start to its command's output.
async fn burst_to_command(state: &AppState, account_id: Uuid, agent: &acs::core::agents::Agent, n: usize) -> Vec<f64> {
    let started = Instant::now();
    let mut all = tokio::task::JoinSet::new();
    for _ in 0..n {
        let (state, agent) = (state.clone(), agent.clone());
        all.spawn(async move {
            let (_, id) = create_to_command(&state, account_id, &agent).await;
            (started.elapsed().as_secs_f64() * 1000.0, id)
        });
    }
    let mut times = Vec::new();
    for (ms, id) in all.join_all().await {
        times.push(ms);
        sandboxes::reclaim(state, id).await.unwrap();
    }
    times
}

async fn warm_count(state: &AppState) -> usize {
    let here = store::pooled_here(&state.db, state.events.server()).await.unwrap();
    here.iter().filter(|m| !m.building).count()
}

async fn wait_warm(state: &AppState, n: usize) -> f64 {
    let t = Instant::now();
    while warm_count(state).await < n {
        assert!(t.elapsed() < Duration::from_secs(600), "the pool never held {n} warm machines");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    t.elapsed().as_secs_f64()
}

/// The server's CPU time so far (user + system, ms).
fn cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks * 1000.0 / 100.0
}

fn row(label: &str, v: &mut [f64], goal: &str) {
    let (p50, p95, p99) = (percentile(v, 0.5), percentile(v, 0.95), percentile(v, 0.99));
    println!("| {label} | {p50:.1} | {p95:.1} | {p99:.1} | {goal} |");
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let runs = env_or("BENCH_FLEET_RUNS", 30);
    let burst = env_or("BENCH_FLEET_BURST", 100);
    let agent_bin = std::env::current_exe().unwrap().parent().unwrap().join("../scripted-agent");
    let agent_bin =
        agent_bin.canonicalize().expect("target/<profile>/scripted-agent (cargo build -p acs-scripted-agent)");
    let dir = std::env::temp_dir().join(format!("acs-bench-fleet-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let db_url = format!("sqlite://{}", dir.join("acs.db").display());
    let mut settings = vec![
        ("sandbox.ro_binds", json!([format!("{}:{AGENT}", agent_bin.display())])),
        ("limits.sandboxes_per_account", json!(0)),
        ("limits.sandboxes_fleet", json!(0)),
    ];
    let running = start_server(&db_url, &dir, &settings).await;
    let (lease_dir, run_dir) =
        (running.state.config().sandbox.lease_dir.clone(), running.state.config().sandbox.run_dir.clone());
    let base = format!("http://{}", running.addr);
    let http = reqwest::Client::new();
    let (account_id, key) = bench_account(&http, &base).await;
    let a: Value = http
        .post(format!("{base}/api/agents"))
        .bearer_auth(&key)
        .json(&json!({"name": "fleet", "runtime": "acp", "command": [AGENT]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let agent_id: Uuid = a["data"]["id"].as_str().unwrap().parse().unwrap();
    let agent = get_agent(&running.state, account_id, agent_id).await.unwrap();

    // 1. new `local` machines: sequential, then a burst.
    let mut bare = bare_bwrap(runs);
    let mut sequential = Vec::new();
    for _ in 0..runs + 3 {
        let (ms, id) = create_to_command(&running.state, account_id, &agent).await;
        sequential.push(ms);
        sandboxes::reclaim(&running.state, id).await.unwrap();
    }
    let mut sequential = sequential.split_off(3);
    let mut local_burst = burst_to_command(&running.state, account_id, &agent, burst).await;
    running.shutdown().await.unwrap();

    // 2. the same from a warm pool: one of `burst` machines, refilled between sequential claims.
    let pool = json!([{"name": "bench", "account_id": account_id, "agent_id": agent_id, "size": burst}]);
    settings.push(("sandbox.warm_pools", pool));
    settings.push(("metrics.enabled", json!(true)));
    let running = start_server(&db_url, &dir, &settings).await;
    let state = running.state.clone();
    let filled_s = wait_warm(&state, burst).await;
    let mut warm_sequential = Vec::new();
    for _ in 0..runs {
        wait_warm(&state, burst).await;
        let (ms, id) = create_to_command(&state, account_id, &agent).await;
        warm_sequential.push(ms);
        sandboxes::reclaim(&state, id).await.unwrap();
    }
    // What a full idle pool holds and costs: its machines' memory, the server's CPU over 10 s.
    wait_warm(&state, burst).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (machines, machines_kib) = pss_of(&["bwrap", "sandboxd", "scripted-agent"]);
    let cpu_before = cpu_ms();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let idle_cpu_ms_per_s = (cpu_ms() - cpu_before) / 10.0;
    let mb_per_machine = machines_kib as f64 / 1024.0 / burst as f64;
    let mut warm_burst = burst_to_command(&state, account_id, &agent, burst).await;

    // 3. conversations: a burst of creates with a prompt, each to its first output on SSE.
    let refilled_s = wait_warm(&state, burst).await;
    let base = format!("http://{}", running.addr);
    let mut stream = http.get(format!("{base}/api/events/stream")).bearer_auth(&key).send().await.unwrap();
    let mut buf = String::new();
    let burst_of = burst_of_creates(&http, (&base, &key), &agent_id.to_string(), burst, (&mut stream, &mut buf)).await;
    let (firsts, refused) = (burst_of.firsts, burst_of.refused);
    let metrics = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    let claims = metrics
        .lines()
        .find_map(|l| l.strip_prefix("acs_warm_pool_claims_total{pool=\"bench\"} "))
        .unwrap_or("?")
        .to_owned();
    let mut conversations: Vec<f64> = firsts.values().copied().collect();
    for id in firsts.keys() {
        http.post(format!("{base}/api/conversations/{id}/terminate"))
            .bearer_auth(&key)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
    }

    println!("| create to first command output (ms) | p50 | p95 | p99 | goal |");
    println!("| --- | ---: | ---: | ---: | --- |");
    row(&format!("bare `bwrap --unshare-all ... /bin/true` ({runs} runs)"), &mut bare, "baseline");
    row(&format!("new `local` machine, sequential ({runs} runs)"), &mut sequential, "p50 < 25 ms");
    row(&format!("new `local` machines, a burst of {burst} at once (from the burst's start)"), &mut local_burst, "");
    row(&format!("warm pool claim, sequential ({runs} runs, pool refilled between)"), &mut warm_sequential, "");
    row(&format!("warm pool claims, a burst of {burst} at once"), &mut warm_burst, "");
    let all = conversations.iter().copied().fold(0.0, f64::max);
    let verdict = if refused == 0 && all < 3000.0 { "met" } else { "**missed**" };
    row(
        &format!(
            "a burst of {burst} `POST /api/conversations` with a prompt, from a warm pool of {burst}, each to its first output on SSE ({refused} refused, {claims} claimed from the pool, all within {all:.0} ms)"
        ),
        &mut conversations,
        &format!("all within 3 s: {verdict}"),
    );
    println!();
    println!("| warm pool of {burst} (scripted agent) | value |");
    println!("| --- | ---: |");
    println!("| filled from empty at server start | {filled_s:.1} s |");
    println!("| refilled after a burst of {burst} claims | {refilled_s:.1} s |");
    println!(
        "| memory per warm machine (PSS of bwrap, sandboxd, agent; {machines} processes) | {mb_per_machine:.1} MB: {:.0} machines per GB |",
        1024.0 / mb_per_machine
    );
    println!("| server CPU while the full pool idles (10 s) | {idle_cpu_ms_per_s:.1} ms per s |");

    drop(stream);
    running.shutdown().await.unwrap();
    purge(&dir, &run_dir, &lease_dir);
}
