//! The fake vendor on loopback, a server pointed at it, and the steps a
//! person takes (starting a sign-in, approving it at the vendor).

use std::process::Stdio;
use std::time::Duration;

use acs_core::features;
pub use acs_testkit::{Backend, Resp, TestApp, User, assert_error, spawn_with};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub const CLIENT_ID: &str = "acs-test-client";
pub const BASE: &str = "/api/account/openai-subscriptions";

/// panva's oidc-provider with the device flow, one process per test.
pub struct Vendor {
    pub issuer: String,
    _child: Child,
}

impl Vendor {
    pub async fn start(access_token_ttl: u64) -> Vendor {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/provider");
        assert!(
            dir.join("node_modules/oidc-provider").exists(),
            "the test vendor is not installed: run `npm ci --prefix {}`",
            dir.display()
        );
        let config = json!({"client_id": CLIENT_ID, "access_token_ttl": access_token_ttl});
        let mut child = Command::new("node")
            .arg("provider.mjs")
            .current_dir(&dir)
            .env("PROVIDER_CONFIG", config.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the vendor starts within 30 s")
            .unwrap()
            .expect("the vendor prints its issuer");
        let issuer = serde_json::from_str::<Value>(&first).unwrap()["issuer"].as_str().unwrap().to_owned();
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Vendor { issuer, _child: child }
    }

    /// A client made per call: the server installs the TLS provider reqwest needs, and it starts after the vendor.
    fn http(&self) -> reqwest::Client {
        reqwest::Client::new()
    }

    async fn call(&self, path: &str, body: Value) -> Value {
        let r = self.http().post(format!("{}{path}", self.issuer)).json(&body).send().await.unwrap();
        assert!(r.status().is_success(), "{path}: {}", r.status());
        r.json().await.unwrap()
    }

    /// A person at the verification page approves (or aborts) signing in as `login`.
    pub async fn approve(&self, user_code: &str, login: &str) {
        let page = self.call("/test/approve", json!({"user_code": user_code, "login": login})).await;
        assert!(page["page"].as_str().unwrap().contains("Sign-in Success"), "{page}");
    }

    pub async fn deny(&self, user_code: &str) {
        self.call("/test/approve", json!({"user_code": user_code, "login": "x", "deny": true})).await;
    }

    pub async fn outage(&self, on: bool) {
        self.call("/test/outage", json!({"on": on})).await;
    }

    pub async fn slow_down(&self, count: u64) {
        self.call("/test/slow-down", json!({"count": count})).await;
    }

    pub async fn set_usage(&self, body: Value) {
        self.call("/test/usage", body).await;
    }

    pub async fn revoke_grants(&self) {
        self.call("/test/revoke-grants", json!({})).await;
    }

    pub async fn stats(&self) -> Value {
        self.http().get(format!("{}/test/stats", self.issuer)).send().await.unwrap().json().await.unwrap()
    }

    /// The server's configuration pointing at this vendor.
    pub fn config(&self) -> Vec<(&'static str, Value)> {
        vec![
            ("features.openai_subscriptions", json!(true)),
            ("features.brokerage", json!(true)),
            ("subscriptions.openai.device_url", json!(format!("{}/device/auth", self.issuer))),
            ("subscriptions.openai.token_url", json!(format!("{}/token", self.issuer))),
            ("subscriptions.openai.usage_url", json!(format!("{}/usage", self.issuer))),
            ("subscriptions.openai.client_id", json!(CLIENT_ID)),
            ("subscriptions.openai.scope", json!("openid email offline_access")),
            ("subscriptions.openai.api_hosts", json!(["api.vendor.test", "*.vendor.test"])),
            ("subscriptions.openai.poll_interval", json!(1)),
        ]
    }
}

/// A vendor and a server pointed at it, with `extra` configuration.
pub async fn setup_with(b: Backend, access_token_ttl: u64, extra: &[(&str, Value)]) -> (Vendor, TestApp) {
    let vendor = Vendor::start(access_token_ttl).await;
    let mut config = vendor.config();
    config.extend(extra.iter().cloned());
    let app = spawn_with(b, &config).await;
    (vendor, app)
}

pub async fn setup(b: Backend) -> (Vendor, TestApp) {
    setup_with(b, 3600, &[]).await
}

/// Turns a runtime flag on or off while the server runs (as an operator would).
pub async fn set_flag(app: &TestApp, name: &str, on: bool) {
    let state = app.state();
    let by = features::Changer { actor: "cli".into(), ip: None };
    features::store(&state.db, name, Some(on), &by).await.unwrap();
    features::refresh(state).await.unwrap();
}

pub async fn patch(app: &TestApp, path: &str, key: &str, body: Value) -> Resp {
    app.request(reqwest::Method::PATCH, path, Some(key), Some(body)).await
}

/// Starts a sign-in; asserts it was created and returns the attempt.
pub async fn start(app: &TestApp, u: &User, body: Value) -> Value {
    let r = app.post(&format!("{BASE}/attempts"), &u.key, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"].clone()
}

pub async fn read_attempt(app: &TestApp, u: &User, id: &str) -> Value {
    let r = app.get(&format!("{BASE}/attempts/{id}"), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body["data"].clone()
}

/// Reads the attempt until `done` holds (the poller runs every second).
pub async fn wait_attempt(app: &TestApp, u: &User, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..150 {
        let a = read_attempt(app, u, id).await;
        if done(&a) {
            return a;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("attempt {id} never got there: {}", read_attempt(app, u, id).await);
}

pub async fn wait_state(app: &TestApp, u: &User, id: &str, state: &str) -> Value {
    wait_attempt(app, u, id, |a| a["state"] == state).await
}

/// Links a new subscription named `name` as vendor account `login`; returns it.
pub async fn link(app: &TestApp, vendor: &Vendor, u: &User, name: &str, login: &str) -> Value {
    let a = start(app, u, json!({"name": name})).await;
    vendor.approve(a["user_code"].as_str().unwrap(), login).await;
    let done = wait_state(app, u, a["id"].as_str().unwrap(), "completed").await;
    let id = done["result_grant_id"].as_str().expect("a subscription").to_owned();
    subscription(app, u, &id).await
}

/// A new credential set naming subscription `sub_id` (core's part); returns its id.
pub async fn set_naming(app: &TestApp, u: &User, sub_id: &str) -> String {
    let r = app.post("/api/account/inference-credential-sets", &u.key, json!({"name": "subscription"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let set = r.body["data"]["id"].as_str().unwrap().to_owned();
    let path = format!("/api/account/inference-credential-sets/{set}");
    let r = patch(app, &path, &u.key, json!({"openai_grant_id": sub_id})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["openai_grant"]["status"], "active", "{}", r.text);
    set
}

pub async fn list(app: &TestApp, u: &User) -> Value {
    let r = app.get(BASE, &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body
}

pub async fn subscription(app: &TestApp, u: &User, id: &str) -> Value {
    let l = list(app, u).await;
    l["data"].as_array().unwrap().iter().find(|s| s["id"] == id).cloned().expect("the subscription is listed")
}

pub fn grants(app: &TestApp) -> std::sync::Arc<dyn acs_core::extension::GrantSource> {
    let state = app.state();
    state.extensions.grant_sources.iter().find(|s| s.vendor() == "openai").expect("the openai grant source").clone()
}

pub async fn usable(app: &TestApp, u: &User, id: &str) -> acs_core::extension::GrantUse {
    grants(app).usable(app.state(), u.id.parse().unwrap(), id.parse().unwrap()).await.unwrap()
}

pub async fn attach(app: &TestApp, u: &User, id: &str) -> Option<String> {
    let a = grants(app).attach(app.state(), u.id.parse().unwrap(), id.parse().unwrap()).await.unwrap();
    assert_eq!(a.header, "authorization");
    assert_eq!(a.key, "openai_subscription");
    a.value
}

/// Runs SQL on the server's database (what core's part will do through its API).
pub async fn exec(app: &TestApp, sql: &str, binds: &[&str]) {
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()));
    for b in binds {
        q = q.bind(b.to_string());
    }
    q.execute(&app.state().db.pool).await.unwrap();
}
