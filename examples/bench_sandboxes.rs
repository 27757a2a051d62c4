//! Benchmark of `local` sandboxes, in one run: create-to-`ready` of a machine
//! without setup against a bare `bwrap ... /bin/true`, exec round trip
//! through the supervisor, checkpoint of a 100 MB home, idle memory per
//! machine, many machines at once, and the seccomp filter's cost on a
//! syscall-heavy command (`git status` over a large tree). Needs root,
//! bubblewrap, nftables and iproute2 (scripts/setup). Run through
//! `bench/run`, or alone:
//!
//!     cargo build --release --bin sandboxd && cargo run --release --example bench_sandboxes
//!
//! Knobs: BENCH_SANDBOX_RUNS (20), BENCH_SANDBOXES_AT_ONCE (100),
//! BENCH_GIT_FILES (20000).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use acs::core::agents::get_agent;
use acs::core::sandboxes::{self, service::service};
use serde_json::{Value, json};
use uuid::Uuid;

#[path = "util/mod.rs"]
mod util;
use util::{
    bare_bwrap, bench_account, env_or, launch_request, machine_pss_kib, percentile, purge, ready, start_server,
};

/// `git status` over a tree of `files` files in bwrap, with and without the
/// machines' seccomp filter, alternating: (with, without) wall times in ms.
fn git_status_with_and_without_seccomp(files: usize, runs: usize) -> (Vec<f64>, Vec<f64>) {
    use std::io::Seek;
    let repo = std::env::temp_dir().join(format!("acs-bench-git-{}", Uuid::new_v4().simple()));
    for i in 0..files {
        let dir = repo.join(format!("d{}", i % 200));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.txt")), format!("line {i}\n")).unwrap();
    }
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.email=b@b", "-c", "user.name=b"])
            .args(args)
            .current_dir(&repo)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "tree"]);
    let program = acs::core::provider::local::seccomp::program_bytes();
    let run = |filtered: bool| {
        let mut memfd = tempfile_with(&program);
        memfd.rewind().unwrap();
        let repo_arg = repo.display().to_string();
        let mut cmd = std::process::Command::new("bwrap");
        cmd.args(["--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr"])
            .args(["--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64"])
            .args(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", &repo_arg, "/repo"]);
        if filtered {
            use std::os::fd::AsRawFd;
            let fd = memfd.as_raw_fd();
            // SAFETY: fcntl in the child before exec, on a descriptor it inherited.
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
            cmd.args(["--seccomp", &fd.to_string()]);
        }
        cmd.args(["git", "-c", "safe.directory=*", "-C", "/repo", "status", "--porcelain"]);
        let t = Instant::now();
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        t.elapsed().as_secs_f64() * 1000.0
    };
    // Warm the page cache and git's index first.
    run(false);
    run(true);
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        with.push(run(true));
        without.push(run(false));
    }
    let _ = std::fs::remove_dir_all(&repo);
    (with, without)
}

/// An anonymous file holding `bytes`.
fn tempfile_with(bytes: &[u8]) -> std::fs::File {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    // SAFETY: memfd_create with a static name; the descriptor is owned by the File at once.
    let fd = unsafe { libc::memfd_create(c"bench-seccomp".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0, "memfd_create");
    // SAFETY: a fresh descriptor nothing else owns.
    let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
    f.write_all(bytes).unwrap();
    f
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let runs = env_or("BENCH_SANDBOX_RUNS", 20);
    let at_once = env_or("BENCH_SANDBOXES_AT_ONCE", 100);
    let dir = std::env::temp_dir().join(format!("acs-bench-sbx-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    // Many machines of one account at once: no concurrency ceilings here.
    let no_ceilings = [("limits.sandboxes_per_account", json!(0)), ("limits.sandboxes_fleet", json!(0))];
    let running = start_server(&format!("sqlite://{}", dir.join("acs.db").display()), &dir, &no_ceilings).await;
    let state = running.state.clone();
    let lease_dir = state.config().sandbox.lease_dir.clone();
    let run_dir = state.config().sandbox.run_dir.clone();
    let base = format!("http://{}", running.addr);
    let http = reqwest::Client::new();
    let (account_id, key) = bench_account(&http, &base).await;
    let mut agent_ids = Vec::new();
    for (name, mode) in [("eph", "ephemeral"), ("home", "persistent")] {
        let a: Value = http
            .post(format!("{base}/api/agents"))
            .bearer_auth(&key)
            .json(&json!({"name": name, "runtime": "acp", "command": ["true"], "sandbox_mode": mode}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        agent_ids.push(a["data"]["id"].as_str().unwrap().parse::<Uuid>().unwrap());
    }
    let eph = get_agent(&state, account_id, agent_ids[0]).await.unwrap();
    let home = get_agent(&state, account_id, agent_ids[1]).await.unwrap();
    let request = |agent: &acs::core::agents::Agent| launch_request(account_id, agent);
    let svc = service(&state).unwrap();

    // 1. create-to-ready against bare bwrap.
    let mut bare = bare_bwrap(runs);
    let mut create = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let row = sandboxes::launch(&state, request(&eph)).await.unwrap();
        ready(&state, row.id).await;
        create.push(t.elapsed().as_secs_f64() * 1000.0);
        sandboxes::reclaim(&state, row.id).await.unwrap();
    }

    // 2. exec round trip.
    let row = sandboxes::launch(&state, request(&home)).await.unwrap();
    ready(&state, row.id).await;
    let sup = svc.provider(&row).supervisor(row.id);
    let exec = |argv: &[&str]| sandboxd::proto::ExecRequest {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        cwd: None,
        env: BTreeMap::new(),
        stdin: None,
        timeout_ms: Some(120_000),
        max_output: None,
    };
    let mut rtt = Vec::new();
    for i in 0..203 {
        let t = Instant::now();
        sup.exec(&exec(&["true"])).await.unwrap();
        if i >= 3 {
            rtt.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }

    // 3. idle memory of that machine.
    let info: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("sandboxes/machines").join(row.id.to_string()).join("bwrap.json")).unwrap(),
    )
    .unwrap();
    let init = info["child-pid"].as_i64().unwrap() as i32;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pss_kib = machine_pss_kib(init);

    // 4. checkpoint of a 100 MB home: 2000 files of 40 KB in 40 dirs and one 20 MB file.
    let fill = "for d in $(seq 1 40); do mkdir -p ~/data/$d; for f in $(seq 1 50); do head -c 40960 /dev/urandom > ~/data/$d/$f; done; done; head -c 20971520 /dev/urandom > ~/big";
    sup.exec(&exec(&["bash", "-c", fill])).await.unwrap();
    svc.provider(&row).stop(row.id).await;
    let mut ck = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        svc.provider(&row).checkpoint(row.id).await.unwrap();
        ck.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    svc.provider(&row).destroy(row.id).await;

    // 5. many at once.
    let t = Instant::now();
    let mut ids = Vec::new();
    for _ in 0..at_once {
        ids.push(sandboxes::launch(&state, request(&eph)).await.unwrap().id);
    }
    for id in &ids {
        ready(&state, *id).await;
    }
    let all_ready = t.elapsed().as_secs_f64();
    let mut alive = 0;
    for id in &ids {
        if svc.serving(*id).supervisor(*id).ping().await.is_ok() {
            alive += 1;
        }
    }
    for id in &ids {
        sandboxes::reclaim(&state, *id).await.unwrap();
    }

    // 6. the seccomp filter on a syscall-heavy command.
    let files = env_or("BENCH_GIT_FILES", 20_000);
    let (mut with, mut without) = git_status_with_and_without_seccomp(files, 15);

    println!("| local sandboxes | p50 | p90 | goal |");
    println!("| --- | ---: | ---: | --- |");
    let (b50, b90) = (percentile(&mut bare, 0.5), percentile(&mut bare, 0.9));
    println!("| bare `bwrap --unshare-all ... /bin/true` ({runs} runs) | {b50:.1} ms | {b90:.1} ms | baseline |");
    let (c50, c90) = (percentile(&mut create, 0.5), percentile(&mut create, 0.9));
    println!("| create to `ready`, no setup ({runs} runs) | {c50:.1} ms | {c90:.1} ms | p50 < 100 ms |");
    let (r50, r90) = (percentile(&mut rtt, 0.5), percentile(&mut rtt, 0.9));
    println!("| exec round trip of `true` (200 runs) | {r50:.2} ms | {r90:.2} ms | < 5 ms |");
    let (k50, k90) = (percentile(&mut ck, 0.5), percentile(&mut ck, 0.9));
    println!("| checkpoint of a 100 MB home (5 runs) | {k50:.0} ms | {k90:.0} ms | < 1 s |");
    println!(
        "| idle memory of one machine (PSS of bwrap + sandboxd) | {:.1} MB | | < 10 MB |",
        pss_kib as f64 / 1024.0
    );
    println!("| machines at once: {alive} of {at_once} answering, all ready in {all_ready:.1} s | | | |");
    let (w50, w90) = (percentile(&mut with, 0.5), percentile(&mut with, 0.9));
    let (o50, o90) = (percentile(&mut without, 0.5), percentile(&mut without, 0.9));
    println!(
        "| `git status` over {files} files in bwrap, without the seccomp filter (15 runs) | {o50:.1} ms | {o90:.1} ms | |"
    );
    println!(
        "| the same with the machines' seccomp filter | {w50:.1} ms | {w90:.1} ms | +{:.1}% at p50 |",
        (w50 / o50 - 1.0) * 100.0
    );

    running.shutdown().await.unwrap();
    purge(&dir, &run_dir, &lease_dir);
}
