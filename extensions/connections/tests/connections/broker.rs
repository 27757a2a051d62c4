//! A connection as a secret binding's source, end to end: a brokered turn's
//! requests to the provider's hosts carry the connection's access token;
//! other hosts never get it; a deleted connection attaches nothing.

use acs_testkit::upstream::HttpsUpstream;
use acs_testkit::{
    SCRIPTED_AGENT, create_conversation, finished_turns_within, said, scripted_agent, scripted_runtime_agent,
};
use reqwest::StatusCode;
use serde_json::json;
use uuid::Uuid;

use crate::common::{Backend, connected, source_value};

crate::both!(a_connection_token_goes_only_to_its_hosts);

const API: &str = "api.idp.test";
const ELSEWHERE: &str = "api.elsewhere.test";

async fn a_connection_token_goes_only_to_its_hosts(b: Backend) {
    let dir = std::env::temp_dir().join(format!("acs-upstream-{}", Uuid::new_v4().simple()));
    let upstream = HttpsUpstream::start(&[API, ELSEWHERE], &dir).await;
    let c = connected(
        b,
        3600,
        &[
            ("features.brokerage", json!(true)),
            ("sandbox.ro_binds", json!([format!("{}:{SCRIPTED_AGENT}", scripted_agent().display())])),
            ("sandbox.blocked_cidrs", json!([])),
            ("sandbox.host_overrides", json!([format!("{API}=127.0.0.1"), format!("{ELSEWHERE}=127.0.0.1")])),
            ("broker.upstream_ca_file", json!(upstream.ca_file.display().to_string())),
        ],
    )
    .await;
    let (app, u) = (&c.app, &c.user);
    for (name, host) in [("idp", API), ("elsewhere", ELSEWHERE)] {
        let body = json!({"name": name, "host": host, "header": "authorization", "template": "Bearer {value}",
            "source": {"connection_id": c.connection_id}});
        let r = app.post("/api/secret-bindings", &u.key, body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    }
    let stranger = app.user().await;
    let body = json!({"name": "steal", "host": API, "header": "authorization", "template": "Bearer {value}",
        "source": {"connection_id": c.connection_id}});
    let r = app.post("/api/secret-bindings", &stranger.key, body).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "another account's connection: {}", r.text);

    let token = source_value(app, &u.id, &c.connection_id).await.expect("a live token").value;
    let a = scripted_runtime_agent(app, u, "acp", json!({})).await;
    let port = upstream.port;
    let prompt = format!(
        "run: curl -sS https://{API}:{port}/echo\n\
         run: curl -s -o /dev/null -w 'elsewhere %{{http_code}}' https://{ELSEWHERE}:{port}/echo"
    );
    let conv = create_conversation(app, u, json!({"agent_id": a, "prompt": prompt})).await;
    let conv_id: Uuid = conv["id"].as_str().unwrap().parse().unwrap();
    finished_turns_within(app, conv_id, 1, 120).await;
    let text = said(app, conv_id).await;
    assert!(text.contains("hello from upstream[exit 0]") && text.contains("elsewhere 502"), "{text}");
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1, "the provider's host only: {seen:?}");
    assert_eq!(seen[0].authorization.as_deref(), Some(format!("Bearer {token}").as_str()));

    let sandbox = conv["sandbox_id"].as_str().unwrap();
    let r = app.get(&format!("/api/sandboxes/{sandbox}/egress"), &u.key).await;
    let records = r.body["data"].as_array().unwrap();
    let elsewhere = records.iter().find(|e| e["service"] == "elsewhere").expect("its record");
    assert_eq!((&elsewhere["status"], &elsewhere["error"]), (&json!(502), &json!("credential_missing")));
    let idp = records.iter().find(|e| e["service"] == "idp").expect("its record");
    assert_eq!(idp["credential_keys"], json!(["idp"]), "the provider's slug names the key");
    assert!(!r.text.contains(&token));

    // A deleted connection attaches nothing: the request is refused, the token goes nowhere.
    let r = app.delete(&format!("/api/connections/{}", c.connection_id), &u.key).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    let r = app
        .post(
            &format!("/api/conversations/{conv_id}/prompts"),
            &u.key,
            json!({"prompt": format!("run: curl -s -o /dev/null -w 'after %{{http_code}}' https://{API}:{port}/echo")}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    finished_turns_within(app, conv_id, 2, 60).await;
    assert!(said(app, conv_id).await.contains("after 502"));
    assert_eq!(upstream.seen().len(), 1);
    std::fs::remove_dir_all(&dir).ok();
}
