//! Benchmark of starting machines (docs/scale.md), in one run: create to the
//! first command's output, sequential and as a burst of 100 at once, for a
//! new `local` machine and for a claim from a warm pool, with a bare
//! `bwrap ... /bin/true` beside them (and for a `container` machine, with a
//! bare `podman run` beside it, when Podman's service answers); a burst of 100 conversations created
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
    bare_bwrap, bench_account, burst_of_creates, env_or, launch_request, machine_pss_kib, percentile, purge, ready,
    start_server,
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

/// Wall times (ms) of a bare `podman run` of the machines' image, `runs` after one discarded.
fn bare_podman_run(runs: usize) -> Vec<f64> {
    let image = acs::core::config::ContainerConfig::default().image;
    // This kind of host refuses podman's default rlimits (root lacks CAP_SYS_RESOURCE): lower ones.
    let args = ["--runtime", "runc", "run", "--rm", "--network", "none", "--ulimit", "nofile=1024:20000"];
    let nproc = ["--ulimit", "nproc=1000:1000"];
    (0..=runs)
        .map(|_| {
            let t = Instant::now();
            let ok = std::process::Command::new("podman")
                .args(args)
                .args(nproc)
                .args(["-v", "/usr:/usr:ro", &image, "/usr/bin/true"])
                .stdout(std::process::Stdio::null())
                .status()
                .expect("podman")
                .success();
            assert!(ok, "podman run {image}");
            t.elapsed().as_secs_f64() * 1000.0
        })
        .skip(1)
        .collect()
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
    // RUST_LOG=acs_machine=debug shows where each start's time goes ("machine started").
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("RUST_LOG") {
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
    }
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

    // 1b. the `container` provider (Podman), when an engine answers: bare `podman run` beside it.
    let engine = std::os::unix::net::UnixStream::connect(acs::core::config::ContainerConfig::default().socket).is_ok();
    let container_runs = runs.min(10);
    let (mut bare_podman, mut container, mut container_burst) = (Vec::new(), Vec::new(), Vec::new());
    if engine {
        let mut with_container = settings.clone();
        with_container.push(("sandbox.provider", json!("container")));
        with_container.push(("sandbox.providers", json!(["local", "container"])));
        let running = start_server(&db_url, &dir, &with_container).await;
        bare_podman = bare_podman_run(container_runs);
        for _ in 0..container_runs {
            let (ms, id) = create_to_command(&running.state, account_id, &agent).await;
            container.push(ms);
            sandboxes::reclaim(&running.state, id).await.unwrap();
        }
        container_burst = burst_to_command(&running.state, account_id, &agent, burst.min(20)).await;
        running.shutdown().await.unwrap();
    }

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
    // Every process of each pooled machine: bwrap, its supervisor and the agent under it.
    let mut machines_kib = 0;
    for m in store::pooled_here(&state.db, state.events.server()).await.unwrap() {
        let info = std::fs::read_to_string(dir.join("sandboxes/machines").join(m.id.to_string()).join("bwrap.json"));
        let info: Value = serde_json::from_str(&info.unwrap()).unwrap();
        let init = info["child-pid"].as_i64().unwrap() as i32;
        machines_kib += machine_pss_kib(init);
    }
    let cpu_before = cpu_ms();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let idle_cpu_ms_per_s = (cpu_ms() - cpu_before) / 10.0;
    let mb_per_machine = machines_kib as f64 / 1024.0 / burst as f64;
    let mut warm_burst = burst_to_command(&state, account_id, &agent, burst).await;

    // 3. conversations: a burst of creates with a prompt, each to its first output on SSE.
    wait_warm(&state, burst).await;
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
    if engine {
        row(
            &format!("bare `podman --runtime runc run --rm --network none /usr/bin/true` ({container_runs} runs)"),
            &mut bare_podman,
            "baseline",
        );
        row(&format!("new `container` machine (Podman), sequential ({container_runs} runs)"), &mut container, "");
        row(
            &format!("new `container` machines, a burst of {} at once", container_burst.len()),
            &mut container_burst,
            "",
        );
    } else {
        println!(
            "| `container` provider | skipped: no engine at the default socket (scripts/container-engine) | | | |"
        );
    }
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
    println!(
        "| memory per warm machine (PSS of each machine's processes: bwrap's init, sandboxd, the agent) | {mb_per_machine:.1} MB: {:.0} machines per GB |",
        1024.0 / mb_per_machine
    );
    println!("| server CPU while the full pool idles (10 s) | {idle_cpu_ms_per_s:.1} ms per s |");

    drop(stream);
    running.shutdown().await.unwrap();
    purge(&dir, &run_dir, &lease_dir);
}
