//! A codex turn on a subscription while the subscription is reconnected: the
//! turn's requests go on with the old token until the new one is stored, and
//! its next request carries the new one (the broker reads the token per request).

use acs_testkit::upstream::HttpsUpstream;
use acs_testkit::{
    Backend, SCRIPTED_AGENT, create_conversation, finished_turns_within, scripted_agent, scripted_runtime_agent,
};
use serde_json::json;
use uuid::Uuid;

use crate::common::{attach, link, set_naming, setup_with, start, wait_state};

crate::both!(a_reconnect_during_a_running_codex_turn);

const API: &str = "api.vendor.test";

async fn a_reconnect_during_a_running_codex_turn(b: Backend) {
    let dir = std::env::temp_dir().join(format!("acs-upstream-{}", Uuid::new_v4().simple()));
    let upstream = HttpsUpstream::start(&[API], &dir).await;
    let (vendor, app) = setup_with(
        b,
        3600,
        &[
            ("sandbox.ro_binds", json!([format!("{}:{SCRIPTED_AGENT}", scripted_agent().display())])),
            ("sandbox.blocked_cidrs", json!([])),
            ("sandbox.host_overrides", json!([format!("{API}=127.0.0.1")])),
            ("broker.upstream_ca_file", json!(upstream.ca_file.display().to_string())),
        ],
    )
    .await;
    let u = app.user().await;
    let sub = link(&app, &vendor, &u, "work", "alice").await;
    let sub_id = sub["id"].as_str().unwrap().to_owned();
    let before = attach(&app, &u, &sub_id).await.expect("a token");
    let set = set_naming(&app, &u, &sub_id).await;
    let agent = scripted_runtime_agent(&app, &u, "codex", json!({"inference_credential_id": set})).await;
    let port = upstream.port;
    let prompt =
        format!("run: curl -sS https://{API}:{port}/echo\nrun: sleep 4\nrun: curl -sS https://{API}:{port}/echo");
    let c = create_conversation(&app, &u, json!({"agent_id": agent, "prompt": prompt})).await;
    let conv: Uuid = c["id"].as_str().unwrap().parse().unwrap();
    upstream.wait_for(60, |s| !s.is_empty()).await;

    // Reconnected while the turn sleeps between its two requests.
    let attempt = start(&app, &u, json!({"grant_id": sub_id})).await;
    vendor.approve(attempt["user_code"].as_str().unwrap(), "alice").await;
    wait_state(&app, &u, attempt["id"].as_str().unwrap(), "completed").await;
    let after = attach(&app, &u, &sub_id).await.expect("the new token");
    assert_ne!(before, after, "the reconnect stored a new token");

    let t = finished_turns_within(&app, conv, 1, 60).await;
    assert_eq!(t[0].status, "done", "{t:?}");
    let seen: Vec<_> = upstream.seen().into_iter().map(|s| s.authorization.unwrap_or_default()).collect();
    assert_eq!(seen, [before, after], "the old token until the new one was stored, then the new one");
    std::fs::remove_dir_all(&dir).ok();
}
