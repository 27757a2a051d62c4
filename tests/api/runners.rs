//! Runners (DESIGN 9.8): their records and tokens, agents that choose one,
//! and a real `acs runner` process serving a turn, killed mid-turn (the
//! `connection` stage), restarted, and left dead.

use std::process::Stdio;
use std::time::{Duration, Instant};

use acs_testkit::{
    Backend, SCRIPTED_AGENT, TestApp, User, assert_error, assert_refused, create_conversation, finished_turns_within,
    scripted_agent, scripted_app, spawn,
};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::Row;
use uuid::Uuid;

async fn create_runner(app: &TestApp, u: &User, name: &str) -> (Uuid, String) {
    let r = app.post("/api/runners", &u.key, json!({"name": name})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let id = r.body["data"]["runner"]["id"].as_str().unwrap().parse().unwrap();
    (id, r.body["data"]["token"].as_str().unwrap().to_owned())
}

async fn runners_are_created_listed_and_deleted(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let r = app.post("/api/runners", &u.key, json!({"name": "laptop"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let runner = &r.body["data"]["runner"];
    let token = r.body["data"]["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("acs_runner_") && token.len() == 11 + 48, "{token}");
    assert_eq!(runner["name"], "laptop");
    assert_eq!(runner["online"], false);
    assert!(runner["hostname"].is_null() && runner["connected_at"].is_null());
    let id = runner["id"].as_str().unwrap().to_owned();

    // The token is shown once: never again, in any answer.
    let list = app.get("/api/runners", &u.key).await;
    assert_eq!(list.body["data"].as_array().unwrap().len(), 1);
    let one = app.get(&format!("/api/runners/{id}"), &u.key).await;
    assert_eq!(one.body["data"]["id"], id.as_str());
    assert!(!list.text.contains(&token) && !one.text.contains(&token));

    // Names: 1 to 64 of letters, digits, `-`, `_`; unique in the account.
    for bad in ["", " ", "-lead", "two words", "../up", &"n".repeat(65)] {
        assert_error(
            &app.post("/api/runners", &u.key, json!({"name": bad})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation_failed",
        );
    }
    let r = app.post("/api/runners", &u.key, json!({"name": "n".repeat(64)})).await;
    assert_eq!(r.status, StatusCode::CREATED, "64 characters is the limit: {}", r.text);
    let taken = app.post("/api/runners", &u.key, json!({"name": "laptop"})).await;
    assert_error(&taken, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert!(taken.text.contains("already been taken"), "{}", taken.text);
    assert_error(
        &app.post("/api/runners", &u.key, json!({"name": "x", "token": "mine"})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation_failed",
    );

    // A restricted key may look, not create or delete; another account sees nothing.
    let narrow = app.post("/api/keys", &u.key, json!({"name": "narrow", "scope": "restricted"})).await;
    let narrow = narrow.body["data"]["api_key"].as_str().unwrap().to_owned();
    assert_eq!(app.get("/api/runners", &narrow).await.status, StatusCode::OK);
    assert_refused(
        &app.post("/api/runners", &narrow, json!({"name": "x"})).await,
        StatusCode::FORBIDDEN,
        "insufficient_scope",
    );
    assert_refused(
        &app.delete(&format!("/api/runners/{id}"), &narrow).await,
        StatusCode::FORBIDDEN,
        "insufficient_scope",
    );
    let other = app.user().await;
    assert_eq!(app.get(&format!("/api/runners/{id}"), &other.key).await.status, StatusCode::NOT_FOUND);
    assert_eq!(app.delete(&format!("/api/runners/{id}"), &other.key).await.status, StatusCode::NOT_FOUND);
    assert!(app.get("/api/runners", &other.key).await.body["data"].as_array().unwrap().is_empty());

    // The socket takes the runner's token, not an API key, and only as a WebSocket.
    let connect = format!("{}/api/runners/connect", app.base);
    let r = app.http.get(&connect).bearer_auth(&u.key).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = app.http.get(&connect).bearer_auth("acs_runner_0000").send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = app.http.get(&connect).bearer_auth(&token).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST, "a plain GET is not a WebSocket");

    let r = app.delete(&format!("/api/runners/{id}"), &u.key).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    assert_eq!(app.get(&format!("/api/runners/{id}"), &u.key).await.status, StatusCode::NOT_FOUND);
    let r = app.http.get(&connect).bearer_auth(&token).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "a deleted runner's token is dead");
    let audit = app.get("/api/audit", &u.key).await;
    for action in ["runner.created", "runner.deleted"] {
        assert!(audit.text.contains(action), "{action}: {}", audit.text);
    }
}

async fn agents_choose_a_runner_of_their_own_account(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let (runner, _) = create_runner(&app, &u, "desk").await;
    let agent = |extra: Value| {
        let mut body = json!({"name": format!("a-{}", &Uuid::new_v4().simple().to_string()[..8]), "runtime": "acp", "command": ["x"]});
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        body
    };
    for (extra, field) in [
        (json!({"provider": "runner"}), "runner_id"),
        (json!({"provider": "local", "runner_id": runner}), "runner_id"),
        (json!({"runner_id": runner}), "runner_id"),
        (json!({"provider": "kubernetes"}), "provider"),
    ] {
        let r = app.post("/api/agents", &u.key, agent(extra.clone())).await;
        assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
        assert!(r.body["fields"].to_string().contains(field) || r.text.contains(field), "{extra}: {}", r.text);
    }
    let other = app.user().await;
    let (foreign, _) = create_runner(&app, &other, "theirs").await;
    let r = app.post("/api/agents", &u.key, agent(json!({"provider": "runner", "runner_id": foreign}))).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "another account's runner: {}", r.text);

    let r = app.post("/api/agents", &u.key, agent(json!({"provider": "runner", "runner_id": runner}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.body["data"]["provider"], "runner");
    assert_eq!(r.body["data"]["runner_id"], runner.to_string());
    let agent_id = r.body["data"]["id"].as_str().unwrap().to_owned();

    // Spec 4.1 create rule 5: a runner's machines take no chosen name.
    let r = app
        .post("/api/conversations", &u.key, json!({"agent_id": agent_id, "prompt": "hi", "machine_name": "mine"}))
        .await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "machine_name_not_supported");

    // A PATCH back to the default provider clears the runner.
    let body = json!({"provider": null, "runner_id": null});
    let r = app.request(reqwest::Method::PATCH, &format!("/api/agents/{agent_id}"), Some(&u.key), Some(body)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert!(r.body["data"]["provider"].is_null() && r.body["data"]["runner_id"].is_null());
}

/// A running `acs runner` for `app`, its machines under `root`.
struct RunnerProcess {
    child: tokio::process::Child,
}

impl RunnerProcess {
    async fn start(app: &TestApp, token: &str, root: &std::path::Path) -> RunnerProcess {
        let config = root.with_extension("toml");
        let bind = format!("{}:{SCRIPTED_AGENT}", scripted_agent().display());
        std::fs::write(&config, format!("[sandbox]\nro_binds = [{bind:?}]\n")).unwrap();
        let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_acs"));
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("ACS_")) {
            c.env_remove(k);
        }
        for (k, v) in app.config_env().into_iter().filter(|(k, _)| k.starts_with("ACS_SANDBOX__")) {
            c.env(k, v);
        }
        c.arg("--config").arg(&config);
        c.args(["runner", "--url", &app.base, "--token", token, "--root"]).arg(root);
        c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::inherit()).kill_on_drop(true);
        RunnerProcess { child: c.spawn().expect("acs runner starts") }
    }

    async fn kill(mut self) {
        self.child.kill().await.unwrap();
    }
}

async fn wait_online(app: &TestApp, u: &User, runner: Uuid, want: bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = app.get(&format!("/api/runners/{runner}"), &u.key).await;
        if r.body["data"]["online"] == want {
            return;
        }
        assert!(Instant::now() < deadline, "runner online != {want}: {}", r.text);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `(state, data)` of the conversation's stage events named `stage`, oldest first.
async fn stages(app: &TestApp, conv: &str, stage: &str) -> Vec<(String, Value)> {
    let rows = sqlx::query("SELECT state, data FROM events WHERE conversation_id = $1 AND stage = $2 ORDER BY id")
        .bind(conv.to_owned())
        .bind(stage.to_owned())
        .fetch_all(&app.state().db.pool)
        .await
        .unwrap();
    rows.iter()
        .map(|r| (r.get("state"), serde_json::from_str(&r.get::<String, _>("data")).unwrap_or(Value::Null)))
        .collect()
}

async fn wait_stage(app: &TestApp, conv: &str, stage: &str, state: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some((_, data)) = stages(app, conv, stage).await.into_iter().rev().find(|(s, _)| s == state) {
            return data;
        }
        assert!(Instant::now() < deadline, "no {stage} {state}: {:?}", stages(app, conv, stage).await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The text the agent said in a conversation, in order.
async fn output(app: &TestApp, conv: &str) -> String {
    let rows = sqlx::query("SELECT data FROM events WHERE conversation_id = $1 AND stream = 'stdout' ORDER BY id")
        .bind(conv.to_owned())
        .fetch_all(&app.state().db.pool)
        .await
        .unwrap();
    rows.iter().map(|r| r.get::<String, _>("data")).collect()
}

async fn a_runner_serves_turns_and_survives_being_killed(b: Backend) {
    let app = scripted_app(b, &[("sandbox.runner_reconnect_seconds", json!(6))]).await;
    let u = app.user().await;
    let (runner, token) = create_runner(&app, &u, "laptop").await;
    let root = app.dir.join("runner");
    let process = RunnerProcess::start(&app, &token, &root).await;
    wait_online(&app, &u, runner, true).await;
    let r = app.get(&format!("/api/runners/{runner}"), &u.key).await;
    assert_eq!(r.body["data"]["root"], root.display().to_string());
    assert!(r.body["data"]["connected_at"].is_string());

    let agent = json!({"name": "on-runner", "runtime": "acp", "command": [SCRIPTED_AGENT], "provider": "runner", "runner_id": runner});
    let r = app.post("/api/agents", &u.key, agent).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let agent_id = r.body["data"]["id"].as_str().unwrap().to_owned();

    // A turn on the runner, as on the server's own machines.
    let conv = create_conversation(
        &app,
        &u,
        json!({"agent_id": agent_id, "prompt": "say: hello from the runner\nwrite: /workspace/mark.txt here"}),
    )
    .await;
    let conv_id = conv["id"].as_str().unwrap().to_owned();
    let turns = finished_turns_within(&app, conv_id.parse().unwrap(), 1, 60).await;
    assert_eq!(turns[0].status, "done", "{:?}", turns[0]);
    assert!(output(&app, &conv_id).await.contains("hello from the runner"));
    let sandboxes = app.get("/api/sandboxes", &u.key).await;
    let sandbox = &sandboxes.body["data"][0];
    assert_eq!(sandbox["provider"], "runner", "{}", sandboxes.text);
    assert_eq!(sandbox["runner"]["online"], true);
    assert_eq!(sandbox["runner"]["id"], runner.to_string());
    assert_eq!(sandbox["runner"]["name"], "laptop");
    let path = format!("{}/{}", root.display(), sandbox["machine_name"].as_str().unwrap());
    assert_eq!(sandbox["runner"]["path"], path.as_str());
    // `<root>/<machine_name>` is the machine's disk, written by the agent's own unprivileged uid.
    use std::os::unix::fs::MetadataExt;
    let mark = std::path::Path::new(&path).join("workspace/mark.txt");
    assert_eq!(std::fs::read_to_string(&mark).unwrap().trim(), "here");
    assert_ne!(std::fs::metadata(&mark).unwrap().uid(), 0, "the agent is not root on the runner's host");
    let sandbox_id = sandbox["id"].as_str().unwrap().to_owned();
    // Reads go through the runner too.
    let r = app.get(&format!("/api/sandboxes/{sandbox_id}/files?path=/workspace/mark.txt"), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["content"].as_str().unwrap().trim(), "here");

    // Killed mid-turn: the turn waits (`connection` started), then goes on when the runner is back.
    let r = app
        .post(
            &format!("/api/conversations/{conv_id}/prompts"),
            &u.key,
            json!({"prompt": "say: before\nsleep: 2500\nsay: after"}),
        )
        .await;
    assert!(r.status.is_success(), "{}", r.text);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !output(&app, &conv_id).await.contains("before") {
        assert!(Instant::now() < deadline, "no output before the kill");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    process.kill().await;
    let started = wait_stage(&app, &conv_id, "connection", "started").await;
    assert_eq!(started["runner_id"], runner.to_string());
    wait_online(&app, &u, runner, false).await;
    let r = app.get(&format!("/api/sandboxes/{sandbox_id}"), &u.key).await;
    assert_eq!(r.body["data"]["runner"]["online"], false);
    let process = RunnerProcess::start(&app, &token, &root).await;
    let done = wait_stage(&app, &conv_id, "connection", "done").await;
    assert_eq!(done["outcome"], "recovered", "{done}");
    let turns = finished_turns_within(&app, conv_id.parse().unwrap(), 2, 60).await;
    assert_eq!(turns[1].status, "done", "{:?}", turns[1]);
    assert!(output(&app, &conv_id).await.contains("after"), "the agent's output after the reconnect was read");

    // Killed and not back within `sandbox.runner_reconnect_seconds`: the turn ends interrupted.
    let r = app
        .post(&format!("/api/conversations/{conv_id}/prompts"), &u.key, json!({"prompt": "say: third\nsleep: 30000"}))
        .await;
    assert!(r.status.is_success(), "{}", r.text);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !output(&app, &conv_id).await.contains("third") {
        assert!(Instant::now() < deadline, "no output of the third turn");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    process.kill().await;
    let turns = finished_turns_within(&app, conv_id.parse().unwrap(), 3, 60).await;
    assert_eq!(turns[2].status, "interrupted", "{:?}", turns[2]);
    let connections = stages(&app, &conv_id, "connection").await;
    let last = &connections.last().unwrap().1;
    assert_eq!(last["outcome"], "interrupted", "{connections:?}");
    assert!(last["error"].as_str().unwrap().contains("did not reconnect within 6 s"), "{last}");

    // A runner that stands under a live sandbox is not deleted.
    assert_error(&app.delete(&format!("/api/runners/{runner}"), &u.key).await, StatusCode::CONFLICT, "runner_in_use");
    acs::core::provider::local::purge_blocking(
        &root.join(".acs").join("machines"),
        std::path::Path::new(&app.config_env().iter().find(|(k, _)| k == "ACS_SANDBOX__RUN_DIR").unwrap().1),
        std::path::Path::new(&app.config_env().iter().find(|(k, _)| k == "ACS_SANDBOX__LEASE_DIR").unwrap().1),
    );
}

acs_testkit::both!(
    runners_are_created_listed_and_deleted,
    agents_choose_a_runner_of_their_own_account,
    a_runner_serves_turns_and_survives_being_killed,
);
