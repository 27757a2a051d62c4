//! The `acs` command line, run as a real process.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Backend;

fn acs() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_acs"));
    // Keep the developer's own ACS_* settings out of these runs.
    for (k, _) in std::env::vars() {
        if k.starts_with("ACS_") {
            c.env_remove(k);
        }
    }
    c
}

fn temp_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("acs-cli-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn help_reads_well() {
    let out = acs().arg("--help").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for word in ["serve", "migrate", "config", "--config"] {
        assert!(text.contains(word), "{word}: {text}");
    }
}

#[test]
fn config_prints_the_effective_configuration_masked() {
    let dir = temp_dir();
    let out = acs()
        .current_dir(&dir)
        .arg("config")
        .env("ACS_AUTH__ACCESS_CODE", "hunter2")
        .env("ACS_LIMITS__REQUESTS_PER_KEY", "7")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("hunter2"), "{text}");
    assert!(text.contains("access_code = \"********\""), "{text}");
    assert!(text.contains("requests_per_key = 7"), "{text}");
    assert!(text.contains("[support]"), "extension sections are shown: {text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unknown_keys_stop_the_start() {
    let dir = temp_dir();
    let out = acs().current_dir(&dir).arg("serve").env("ACS_LIMITS__REQUEST_PER_KEY", "7").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("request_per_key"), "{err}");

    std::fs::write(dir.join("bad.toml"), "[databse]\nurl = \"sqlite://x.db\"\n").unwrap();
    let out = acs().current_dir(&dir).args(["--config", "bad.toml", "serve"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr).unwrap().contains("databse"));

    let out = acs().current_dir(&dir).args(["--config", "missing.toml", "serve"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!dir.join("acs.db").exists(), "nothing was created");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An extension's section is checked at load even while its flag is off, so turning the flag on
/// later never meets a section that was never valid.
#[test]
#[cfg(all(feature = "support", feature = "webhooks"))]
fn extension_sections_are_checked_with_their_flags_off() {
    // `acs config` loads the configuration as `serve` does, and exits either way.
    let dir = temp_dir();
    let out = acs()
        .current_dir(&dir)
        .arg("config")
        .env("ACS_FEATURES__WEBHOOKS", "false")
        .env("ACS_WEBHOOKS__LEASE_SECONDS", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("webhooks.lease_seconds"), "{err}");

    let out = acs()
        .current_dir(&dir)
        .arg("config")
        .env("ACS_FEATURES__SUPPORT", "false")
        .env("ACS_SUPPORT__RETRY_SECOND", "5")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("retry_second"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn migrate_on(backend: Backend) {
    let dir = temp_dir();
    let base = std::env::var("ACS_TEST_POSTGRES").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into());
    let psql = |sql: &str| Command::new("psql").args([&format!("{base}/test"), "-qc", sql]).status().unwrap();
    let (url, pg_name) = match backend {
        Backend::Sqlite => (format!("sqlite://{}", dir.join("fresh.db").display()), None),
        Backend::Postgres => {
            let name = format!("acs_cli_{}", uuid::Uuid::new_v4().simple());
            assert!(psql(&format!("CREATE DATABASE {name}")).success());
            (format!("{base}/{name}"), Some(name))
        }
    };
    for _ in 0..2 {
        let out = acs().arg("migrate").env("ACS_DATABASE__URL", &url).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8(out.stdout).unwrap().contains("migrations applied"));
    }
    if let Some(name) = pg_name {
        psql(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn migrate_sqlite() {
    migrate_on(Backend::Sqlite);
}

#[test]
fn migrate_postgres() {
    migrate_on(Backend::Postgres);
}

#[test]
fn serve_starts_on_embedded_defaults_and_stops_on_sigterm() {
    let dir = temp_dir();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = acs()
        .current_dir(&dir)
        .arg("serve")
        .env("ACS_LISTEN", format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let ready = loop {
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            use std::io::{Read, Write};
            s.write_all(b"GET /api/health/ready HTTP/1.0\r\n\r\n").unwrap();
            let mut buf = String::new();
            s.read_to_string(&mut buf).unwrap();
            break buf;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "server did not start");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(ready.starts_with("HTTP/1.0 200"), "{ready}");
    assert!(dir.join("acs.db").exists(), "the SQLite file is created on first start");
    let ok = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(ok.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "graceful exit: {status}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serve_refuses_to_start_without_bubblewrap() {
    let dir = temp_dir();
    let empty = dir.join("bin");
    std::fs::create_dir_all(&empty).unwrap();
    let out =
        acs().current_dir(&dir).arg("serve").env("ACS_LISTEN", "127.0.0.1:0").env("PATH", &empty).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bubblewrap") && err.contains("apt-get install bubblewrap"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serve_refuses_an_unknown_or_unavailable_sandbox_provider() {
    let dir = temp_dir();
    let serve = |env: &[(&str, &str)]| {
        let mut cmd = acs();
        cmd.current_dir(&dir).arg("serve").env("ACS_LISTEN", "127.0.0.1:0").envs(env.iter().copied());
        let out = cmd.output().unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = serve(&[("ACS_SANDBOX__PROVIDER", "kubernetes")]);
    assert!(
        err.contains("sandbox.provider: `kubernetes`") && err.contains("available here: local, container"),
        "{err}"
    );
    let err = serve(&[("ACS_SANDBOX__PROVIDERS", "[\"local\", \"nonsense\"]")]);
    assert!(err.contains("unknown sandbox provider `nonsense`"), "{err}");
    // The container provider without an engine at its socket.
    let socket = dir.join("no-engine.sock");
    let err = serve(&[
        ("ACS_SANDBOX__PROVIDER", "container"),
        ("ACS_SANDBOX__PROVIDERS", "[\"container\"]"),
        ("ACS_CONTAINER__SOCKET", socket.to_str().unwrap()),
    ]);
    assert!(err.contains("sandbox provider `container`") && err.contains("podman system service"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_acs_binary_is_the_supervisor_when_started_as_sandboxd() {
    use std::io::{BufRead, Write};
    use std::os::unix::process::CommandExt;
    let dir = temp_dir();
    let socket = dir.join("s.sock");
    let mut child = acs().arg0("/opt/acs/sandboxd").arg("--socket").arg(&socket).stderr(Stdio::null()).spawn().unwrap();
    let start = Instant::now();
    let mut stream = loop {
        if let Ok(s) = std::os::unix::net::UnixStream::connect(&socket) {
            break s;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "the supervisor did not listen");
        std::thread::sleep(Duration::from_millis(10));
    };
    stream.write_all(b"{\"op\":\"ping\"}\n").unwrap();
    let mut line = String::new();
    std::io::BufReader::new(&stream).read_line(&mut line).unwrap();
    assert!(line.contains("\"type\":\"pong\""), "{line}");
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

// Client commands: a real server, the real binary, a temporary home.

crate::both!(
    cli_login_with_a_password_saves_a_private_key_and_logout_revokes_it,
    cli_device_login_waits_for_approval,
    cli_run_streams_the_turn_and_exits_with_its_outcome,
    cli_apply_reads_a_yaml_manifest_and_reports_each_document,
    a_newcomer_registers_applies_the_example_agent_and_sees_it_answer,
    cli_run_waits_in_the_queue_and_says_its_place,
);

/// Runs `acs args...` with `XDG_CONFIG_HOME` at `home`, feeding `stdin`.
async fn client(home: &std::path::Path, args: &[&str], stdin: &str) -> std::process::Output {
    let mut c = tokio::process::Command::from(acs());
    c.args(args).env("XDG_CONFIG_HOME", home).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    use tokio::io::AsyncWriteExt;
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).await.unwrap();
    drop(input);
    tokio::time::timeout(Duration::from_secs(60), child.wait_with_output()).await.expect("acs exits").unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

async fn cli_login_with_a_password_saves_a_private_key_and_logout_revokes_it(b: Backend) {
    use std::os::unix::fs::PermissionsExt;
    let app = crate::common::spawn(b).await;
    let u = app.user().await;
    let home = temp_dir();
    let base = app.base.as_str();
    let pw = format!("{}\n", u.password);

    let out =
        client(&home, &["login", "--url", base, "--email", &u.email, "--password-stdin"], "wrong password\n").await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("sign-in refused"), "{}", text(&out.stderr));
    let file = home.join("acs").join("credentials.toml");
    assert!(!file.exists(), "a refused login saves nothing");

    let out =
        client(&home, &["login", "--url", &format!("{base}/"), "--email", &u.email, "--password-stdin"], &pw).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(&format!("Signed in to {base} as {}", u.email)), "{}", text(&out.stdout));
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    let saved: toml_value::Saved = toml_value::read(&file);
    assert_eq!(saved.url, base);
    assert_eq!(app.get("/api/auth/me", &saved.key).await.body["data"]["email"], u.email.as_str());

    // Later commands find the saved login by themselves.
    let out = client(&home, &["whoami"], "").await;
    assert!(text(&out.stdout).contains(&u.email), "{}{}", text(&out.stdout), text(&out.stderr));
    let out = client(&home, &["whoami", "--url", base, "--key", &u.key, "--json"], "").await;
    let me: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(me["key"]["scope"], "full");

    let out = client(&home, &["logout"], "").await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(app.get("/api/auth/me", &saved.key).await.status, reqwest::StatusCode::UNAUTHORIZED, "revoked");
    assert!(!std::fs::read_to_string(&file).unwrap().contains(&saved.key), "forgotten");
    let out = client(&home, &["whoami"], "").await;
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("acs login"), "{}", text(&out.stderr));
    let _ = std::fs::remove_dir_all(&home);
}

async fn cli_device_login_waits_for_approval(b: Backend) {
    let app = crate::common::spawn(b).await;
    let u = app.user().await;
    let home = temp_dir();
    let mut c = tokio::process::Command::from(acs());
    c.args(["login", "--device", "--no-browser", "--url", &app.base])
        .env("XDG_CONFIG_HOME", &home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut address = String::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        if let Some(rest) = line.strip_prefix("To sign in, open ") {
            address = rest.to_owned();
            break;
        }
    }
    let code = address.split("user_code=").nth(1).expect("the address carries the code").to_owned();
    // The person approves in a signed-in browser.
    let mut browser = acs_testkit::browser::Browser::new(&app);
    browser.sign_in(&u.email, &u.password).await;
    let page = browser.get(&format!("/device?user_code={code}")).await;
    let csrf = acs_testkit::browser::field(&page.text, "csrf").unwrap();
    let r = browser.post_form("/device", &[("csrf", &csrf), ("user_code", &code), ("decision", "approve")]).await;
    assert_eq!(r.status, reqwest::StatusCode::OK);
    let out =
        tokio::time::timeout(Duration::from_secs(30), child.wait_with_output()).await.expect("acs exits").unwrap();
    assert!(out.status.success());
    let saved = toml_value::read(&home.join("acs").join("credentials.toml"));
    let me = app.get("/api/auth/me", &saved.key).await;
    assert_eq!(me.body["data"]["email"], u.email.as_str());
    let keys = app.get("/api/keys", &u.key).await;
    assert!(
        keys.body["data"].as_array().unwrap().iter().any(|k| k["name"].as_str().unwrap().starts_with("acs CLI on "))
    );
    let _ = std::fs::remove_dir_all(&home);
}

async fn cli_run_streams_the_turn_and_exits_with_its_outcome(b: Backend) {
    use acs_testkit::{SCRIPTED_AGENT, acp_agent, scripted_app};
    let app = scripted_app(b, &[]).await;
    let u = app.user().await;
    acp_agent(&app, &u, SCRIPTED_AGENT, serde_json::json!({"name": "helper"})).await;
    let home = temp_dir();
    let base = app.base.as_str();
    let prompt = "say: hello from the machine\npermission: t1 Run the tests\nsay: all green";
    let out = client(&home, &["run", "helper", prompt, "--yes", "--url", base, "--key", &u.key], "").await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("hello from the machine"), "{stdout}");
    assert!(stdout.contains("permission: allow-once"), "--yes allowed once: {stdout}");
    assert!(stdout.contains("all green"), "{stdout}");
    assert!(stderr.contains("[tool] Run the tests"), "{stderr}");

    // A conversation id goes on with that conversation: only the new turn is shown.
    let conv = stderr.lines().find_map(|l| l.strip_prefix("conversation ")).expect("the conversation is named");
    let out = client(&home, &["run", conv, "say: once more", "--url", base, "--key", &u.key], "").await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("once more") && !stdout.contains("all green"), "{stdout}");

    let out =
        client(&home, &["run", "helper", "error: -32000 the model is down", "--url", base, "--key", &u.key], "").await;
    assert_eq!(out.status.code(), Some(1), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stderr).contains("turn failed"), "{}", text(&out.stderr));

    let out = client(&home, &["run", "nobody", "hi", "--url", base, "--key", &u.key], "").await;
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no agent is named `nobody`"), "{}", text(&out.stderr));
    let _ = std::fs::remove_dir_all(&home);
}

/// The default entry of a credentials file, read without the CLI's own code.
mod toml_value {
    pub struct Saved {
        pub url: String,
        pub key: String,
    }

    pub fn read(path: &std::path::Path) -> Saved {
        let text = std::fs::read_to_string(path).unwrap();
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{name} = \"")))
                .map(|v| v.trim_end_matches('"').to_owned())
                .unwrap_or_else(|| panic!("{name} in {text}"))
        };
        Saved { url: field("url"), key: field("key") }
    }
}

const MANIFEST: &str = r#"
kind: Environment
name: py
spec:
  setup_script: "true"
  env_vars: {LANG: C.UTF-8}
---
kind: Vault
name: keys
spec:
  secrets: {TOKEN: tok-0c1d2e3f}
---
kind: Agent
name: reviewer
spec:
  runtime: acp
  command: [/bin/true]
  environment: py
  vault: keys
---
kind: Teammate
name: reviewer
spec: {environment: py, vault: keys}
---
kind: Schedule
name: nightly
spec: {agent: reviewer, cron: "0 3 * * *", prompt: "say: nightly"}
---
kind: Webhook
spec: {url: "https://example.com/hooks/acs", event_types: ["conversation.turn.*"]}
"#;

async fn cli_apply_reads_a_yaml_manifest_and_reports_each_document(b: Backend) {
    let app = crate::common::spawn(b).await;
    let u = app.user().await;
    let home = temp_dir();
    let file = home.join("team.yaml");
    std::fs::write(&file, MANIFEST).unwrap();
    let (base, path) = (app.base.as_str(), file.to_str().unwrap());
    let run = |extra: &'static [&'static str]| {
        let mut args: Vec<String> = ["apply", "-f", path, "--url", base, "--key", &u.key].map(String::from).to_vec();
        args.extend(extra.iter().map(|a| a.to_string()));
        let home = home.clone();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            client(&home, &args, "").await
        }
    };

    let out = run(&["--dry-run"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("dry run: nothing was written\n"), "{}", text(&out.stdout));
    assert_eq!(app.get("/api/agents", &u.key).await.body["data"], serde_json::json!([]));

    let out = run(&[]).await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    for line in [
        "created    Environment  py",
        "upserted   Vault        keys/secrets/TOKEN",
        "created    Teammate     reviewer",
        "created    Webhook      (unnamed)",
    ] {
        assert!(stdout.contains(line), "{line:?} in {stdout}");
    }
    assert!(stdout.contains("signing secret (shown once): whsec_"), "{stdout}");

    let out = run(&["--output", "json"]).await;
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let results: Vec<&str> = rows.as_array().unwrap().iter().map(|r| r["result"].as_str().unwrap()).collect();
    assert_eq!(results, ["unchanged", "unchanged", "upserted", "unchanged", "unchanged", "unchanged", "unchanged"]);

    // A document that fails makes the exit status 1; the others are applied.
    std::fs::write(&file, format!("{MANIFEST}---\nkind: Vault\nname: odd\nspec: {{colour: blue}}\n")).unwrap();
    let out = run(&[]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("unknown keys in spec: colour"), "{}", text(&out.stdout));
    std::fs::write(&file, "kind: [").unwrap();
    let out = run(&[]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("YAML document 1"), "{}", text(&out.stderr));
    let _ = std::fs::remove_dir_all(&home);
}

/// The README's first run, as a newcomer types it: sign up and in, apply the
/// example agent shipped in the tree (no model key), ask it something.
async fn a_newcomer_registers_applies_the_example_agent_and_sees_it_answer(b: Backend) {
    let app = crate::common::spawn(b).await;
    let home = temp_dir();
    let base = app.base.as_str();
    let login = ["login", "--register", "--url", base, "--email", "new@example.com", "--password-stdin"];
    let out = client(&home, &login, "a long enough password\n").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("Created the account new@example.com"), "{}", text(&out.stderr));
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/manifests/hello.yaml");
    let out = client(&home, &["apply", "-f", manifest], "").await;
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("created    Agent        hello"), "{}", text(&out.stdout));
    let out = client(&home, &["run", "hello", "What can you do?"], "").await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("Hello! I am the example agent"), "{stdout}");
    assert!(stdout.contains("You asked: What can you do?"), "{stdout}");
    // A second sign-up with the same email is refused in words.
    let out = client(&home, &login, "a long enough password\n").await;
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("registration refused"), "{}", text(&out.stderr));
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn completions_are_printed_for_each_shell_without_a_configuration() {
    for (shell, mark) in [("bash", "_acs()"), ("zsh", "#compdef acs"), ("fish", "complete -c acs")] {
        let out = acs().args(["--config", "/nonexistent/acs.toml", "completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}: {}", String::from_utf8_lossy(&out.stderr));
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(script.contains(mark) && script.contains("apply"), "{shell}");
    }
    let out = acs().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "an unknown shell is a usage error");
}

/// At the account's ceiling, `acs run` waits in the sandbox queue, says its
/// place, and follows the turn once a machine frees up.
async fn cli_run_waits_in_the_queue_and_says_its_place(b: Backend) {
    use acs_testkit::{SCRIPTED_AGENT, acp_agent, scripted_app};
    let app = scripted_app(b, &[("limits.sandboxes_per_account", serde_json::json!(1))]).await;
    let u = app.user().await;
    let agent = acp_agent(&app, &u, SCRIPTED_AGENT, serde_json::json!({"name": "helper"})).await;
    let busy =
        app.post("/api/conversations", &u.key, serde_json::json!({"agent_id": agent, "prompt": "sleep: 60000"})).await;
    assert_eq!(busy.status, reqwest::StatusCode::CREATED, "{}", busy.text);
    let busy = busy.body["data"]["id"].as_str().unwrap().to_owned();
    let home = temp_dir();
    let base = app.base.clone();
    let key = u.key.clone();
    let run = {
        let home = home.clone();
        tokio::spawn(async move {
            client(&home, &["run", "helper", "say: after the queue", "--url", &base, "--key", &key], "").await
        })
    };
    // Once the run waits in the line, the busy conversation ends and frees the machine.
    for _ in 0..100 {
        let q = app.get("/api/sandbox-queue", &u.key).await;
        if q.body["data"].as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let r = app.post(&format!("/api/conversations/{busy}/terminate"), &u.key, serde_json::json!({})).await;
    assert_eq!(r.status, reqwest::StatusCode::OK, "{}", r.text);
    let out = run.await.unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stderr.contains("every machine is busy: waiting, place 1 in the queue"), "{stderr}");
    assert!(stdout.contains("after the queue"), "{stdout}");
    let _ = std::fs::remove_dir_all(&home);
}
