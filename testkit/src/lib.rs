//! The test kit of acs and its extensions: `spawn(backend)` starts the real
//! server on `127.0.0.1:0` with a fresh database (a new SQLite file, or a new
//! PostgreSQL database at `ACS_TEST_POSTGRES`, default
//! `postgres://postgres@127.0.0.1:5432`), and talks HTTP to it. The server
//! has the extensions linked into the test binary: the `acs` crate's tests
//! get the binary's set; an extension crate's tests get that extension
//! (docs/extensions.md). `both!` runs a test on each database; [`receiver`]
//! is a real webhook receiver.

pub mod browser;
pub mod fake_model;
pub mod receiver;
pub mod upstream;

use std::path::PathBuf;

use acs_core::config::Loaded;
use acs_core::server::{self, Running};
use figment::providers::Serialized;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::Connection;
use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Runs each named `async fn(Backend)` once per database, as
/// `<name>::sqlite` and `<name>::postgres`.
#[macro_export]
macro_rules! both {
    ($($name:ident),* $(,)?) => { $(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() { super::$name($crate::Backend::Sqlite).await }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() { super::$name($crate::Backend::Postgres).await }
        }
    )* };
}

fn postgres_base() -> String {
    std::env::var("ACS_TEST_POSTGRES").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into())
}

/// `TEST_SANDBOX_PROVIDER`: the default sandbox provider of test servers, when not `local`
/// (not `ACS_*`: the configuration would read it as a key).
pub fn test_provider() -> Option<String> {
    std::env::var("TEST_SANDBOX_PROVIDER").ok().filter(|p| !p.is_empty() && p != "local")
}

/// Whether a container engine answers at the `container` provider's
/// default socket: what the container provider's own tests need. `false`
/// prints why, so a skipped test says so.
pub fn container_engine() -> bool {
    let socket = acs_core::config::ContainerConfig::default().socket;
    let ok = std::os::unix::net::UnixStream::connect(&socket).is_ok();
    if !ok {
        eprintln!(
            "SKIPPED: no container engine at {socket} (start one: `podman system service --time=0 unix://{socket}`, \
             or run scripts/setup as root)"
        );
    }
    ok
}

pub struct TestApp {
    pub base: String,
    pub http: reqwest::Client,
    pub dir: PathBuf,
    pub db_url: String,
    loaded: Loaded,
    running: Option<Running>,
    pg_db: Option<String>,
}

pub struct Resp {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
    pub text: String,
}

/// A registered account with a full-scope key.
pub struct User {
    pub id: String,
    pub email: String,
    pub password: String,
    pub key: String,
}

pub async fn spawn(backend: Backend) -> TestApp {
    spawn_with(backend, &[]).await
}

/// With `TEST_LOG` set (a `RUST_LOG` filter, such as `acs_machine=debug,warn`), the
/// servers of the test binary log to stderr: to see why a start failed in a test.
fn log_if_asked() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if let Ok(filter) = std::env::var("TEST_LOG") {
            tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
                .with_writer(std::io::stderr)
                .init();
        }
    });
}

/// Starts a server with configuration overrides given as (dotted key, value).
pub async fn spawn_with(backend: Backend, overrides: &[(&str, Value)]) -> TestApp {
    log_if_asked();
    let dir = std::env::temp_dir().join(format!("acs-test-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let (db_url, pg_db) = match backend {
        Backend::Sqlite => (format!("sqlite://{}", dir.join("acs.db").display()), None),
        Backend::Postgres => {
            let name = format!("acs_t_{}", Uuid::new_v4().simple());
            let mut admin = sqlx::PgConnection::connect(&format!("{}/test", postgres_base()))
                .await
                .expect("PostgreSQL at ACS_TEST_POSTGRES");
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut admin).await.unwrap();
            (format!("{}/{name}", postgres_base()), Some(name))
        }
    };
    let mut fig = acs_core::extension::config::figment(None)
        .merge(Serialized::default("listen", "127.0.0.1:0"))
        .merge(Serialized::default("database.url", &db_url))
        .merge(Serialized::default("database.max_connections", 4))
        .merge(Serialized::default("secrets.master_key_file", dir.join("acs.key").display().to_string()))
        .merge(Serialized::default("email.transport", "file"))
        .merge(Serialized::default("email.outbox_dir", dir.join("outbox").display().to_string()))
        .merge(Serialized::default("sandbox.dir", dir.join("sandboxes").display().to_string()));
    // The sandbox tests run a second time on the `container` provider (scripts/test).
    if let Some(provider) = test_provider() {
        fig = fig
            .merge(Serialized::default("sandbox.provider", &provider))
            .merge(Serialized::default("sandbox.providers", ["local".to_owned(), provider]));
    }
    for (k, v) in overrides {
        fig = fig.merge(Serialized::default(k, v));
    }
    let loaded: Loaded = acs_core::extension::config::from_figment(fig).expect("test configuration");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let running = server::start(loaded.clone(), listener).await.expect("server starts");
    TestApp {
        loaded,
        base: format!("http://{}", running.addr),
        http: reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap(),
        dir,
        db_url,
        running: Some(running),
        pg_db,
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(r) = self.running.take() {
            r.state.shutdown.cancel();
        }
        // Machines outlive servers on purpose (reattach); a test's must not.
        acs_core::provider::local::purge_blocking(
            &self.dir.join("sandboxes").join("machines"),
            std::path::Path::new(&self.loaded.config.sandbox.run_dir),
            std::path::Path::new(&self.loaded.config.sandbox.lease_dir),
        );
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Some(name) = self.pg_db.take() {
            // Drop runs inside the test's runtime, which cannot block on
            // another; a plain thread with its own runtime can.
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                rt.block_on(async {
                    if let Ok(mut admin) = sqlx::PgConnection::connect(&format!("{}/test", postgres_base())).await {
                        let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
                        let _ = sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut admin).await;
                    }
                });
            })
            .join()
            .ok();
        }
    }
}

impl TestApp {
    /// A second server on the same database and directories (a replica).
    pub async fn replica(&self) -> Running {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        server::start(self.loaded.clone(), listener).await.expect("replica starts")
    }

    /// Stops the server (machines keep running) and starts a new one on the
    /// same database and directories, as after an operator's restart.
    pub async fn restart(&mut self) {
        let addr = self.running.as_ref().expect("server running").addr;
        if let Some(r) = self.running.take() {
            r.shutdown().await.expect("clean shutdown");
        }
        // The same address: machines keep the API URL they were given.
        let mut tries = 0;
        let listener = loop {
            match tokio::net::TcpListener::bind(addr).await {
                Ok(l) => break l,
                Err(e) if tries < 100 => {
                    tries += 1;
                    let _ = e;
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                Err(e) => panic!("rebinding {addr}: {e}"),
            }
        };
        let running = server::start(self.loaded.clone(), listener).await.expect("server restarts");
        self.base = format!("http://{}", running.addr);
        self.running = Some(running);
    }

    /// [`restart`](Self::restart) with configuration overrides on top of the
    /// server's own (a later test clock, say); they stay for later restarts.
    pub async fn restart_with(&mut self, overrides: &[(&str, Value)]) {
        let mut fig = self.loaded.figment.clone();
        for (k, v) in overrides {
            fig = fig.merge(Serialized::default(k, v));
        }
        self.loaded = acs_core::extension::config::from_figment(fig).expect("test configuration");
        self.restart().await;
    }

    /// Stops the server cleanly (machines keep running), leaving the database
    /// and directories to another process: an `acs` binary the test runs.
    pub async fn stop(&mut self) {
        if let Some(r) = self.running.take() {
            r.shutdown().await.expect("clean shutdown");
        }
    }

    /// Environment variables that give an `acs` process this server's database and directories.
    pub fn config_env(&self) -> Vec<(String, String)> {
        let c = &self.loaded.config;
        [
            ("ACS_DATABASE__URL", self.db_url.clone()),
            ("ACS_SANDBOX__DIR", self.dir.join("sandboxes").display().to_string()),
            ("ACS_SANDBOX__RUN_DIR", c.sandbox.run_dir.clone()),
            ("ACS_SANDBOX__LEASE_DIR", c.sandbox.lease_dir.clone()),
            ("ACS_SECRETS__MASTER_KEY_FILE", self.dir.join("acs.key").display().to_string()),
            ("ACS_EMAIL__TRANSPORT", "file".into()),
            ("ACS_EMAIL__OUTBOX_DIR", self.dir.join("outbox").display().to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    /// Where a machine's files are on the host (its disk is mounted at `.mount()` while it runs).
    pub fn machine_layout(&self, id: Uuid) -> acs_core::provider::local::bwrap::Layout {
        acs_core::provider::local::bwrap::Layout::new(
            &self.dir.join("sandboxes").join("machines"),
            std::path::Path::new(&self.loaded.config.sandbox.run_dir),
            id,
        )
    }

    /// The agent's uid inside a machine: 1000 under bwrap; a container (no
    /// user namespace of its own) runs as the machine's host uid.
    pub fn agent_uid(&self, id: Uuid) -> u32 {
        if test_provider().as_deref() != Some("container") {
            return 1000;
        }
        let owner = std::fs::read_to_string(self.machine_layout(id).owner()).expect("the machine's owner");
        owner.trim().parse().unwrap()
    }

    /// The running server's state, for checks the API deliberately cannot make
    /// (secret values are write-only).
    pub fn state(&self) -> &acs_core::AppState {
        &self.running.as_ref().expect("server running").state
    }

    pub async fn request(&self, method: Method, path: &str, key: Option<&str>, body: Option<Value>) -> Resp {
        self.request_at(&self.base, method, path, key, body).await
    }

    /// A request to another server (a replica) at `base`.
    pub async fn request_at(
        &self,
        base: &str,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> Resp {
        let mut req = self.http.request(method, format!("{base}{path}"));
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        into_resp(req.send().await.expect("request sent")).await
    }

    pub async fn get(&self, path: &str, key: &str) -> Resp {
        self.request(Method::GET, path, Some(key), None).await
    }

    pub async fn post(&self, path: &str, key: &str, body: Value) -> Resp {
        self.request(Method::POST, path, Some(key), Some(body)).await
    }

    pub async fn delete(&self, path: &str, key: &str) -> Resp {
        self.request(Method::DELETE, path, Some(key), None).await
    }

    pub async fn public_post(&self, path: &str, body: Value) -> Resp {
        self.request(Method::POST, path, None, Some(body)).await
    }

    pub async fn register(&self, email: &str, password: &str) -> Resp {
        self.public_post("/api/auth/register", json!({"email": email, "password": password})).await
    }

    pub async fn login(&self, email: &str, password: &str) -> Resp {
        self.public_post("/api/auth/login", json!({"email": email, "password": password})).await
    }

    /// Registers a new account and signs in.
    pub async fn user(&self) -> User {
        let email = format!("u{}@example.com", &Uuid::new_v4().simple().to_string()[..12]);
        let password = "correct horse battery".to_owned();
        let r = self.register(&email, &password).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        let id = r.body["data"]["user_id"].as_str().unwrap().to_owned();
        let r = self.login(&email, &password).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        let key = r.body["data"]["api_key"].as_str().unwrap().to_owned();
        User { id, email, password, key }
    }

    /// The newest verification token mailed to `to` (file transport), waiting briefly for delivery.
    pub async fn mailed_token(&self, to: &str) -> String {
        for _ in 0..100 {
            // Outbox files are named by time-ordered UUIDs: the newest sorts last.
            let mut mails: Vec<(String, Value)> = std::fs::read_dir(self.dir.join("outbox"))
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| {
                    let v: Value = serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok()?;
                    Some((e.file_name().to_string_lossy().into_owned(), v))
                })
                .filter(|(_, v)| v["to"] == to)
                .collect();
            mails.sort_by(|a, b| a.0.cmp(&b.0));
            if let Some((_, mail)) = mails.last() {
                let body = mail["body"].as_str().unwrap();
                return body.split_whitespace().find(|w| w.starts_with("acsv_")).unwrap().to_owned();
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("no mail to {to}");
    }
}

pub async fn into_resp(res: reqwest::Response) -> Resp {
    let status = res.status();
    let headers = res.headers().clone();
    let text = res.text().await.unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    Resp { status, headers, body, text }
}

/// Asserts a spec error body with `code`.
#[track_caller]
pub fn assert_error(r: &Resp, status: StatusCode, code: &str) {
    assert_eq!(r.status, status, "{}", r.text);
    assert_eq!(r.body["error"], code, "{}", r.text);
}

/// Asserts a key-authentication refusal with `reason`.
#[track_caller]
pub fn assert_refused(r: &Resp, status: StatusCode, reason: &str) {
    assert_eq!(r.status, status, "{}", r.text);
    assert_eq!(r.body["reason"], reason, "{}", r.text);
    assert!(r.body["error"].as_str().is_some_and(|e| e.contains(' ')), "error is prose: {}", r.text);
}

/// The scripted ACP agent (tests/scripted-agent), built when this test
/// binary was built without it.
pub fn scripted_agent() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().join("../scripted-agent");
    if !path.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let ok = std::process::Command::new(cargo).args(["build", "-q", "-p", "acs-scripted-agent"]).status().unwrap();
        assert!(ok.success());
    }
    path.canonicalize().unwrap()
}

/// An `acp` agent running `command`, with further fields of `extra`.
pub async fn acp_agent(app: &TestApp, u: &User, command: &str, extra: Value) -> Uuid {
    let mut body = json!({"name": format!("a-{}", &Uuid::new_v4().simple().to_string()[..8]), "runtime": "acp",
        "command": [command]});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    let r = app.post("/api/agents", &u.key, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"]["id"].as_str().unwrap().parse().unwrap()
}

/// Creates a conversation, expecting 201; returns its object.
pub async fn create_conversation(app: &TestApp, u: &User, body: Value) -> Value {
    let r = app.post("/api/conversations", &u.key, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"].clone()
}

/// Runs `script` with bash on a machine: its exit code, stdout and stderr.
pub async fn sh(app: &TestApp, id: Uuid, script: &str) -> (Option<i32>, String, String) {
    let svc = acs_core::sandboxes::service::service(app.state()).unwrap();
    let req = sandboxd::proto::ExecRequest {
        argv: vec!["bash".into(), "-c".into(), script.into()],
        cwd: None,
        env: std::collections::BTreeMap::new(),
        stdin: None,
        timeout_ms: Some(20_000),
        max_output: None,
    };
    let out = svc.serving(id).supervisor(id).exec(&req).await.expect("exec");
    (
        out.exit.code,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A conversation's turns as stored, oldest first (read from the store, not the rate-limited API).
pub async fn turns(app: &TestApp, conv: Uuid) -> Vec<acs_core::conversations::store::TurnRow> {
    acs_core::conversations::store::turns(&app.state().db, conv).await.unwrap()
}

/// Waits until `n` turns exist, none runs, and the log holds the closing `turn` event of each of
/// them and of every turn it saw start; returns them. A turn's row moves before its closing event is
/// written, so the row alone is not enough.
pub async fn finished_turns(app: &TestApp, conv: Uuid, n: usize) -> Vec<acs_core::conversations::store::TurnRow> {
    finished_turns_within(app, conv, n, 30).await
}

/// [`finished_turns`] with a deadline of `seconds` (real runtimes start slowly on a busy machine).
pub async fn finished_turns_within(
    app: &TestApp,
    conv: Uuid,
    n: usize,
    seconds: u64,
) -> Vec<acs_core::conversations::store::TurnRow> {
    for _ in 0..seconds * 20 {
        let t = turns(app, conv).await;
        if t.len() >= n && t.iter().all(|t| t.status != "running") && turn_ends_logged(app, conv, &t).await {
            return t;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("turns did not finish: {:?}", turns(app, conv).await);
}

/// Whether every `turn` stage that started in the log has its closing event too, and every
/// settled turn row has its closing event (a row settles a moment before its events land; every
/// ended turn leaves them, even one that never reached its agent).
async fn turn_ends_logged(app: &TestApp, conv: Uuid, turns: &[acs_core::conversations::store::TurnRow]) -> bool {
    use sqlx::Row;
    let rows = sqlx::query("SELECT turn_id, state FROM events WHERE conversation_id = $1 AND stage = 'turn'")
        .bind(conv.to_string())
        .fetch_all(&app.state().db.pool)
        .await
        .unwrap();
    let (mut started, mut ended) = (Vec::new(), Vec::new());
    for r in &rows {
        let (turn, state): (Option<String>, Option<String>) = (r.get("turn_id"), r.get("state"));
        if state.as_deref() == Some("started") { started.push(turn) } else { ended.push(turn) }
    }
    started.iter().all(|t| ended.contains(t)) && turns.iter().all(|t| ended.contains(&Some(t.id.to_string())))
}

/// What the agent of a conversation said so far (its stdout events), chunks joined.
pub async fn said(app: &TestApp, conv: Uuid) -> String {
    use sqlx::Row;
    let rows = sqlx::query("SELECT data FROM events WHERE conversation_id = $1 AND stream = 'stdout' ORDER BY id")
        .bind(conv.to_string())
        .fetch_all(&app.state().db.pool)
        .await
        .unwrap();
    rows.iter().map(|r| r.get::<String, _>("data")).collect()
}

/// Where the scripted agent is bound inside machines by [`scripted_app`].
pub const SCRIPTED_AGENT: &str = "/opt/acs/bin/scripted-agent";
/// Where the scripted agents of [`scripted_runtime_agent`] record every line they receive.
pub const SCRIPTED_AGENT_LOG: &str = "/workspace/agent-in.log";

/// A server whose machines hold the scripted agent, with platform keys for every provider, then
/// `extra` settings.
pub async fn scripted_app(backend: Backend, extra: &[(&str, Value)]) -> TestApp {
    let bind = format!("{}:{SCRIPTED_AGENT}", scripted_agent().display());
    let mut overrides = vec![
        ("sandbox.ro_binds", json!([bind])),
        ("inference.platform.anthropic_api_key", json!("sk-ant-platform")),
        ("inference.platform.openai_api_key", json!("sk-openai-platform")),
        ("inference.platform.gemini_api_key", json!("gemini-platform")),
    ];
    overrides.extend(extra.iter().cloned());
    spawn_with(backend, &overrides).await
}

/// An agent of `runtime` running the scripted agent: under the profile of the same name for a named
/// runtime, recording what it receives in [`SCRIPTED_AGENT_LOG`]; with further fields of `extra`.
pub async fn scripted_runtime_agent(app: &TestApp, u: &User, runtime: &str, extra: Value) -> Uuid {
    let command = if runtime == "acp" {
        json!([SCRIPTED_AGENT])
    } else {
        json!([
            "/usr/bin/env",
            format!("SCRIPTED_AGENT_PROFILE={runtime}"),
            format!("SCRIPTED_AGENT_LOG={SCRIPTED_AGENT_LOG}"),
            SCRIPTED_AGENT
        ])
    };
    let mut body = json!({"name": format!("a-{}", &Uuid::new_v4().simple().to_string()[..8]), "runtime": runtime,
        "command": command});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    let r = app.post("/api/agents", &u.key, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"]["id"].as_str().unwrap().parse().unwrap()
}
