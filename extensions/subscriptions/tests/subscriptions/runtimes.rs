//! codex, the real runtime, on a linked subscription: its model requests
//! reach the (fake) vendor API through the broker, which puts the
//! subscription's token in; the machine holds only a placeholder key. Named
//! `runtimes` so `scripts/test` runs it with the other real-runtime tests,
//! one at a time, on SQLite only (the database does not matter to it).

use std::path::PathBuf;

use acs_testkit::fake_model::{FakeModel, REPLY};
use acs_testkit::upstream::TlsFront;
use acs_testkit::{Backend, create_conversation, finished_turns_within, sh};
use reqwest::StatusCode;
use serde_json::json;
use uuid::Uuid;

use crate::common::{attach, link, set_naming, setup_with};

const API: &str = "api.vendor.test";

/// codex installed once beside the other real-runtime tests' (`target/acs-runtimes`).
async fn runtimes_dir() -> Result<PathBuf, String> {
    tokio::task::spawn_blocking(|| {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/acs-runtimes");
        acs_core::runtimes::install(&dir, &["codex".to_owned()])?;
        Ok(dir)
    })
    .await
    .map_err(|e| e.to_string())?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_runs_on_a_subscription_through_the_broker() {
    let dir = match runtimes_dir().await {
        Ok(d) => d,
        Err(e) => {
            println!("skipped: {e}");
            return;
        }
    };
    let fake = FakeModel::start().await;
    let work = std::env::temp_dir().join(format!("acs-front-{}", Uuid::new_v4().simple()));
    let front = TlsFront::start(&[API], &work, std::net::SocketAddr::from(([127, 0, 0, 1], fake.port()))).await;
    let (vendor, app) = setup_with(
        Backend::Sqlite,
        3600,
        &[
            ("sandbox.blocked_cidrs", json!([])),
            ("sandbox.host_overrides", json!([format!("{API}=127.0.0.1")])),
            ("broker.upstream_ca_file", json!(front.ca_file.display().to_string())),
            ("runtimes.dir", json!(dir.display().to_string())),
            ("inference.base_urls.openai", json!(format!("https://{API}:{}/v1", front.port))),
        ],
    )
    .await;
    let u = app.user().await;
    let sub = link(&app, &vendor, &u, "work", "alice").await;
    let sub_id = sub["id"].as_str().unwrap().to_owned();
    let token = attach(&app, &u, &sub_id).await.expect("a token");

    let set = set_naming(&app, &u, &sub_id).await;

    let r = app
        .post(
            "/api/agents",
            &u.key,
            json!({"name": "codex-on-a-subscription", "runtime": "codex", "inference_credential_id": set}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let agent = r.body["data"]["id"].as_str().unwrap().to_owned();
    let c = create_conversation(&app, &u, json!({"agent_id": agent, "prompt": "Say hello."})).await;
    let conv: Uuid = c["id"].as_str().unwrap().parse().unwrap();
    let t = finished_turns_within(&app, conv, 1, 180).await;
    let history = app.get(&format!("/api/conversations/{conv}/history"), &u.key).await.body["data"].to_string();
    assert_eq!(t[0].status, "done", "{:?} {history}", t[0]);
    assert!(history.contains(REPLY), "{history}");
    let inference = t[0].inference.clone().unwrap_or_default();
    assert_eq!((&inference["scope"], &inference["openai_grant_id"]), (&json!("grant"), &json!(sub_id)), "{inference}");

    // The vendor API saw the subscription's token on every request; the machine never held it.
    let keys = fake.keys();
    assert!(!keys.is_empty() && keys.iter().all(|k| *k == format!("authorization: {token}")), "{keys:?}");
    let machine: Uuid = c["sandbox_id"].as_str().unwrap().parse().unwrap();
    let bare = token.trim_start_matches("Bearer ");
    let (_, env, _) =
        sh(&app, machine, "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep '^OPENAI_API_KEY=' | sort -u")
            .await;
    assert_eq!(env.trim(), format!("OPENAI_API_KEY={}", acs_core::inference::GRANT_PLACEHOLDER));
    let (_, found, _) =
        sh(&app, machine, &format!("grep -rl '{bare}' /home /workspace /tmp /etc 2>/dev/null | head -3")).await;
    assert!(found.is_empty(), "the token is on the machine: {found}");
    std::fs::remove_dir_all(&work).ok();
}
