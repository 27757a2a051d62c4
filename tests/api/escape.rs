//! The escape battery: what a hostile agent (a prompt-injected one is)
//! tries from inside its machine, and what the host sees of it. Each test
//! is a real attempt; none changes the host (values are written back
//! unchanged, what is moved is put back).

use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

use serde_json::json;
use uuid::Uuid;

use crate::common::{Backend, TestApp, sh, spawn, spawn_with};
use crate::sandboxes::{agent, launch, wait_status};

/// A ready machine of a new account.
async fn machine(app: &TestApp) -> Uuid {
    let u = app.user().await;
    let a = agent(app, &u, json!({})).await;
    let id = launch(app, &u, a).await;
    wait_status(app, &u, id, "ready").await;
    id
}

/// The host pid of the machine's supervisor: the child of its init that is
/// the daemon's pid inside.
fn supervisor_pid(app: &TestApp, id: Uuid) -> i32 {
    let info = std::fs::read_to_string(app.machine_layout(id).info()).expect("bwrap.json");
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    let init = info["child-pid"].as_i64().unwrap();
    let inside = daemon_pid_inside(app, id).to_string();
    let children = std::fs::read_to_string(format!("/proc/{init}/task/{init}/children")).unwrap();
    children
        .split_whitespace()
        .map(|c| c.parse().unwrap())
        .find(|pid| status_field(*pid, "NSpid").split_whitespace().last() == Some(inside.as_str()))
        .expect("the supervisor")
}

/// The supervisor daemon's pid inside the machine: 2 under bwrap; a
/// container's runtime uses a few pids first, and its start records it.
fn daemon_pid_inside(app: &TestApp, id: Uuid) -> u64 {
    let info = std::fs::read_to_string(app.machine_layout(id).info()).expect("bwrap.json");
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    info["daemon-pid"].as_u64().unwrap_or(2)
}

fn status_field(pid: i32, field: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status.lines().find_map(|l| l.strip_prefix(&format!("{field}:"))).unwrap().trim().to_owned()
}

/// The mount options of whatever is mounted at `path` (fields 6 and 11 of mountinfo).
fn mount_options(path: &std::path::Path) -> String {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let want = path.to_str().unwrap();
    let line = table.lines().find(|l| l.split(' ').nth(4) == Some(want)).expect("the disk is mounted");
    let fields: Vec<&str> = line.split(' ').collect();
    let super_opts = fields.iter().skip_while(|f| **f != "-").nth(3).copied().unwrap_or_default();
    format!("{},{super_opts}", fields[5])
}

crate::both!(
    an_agent_is_an_unprivileged_stranger_on_the_host,
    the_kernel_surface_is_closed,
    the_supervisor_channel_cannot_be_touched,
    a_full_disk_stops_at_its_limit,
    a_machine_nobody_speaks_to_parks_itself,
    a_killed_servers_machines_are_reaped,
);

async fn an_agent_is_an_unprivileged_stranger_on_the_host(b: Backend) {
    let app = spawn(b).await;
    let id = machine(&app).await;
    let layout = app.machine_layout(id);
    let (code, out, err) = sh(
        &app,
        id,
        r#"
        echo "uid=$(id -u)"
        # A sysctl written back unchanged: refused, whatever the host's permissions.
        for f in kernel/printk vm/overcommit_memory net/ipv4/ip_forward kernel/hostname; do
            v=$(cat /proc/sys/$f) && (printf '%s\n' "$v" > /proc/sys/$f) 2>/dev/null && echo "wrote-$f"
        done
        grep -q ' /proc/sys .*\bro\b' /proc/self/mounts && echo "proc-sys-ro"
        printf '#!/bin/sh\nid -u\n' > /workspace/su && chmod 4755 /workspace/su && echo "made-setuid"
        mkdir -p /home/agent/dir && echo data > /home/agent/dir/file
        echo done
        "#,
    )
    .await;
    assert_eq!(code, Some(0), "{out} {err}");
    let inside = format!("uid={}", app.agent_uid(id));
    assert!(out.contains(&inside) && out.contains("made-setuid") && out.contains("done"), "{out} {err}");
    assert!(!out.contains("wrote-"), "a /proc/sys value was written from inside: {out}");
    assert!(out.contains("proc-sys-ro"), "{out}");

    // The host's view: every process of the machine is its own unprivileged uid.
    let uid: u32 = std::fs::read_to_string(layout.owner()).unwrap().trim().parse().unwrap();
    assert!(uid >= 65536, "the machine's uid {uid}");
    let pid = supervisor_pid(&app, id);
    let uids = status_field(pid, "Uid");
    assert!(uids.split_whitespace().all(|u| u == uid.to_string()), "supervisor uids {uids}, machine uid {uid}");
    assert_eq!(status_field(pid, "CapEff"), "0000000000000000");
    assert_eq!(status_field(pid, "NoNewPrivs"), "1");
    // What it writes is its uid's, setuid bit or not, on a disk mounted nosuid,nodev.
    let setuid = std::fs::metadata(layout.workspace().join("su")).unwrap();
    assert_eq!(setuid.uid(), uid);
    assert_ne!(setuid.mode() & 0o4000, 0, "the file keeps its bit on the host...");
    let opts = mount_options(&layout.mount());
    assert!(opts.split(',').any(|o| o == "nosuid") && opts.split(',').any(|o| o == "nodev"), "{opts}");
    let host_run = std::process::Command::new("setpriv")
        .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
        .arg(layout.workspace().join("su"))
        .output()
        .unwrap();
    assert!(!host_run.status.success(), "...but another host user can neither reach nor run it");
    let file = std::fs::metadata(layout.home().join("dir/file")).unwrap();
    assert_eq!((file.uid(), file.gid()), (uid, uid));
    // Nobody else on the host may look in: the disk and the machine's own directory are private.
    assert_eq!(std::fs::metadata(layout.mount()).unwrap().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(&layout.root).unwrap().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(layout.root.parent().unwrap()).unwrap().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(layout.image()).unwrap().mode() & 0o777, 0o600);
}

async fn the_kernel_surface_is_closed(b: Backend) {
    let app = spawn(b).await;
    let id = machine(&app).await;
    let (code, out, err) = sh(
        &app,
        id,
        r#"
        grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status | tr -d '\t '
        unshare -Ur true 2>/dev/null && echo "nested-userns"
        unshare -n true 2>/dev/null && echo "nested-netns"
        unshare -m true 2>/dev/null && echo "nested-mountns"
        mkdir -p /tmp/m && mount -t tmpfs none /tmp/m 2>/dev/null && echo "mounted"
        python3 - <<'EOF'
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def attempt(name, nr, *args):
    r = libc.syscall(nr, *args)
    e = ctypes.get_errno()
    print(f"{name}={'ok' if r >= 0 else errno.errorcode.get(e, e)}")
attempt("unshare_user", 272, 0x10000000)
attempt("clone_newuser", 56, 0x10000000 | 17, 0, 0, 0, 0)
attempt("keyctl", 250, 0, 0, 0, 0, 0)
attempt("add_key", 248, b"user", b"k", b"v", 1, -3)
attempt("bpf", 321, 0, 0, 0)
attempt("perf_event_open", 298, 0, 0, -1, -1, 0)
attempt("userfaultfd", 323, 0)
attempt("io_uring_setup", 425, 1, 0)
attempt("open_by_handle_at", 304, -100, 0, 0)
attempt("mount", 165, b"none", b"/tmp", b"tmpfs", 0, 0)
attempt("setns", 308, 0, 0)
attempt("kexec_load", 246, 0, 0, 0, 0)
EOF
        # Alone: a container's runtime kills the caller of an x32 number (a foreign architecture to it).
        python3 -c '
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(39 | 0x40000000)
print("x32_getpid=" + ("ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")))
' 2>/dev/null || echo "x32_getpid=killed"
        # Ordinary development work still runs.
        cd /workspace && git init -q r && cd r && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m x && echo "git-ok"
        python3 -c 'import threading; t = threading.Thread(target=print, args=("py-threads-ok",)); t.start(); t.join()'
        node -e 'require("fs").readdirSync("/workspace"); console.log("node-ok")' 2>&1
        (sleep 0.1 &) ; wait; echo "fork-ok"
        "#,
    )
    .await;
    assert_eq!(code, Some(0), "{out} {err}");
    assert!(out.contains("Seccomp:2") && out.contains("NoNewPrivs:1"), "{out}");
    for escape in ["nested-userns", "nested-netns", "nested-mountns", "mounted"] {
        assert!(!out.contains(escape), "{escape}: {out} {err}");
    }
    for (call, want) in [
        ("unshare_user", "EPERM"),
        ("clone_newuser", "EPERM"),
        ("keyctl", "EPERM"),
        ("add_key", "EPERM"),
        ("bpf", "EPERM"),
        ("perf_event_open", "EPERM"),
        ("userfaultfd", "EPERM"),
        ("io_uring_setup", "ENOSYS"),
        ("open_by_handle_at", "EPERM"),
        ("mount", "EPERM"),
        ("setns", "EPERM"),
        ("kexec_load", "EPERM"),
        ("x32_getpid", if crate::common::test_provider().is_some() { "killed" } else { "ENOSYS" }),
    ] {
        assert!(out.lines().any(|l| l == format!("{call}={want}")), "{call} should fail with {want}: {out} {err}");
    }
    for works in ["git-ok", "py-threads-ok", "node-ok", "fork-ok"] {
        assert!(out.contains(works), "{works}: {out} {err}");
    }
}

async fn the_supervisor_channel_cannot_be_touched(b: Backend) {
    let app = spawn(b).await;
    let one = machine(&app).await;
    let two = machine(&app).await;
    // From inside: the socket is nowhere in the machine, and the supervisor can be neither
    // traced nor looked into (it is not dumpable), though it runs as the agent's uid.
    let daemon = daemon_pid_inside(&app, one);
    let (code, out, err) = sh(
        &app,
        one,
        &r#"
        ls -A /run; echo "run-listed"
        find / -xdev -type s 2>/dev/null | grep -v '^/proc' ; echo "sockets-listed"
        # The supervisor is the machine's init (pid 1) and its daemon (pid 2 under bwrap), both the agent's own uid.
        for sup in 1 DAEMON; do
            echo "pid $sup is $(tr '\0' ' ' < /proc/$sup/cmdline | cut -c1-17) as $(stat -c %u /proc/$sup)"
            ls /proc/$sup/fd >/dev/null 2>&1 && echo "saw-fds-$sup"
            cat /proc/$sup/environ >/dev/null 2>&1 && echo "saw-environ-$sup"
            python3 -c "
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.ptrace(16, int(sys.argv[1]), 0, 0)
print('ptrace-' + sys.argv[1] + '=' + ('attached' if r == 0 else str(ctypes.get_errno())))
" $sup
        done
        "#
        .replace("DAEMON", &daemon.to_string()),
    )
    .await;
    assert_eq!(code, Some(0), "{out} {err}");
    let listed = out.split("run-listed").next().unwrap().trim();
    assert_eq!(listed, "", "the machine's /run holds nothing of the host: {out}");
    let sockets = out.split("run-listed").nth(1).unwrap().split("sockets-listed").next().unwrap().trim();
    assert_eq!(sockets, "", "no socket of the host is reachable inside: {out}");
    let daemon_is = format!("pid {daemon} is /opt/acs/sandboxd");
    assert!(out.contains("pid 1 is /opt/acs/sandboxd") && out.contains(&daemon_is), "{out}");
    assert!(!out.contains("saw-fds") && !out.contains("saw-environ"), "{out}");
    for sup in [1, daemon] {
        assert!(
            out.contains(&format!("ptrace-{sup}=1\n")),
            "attaching to the supervisor is refused (EPERM): {out} {err}"
        );
    }

    // From the host: a socket moved or linked into another machine's place is refused by the peer check.
    let svc = acs::core::sandboxes::service::service(app.state()).unwrap();
    let (a, bb) = (app.machine_layout(one), app.machine_layout(two));
    assert!(svc.serving(one).supervisor(one).ping().await.is_ok());
    let parked = a.ctl().join("moved-aside.sock");
    std::fs::rename(a.socket(), &parked).unwrap();
    std::os::unix::fs::symlink(bb.socket(), a.socket()).unwrap();
    let linked = svc.serving(one).supervisor(one).ping().await;
    std::fs::remove_file(a.socket()).unwrap();
    std::fs::hard_link(bb.socket(), a.socket()).unwrap();
    let hard = svc.serving(one).supervisor(one).ping().await;
    std::fs::remove_file(a.socket()).unwrap();
    std::fs::rename(&parked, a.socket()).unwrap();
    for (what, answer) in [("a symlink", linked), ("a hard link", hard)] {
        let e = answer.expect_err(&format!("{what} to another machine's socket must not answer"));
        assert!(e.to_string().contains("is not this machine's supervisor"), "{what}: {e}");
    }
    assert!(svc.serving(one).supervisor(one).ping().await.is_ok(), "its own socket, put back, answers again");
    // The sockets live in directories only root may enter.
    for l in [&a, &bb] {
        assert_eq!(std::fs::metadata(l.ctl()).unwrap().mode() & 0o777, 0o700);
        assert_eq!(std::fs::symlink_metadata(l.socket()).unwrap().uid(), 0);
    }
}

async fn a_full_disk_stops_at_its_limit(b: Backend) {
    let app = spawn_with(b, &[("sandbox.disk_mb", json!(64))]).await;
    let id = machine(&app).await;
    let layout = app.machine_layout(id);
    let (code, out, err) = sh(
        &app,
        id,
        r#"
        df -m /workspace | tail -1 | awk '{print "size=" $2}'
        dd if=/dev/zero of=/workspace/fill bs=1M count=200 2>&1 | grep -o 'No space left on device' | head -1
        head -c 1048576 /dev/zero > /home/agent/more 2>/dev/null || echo "home-full"
        rm /workspace/fill && head -c 1048576 /dev/zero > /home/agent/more && echo "room-again"
        "#,
    )
    .await;
    assert_eq!(code, Some(0), "{out} {err}");
    let size: u64 = out.lines().find_map(|l| l.strip_prefix("size=")).unwrap().parse().unwrap();
    assert!((50..=64).contains(&size), "the disk is about 64 MB inside: {out}");
    assert!(out.contains("No space left on device"), "{out}");
    assert!(out.contains("home-full"), "home and workspace share one limit: {out}");
    assert!(out.contains("room-again"), "{out}");
    // On the host the image never grew past its size.
    let image = std::fs::metadata(layout.image()).unwrap();
    assert_eq!(image.len(), 64 << 20);
    assert!(image.blocks() * 512 <= 64 << 20, "allocated {} bytes", image.blocks() * 512);
}

async fn a_machine_nobody_speaks_to_parks_itself(b: Backend) {
    // Served: the server's keepalive keeps it up past the watchdog.
    let app = spawn_with(b, &[("sandbox.watchdog_seconds", json!(2))]).await;
    let id = machine(&app).await;
    let pid = supervisor_pid(&app, id);
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists(), "a served machine keeps running");
    // Let go (a server that stops cleanly leaves its machines for the next one): no one speaks to it now.
    let svc = acs::core::sandboxes::service::service(app.state()).unwrap();
    svc.serving(id).let_go(id);
    app.state().shutdown.cancel();
    let deadline = Instant::now() + Duration::from_secs(15);
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(Instant::now() < deadline, "the supervisor should have parked its machine");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = std::fs::read_to_string(app.machine_layout(id).log()).unwrap();
    assert!(log.contains("no server has spoken to this machine"), "{log}");
    // Its disk is kept.
    assert!(app.machine_layout(id).image().is_file());
}

/// An `acs` process of the test's own, on `app`'s database and directories.
fn acs(app: &TestApp) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_acs"));
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("ACS_")) {
        c.env_remove(k);
    }
    c.envs(app.config_env()).current_dir(&app.dir);
    c
}

fn netns_exists(id: Uuid) -> bool {
    let suffix = &id.simple().to_string()[20..];
    std::fs::read_dir("/run/netns")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().ends_with(suffix))
}

async fn a_killed_servers_machines_are_reaped(b: Backend) {
    let mut app = spawn(b).await;
    app.stop().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}");
    let mut server = acs(&app)
        .arg("serve")
        .env("ACS_LISTEN", format!("127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while http.get(format!("{base}/api/health/ready")).send().await.is_err() {
        assert!(Instant::now() < deadline, "the server did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let post = |path: &str, key: Option<&str>, body: serde_json::Value| {
        let mut r = http.post(format!("{base}{path}")).json(&body);
        if let Some(k) = key {
            r = r.bearer_auth(k);
        }
        async move { r.send().await.unwrap().json::<serde_json::Value>().await.unwrap() }
    };
    let creds = json!({"email": "reap@example.com", "password": "correct horse battery"});
    post("/api/auth/register", None, creds.clone()).await;
    let key = post("/api/auth/login", None, creds).await["data"]["api_key"].as_str().unwrap().to_owned();
    let agent = post("/api/agents", Some(&key), json!({"name": "reaped", "runtime": "acp", "command": ["true"]})).await;
    let agent = agent["data"]["id"].as_str().unwrap().to_owned();
    let mut machines = Vec::new();
    for _ in 0..2 {
        let conv = post("/api/conversations", Some(&key), json!({"agent_id": agent})).await;
        machines.push(conv["data"]["sandbox_id"].as_str().unwrap().parse::<Uuid>().unwrap());
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let list: serde_json::Value =
            http.get(format!("{base}/api/sandboxes")).bearer_auth(&key).send().await.unwrap().json().await.unwrap();
        // A 429 (this key's request limit, when the machines are slow to come up) is a "not yet".
        let ready = list["data"].as_array().map_or(0, |all| all.iter().filter(|s| s["status"] == "ready").count());
        if ready == 2 {
            break;
        }
        assert!(Instant::now() < deadline, "machines not ready: {list}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The server dies without a word: its machines run on, owned by nobody alive.
    server.kill().unwrap();
    server.wait().unwrap();
    let (kept, stray) = (machines[0], machines[1]);
    let pids: Vec<i32> = machines.iter().map(|m| supervisor_pid(&app, *m)).collect();
    // The second one's row goes too (a harness that dropped its database).
    let db = acs::core::db::Db::connect(&acs::core::config::DatabaseConfig {
        url: app.db_url.clone(),
        ..Default::default()
    })
    .await
    .unwrap();
    sqlx::query("DELETE FROM sandboxes WHERE id = $1").bind(stray.to_string()).execute(&db.pool).await.unwrap();

    let list = acs(&app).args(["sandboxes", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(list.status.success(), "{text} {}", String::from_utf8_lossy(&list.stderr));
    let line = |id: Uuid| text.lines().find(|l| l.starts_with(&id.to_string())).unwrap_or_default().to_owned();
    assert!(line(kept).contains("running") && line(kept).ends_with("abandoned"), "{text}");
    assert!(line(stray).contains("running") && line(stray).ends_with("stray"), "{text}");

    let dry = acs(&app).args(["sandboxes", "reap", "--dry-run"]).output().unwrap();
    let dry_text = String::from_utf8_lossy(&dry.stdout);
    assert!(dry_text.contains("2 machine(s) would be reaped"), "{dry_text}");
    assert!(pids.iter().all(|p| std::path::Path::new(&format!("/proc/{p}")).exists()), "a dry run stops nothing");

    let reap = acs(&app).args(["sandboxes", "reap"]).output().unwrap();
    let reap_text = String::from_utf8_lossy(&reap.stdout);
    assert!(reap.status.success(), "{reap_text} {}", String::from_utf8_lossy(&reap.stderr));
    assert!(reap_text.contains(&format!("{kept} stopped (disk kept): abandoned")), "{reap_text}");
    assert!(reap_text.contains(&format!("{stray} removed: stray")), "{reap_text}");
    for (m, pid) in machines.iter().zip(&pids) {
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "machine {m} still runs");
        assert!(!netns_exists(*m), "machine {m}'s network namespace is left");
        assert!(!app.machine_layout(*m).mount().exists(), "machine {m}'s disk is still mounted");
    }
    assert!(app.machine_layout(kept).image().is_file(), "an abandoned machine keeps its disk");
    assert!(!app.machine_layout(stray).root.exists(), "a stray machine is removed whole");
    let again = acs(&app).args(["sandboxes", "reap"]).output().unwrap();
    assert!(String::from_utf8_lossy(&again.stdout).contains("0 machine(s) reaped"));
    db.pool.close().await;
}
