//! The conversations HTTP surface: create rules one by one (nothing stored
//! after a refusal), label filters, the labels PATCH, the callback key's
//! reach, and what another account sees. Turns themselves are in turns.rs.

use base64::Engine;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::both;
use crate::common::{Backend, Resp, TestApp, User, assert_error, assert_refused, spawn};

both!(
    create_refuses_each_bad_field_and_stores_nothing,
    create_takes_every_bound_exactly,
    label_filters_and_the_labels_patch,
    the_callback_key_labels_only_its_own_conversation,
    another_accounts_conversation_is_not_found,
    prompts_terminate_and_ended_conversations,
);

async fn agent(app: &TestApp, u: &User, extra: Value) -> Uuid {
    crate::common::acp_agent(app, u, "true", extra).await
}

async fn create(app: &TestApp, u: &User, body: Value) -> Value {
    crate::common::create_conversation(app, u, body).await
}

async fn patch_labels(app: &TestApp, key: &str, id: &str, labels: Value) -> Resp {
    app.request(Method::PATCH, &format!("/api/conversations/{id}/labels"), Some(key), Some(json!({"labels": labels})))
        .await
}

/// Polls the store (not the rate-limited API) until the machine is ready.
async fn wait_ready(app: &TestApp, id: Uuid) {
    for _ in 0..1200 {
        let row = acs::core::sandboxes::store::get(&app.state().db, id).await.unwrap().expect("sandbox row");
        match row.status.as_str() {
            "ready" => return,
            "failed" => panic!("sandbox {id} failed: {:?}", row.error),
            _ => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
        }
    }
    panic!("sandbox {id} never became ready");
}

fn b64(len: usize) -> String {
    base64::engine::general_purpose::STANDARD.encode(vec![0x5a_u8; len])
}

const TEN_MB: usize = 10 * 1024 * 1024;

/// The messages of `errors.labels`, asserting they are the only errors.
#[track_caller]
fn label_errors(r: &Resp) -> Vec<String> {
    assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    let errors = r.body["errors"].as_object().unwrap();
    assert_eq!(errors.keys().collect::<Vec<_>>(), ["labels"], "{}", r.text);
    errors["labels"].as_array().unwrap().iter().map(|m| m.as_str().unwrap().to_owned()).collect()
}

async fn create_refuses_each_bad_field_and_stores_nothing(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let env = app.post("/api/environments", &u.key, json!({"name": "e"})).await.body["data"]["id"].clone();
    let other_env = app.post("/api/environments", &u.key, json!({"name": "f"})).await.body["data"]["id"].clone();
    let a = agent(&app, &u, json!({"allowed_environment_ids": [env]})).await;
    let png = |data: String| json!([{"data": data, "media_type": "image/png"}]);
    let many: serde_json::Map<String, Value> = (0..33).map(|i| (format!("k{i:02}"), json!("v"))).collect();

    // (body fields over {agent_id}, status, error code, field named under `errors`)
    let cases: Vec<(Value, StatusCode, &str, Option<&str>)> = vec![
        (json!({"prompt": ""}), StatusCode::UNPROCESSABLE_ENTITY, "invalid_prompt", None),
        (json!({"prompt": " \n\t "}), StatusCode::UNPROCESSABLE_ENTITY, "invalid_prompt", None),
        (json!({"images": png(b64(4))}), StatusCode::UNPROCESSABLE_ENTITY, "invalid_prompt", None),
        (json!({"prompt": "  ", "images": png(b64(4))}), StatusCode::UNPROCESSABLE_ENTITY, "invalid_prompt", None),
        (
            json!({"prompt": "see", "images": [{"data": b64(4), "media_type": "image/bmp"}]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_images",
            None,
        ),
        (
            json!({"prompt": "see", "images": png(String::new())}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_images",
            None,
        ),
        (
            json!({"prompt": "see", "images": png("%%%".into())}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_images",
            None,
        ),
        (
            json!({"prompt": "see", "images": png(b64(TEN_MB + 1))}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_images",
            None,
        ),
        (json!({"title": "t".repeat(121)}), StatusCode::UNPROCESSABLE_ENTITY, "validation_failed", Some("title")),
        (
            json!({"channel_id": "c".repeat(256)}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation_failed",
            Some("channel_id"),
        ),
        (
            json!({"prompt": "p", "client_request_id": "r".repeat(201)}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation_failed",
            Some("client_request_id"),
        ),
        (
            json!({"prompt": "p", "client_request_id": ""}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation_failed",
            Some("client_request_id"),
        ),
        (
            json!({"prompt": "p", "client_request_id": "a\u{0}b"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation_failed",
            Some("client_request_id"),
        ),
        (json!({"labels": many}), StatusCode::UNPROCESSABLE_ENTITY, "validation_failed", Some("labels")),
        (
            json!({"labels": {"k".repeat(65): "v"}}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation_failed",
            Some("labels"),
        ),
        (
            json!({"labels": {"k": "v".repeat(257)}}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation_failed",
            Some("labels"),
        ),
        (json!({"labels": {"k": "a\u{0}b"}}), StatusCode::UNPROCESSABLE_ENTITY, "validation_failed", Some("labels")),
        (json!({"session_config": {"model": "x"}}), StatusCode::UNPROCESSABLE_ENTITY, "session_config_invalid", None),
        (json!({"session_config": "high"}), StatusCode::UNPROCESSABLE_ENTITY, "session_config_invalid", None),
        (
            json!({"permission_policy": {"execute": "maybe"}}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation_failed",
            Some("permission_policy"),
        ),
        (json!({"machine_name": "-bad"}), StatusCode::UNPROCESSABLE_ENTITY, "invalid_machine_name", None),
        (json!({"model": "openai/gpt-5"}), StatusCode::UNPROCESSABLE_ENTITY, "model_invalid", None),
        (json!({"environment_id": other_env}), StatusCode::UNPROCESSABLE_ENTITY, "environment_not_allowed", None),
        (json!({"environment_id": Uuid::new_v4()}), StatusCode::NOT_FOUND, "not_found", None),
        (json!({"vault_id": Uuid::new_v4()}), StatusCode::NOT_FOUND, "not_found", None),
        (
            json!({"sandbox_mode": "forever"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation_failed",
            Some("sandbox_mode"),
        ),
    ];
    for (extra, status, code, field) in cases {
        let mut body = json!({"agent_id": a});
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let r = app.post("/api/conversations", &u.key, body).await;
        let shown = extra.to_string().chars().take(120).collect::<String>();
        assert_eq!((r.status, r.body["error"].as_str()), (status, Some(code)), "{shown}: {}", r.text);
        if let Some(field) = field {
            assert!(r.body["errors"][field].is_array(), "{shown}: {}", r.text);
        }
    }
    // Create rule 1 comes before the agent is even looked up.
    let r = app.post("/api/conversations", &u.key, json!({"agent_id": Uuid::new_v4(), "prompt": " "})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "invalid_prompt");
    let r = app.post("/api/conversations", &u.key, json!({"agent_id": Uuid::new_v4()})).await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");
    let r = app.post("/api/conversations", &u.key, json!({})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert!(r.body["errors"]["agent_id"].is_array(), "{}", r.text);
    // A label with NUL names the key under `labels`.
    let r = app.post("/api/conversations", &u.key, json!({"agent_id": a, "labels": {"team": "x\u{0}"}})).await;
    assert!(label_errors(&r)[0].contains("team"), "{}", r.text);

    // Nothing was stored and no machine reserved.
    assert_eq!(app.get("/api/conversations", &u.key).await.body["data"], json!([]));
    assert_eq!(app.get("/api/sandboxes", &u.key).await.body["data"], json!([]));
}

async fn create_takes_every_bound_exactly(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let labels: serde_json::Map<String, Value> =
        (0..31).map(|i| (format!("k{i:02}"), json!("v"))).chain([("x".repeat(64), json!("v".repeat(256)))]).collect();
    let body = json!({"agent_id": a, "title": "t".repeat(120), "channel_id": "c".repeat(255), "labels": labels,
        "prompt": "look at this", "client_request_id": "é".repeat(200),
        "images": [{"data": b64(TEN_MB), "media_type": "image/webp"}], "unknown_field": true});
    let conv = create(&app, &u, body).await;
    assert_eq!(conv["title"], "t".repeat(120));
    assert_eq!(conv["channel_id"], "c".repeat(255));
    assert_eq!(conv["labels"].as_object().unwrap().len(), 32);
    assert_eq!(conv["labels"]["x".repeat(64)], "v".repeat(256));
    assert_eq!(conv["agent_id"], a.to_string());
    assert_eq!(conv["runtime"], "acp");
    assert!(conv["sandbox_id"].is_string(), "{conv}");
    for field in ["model", "session_config", "environment_id", "vault_id", "ended_at"] {
        assert_eq!(conv[field], Value::Null, "{field}");
    }
    // client_request_id is ignored without a prompt.
    let c = create(&app, &u, json!({"agent_id": a, "client_request_id": ""})).await;
    let id = c["id"].as_str().unwrap();
    let got = app.get(&format!("/api/conversations/{id}"), &u.key).await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.body["data"]["id"], id);
    assert_eq!(got.body["data"]["labels"], json!({}));
    let turns = app.get(&format!("/api/conversations/{id}/turns"), &u.key).await;
    assert_eq!(turns.body, json!({"data": []}));
    let listed = app.get("/api/conversations", &u.key).await.body["data"].clone();
    assert_eq!(listed.as_array().unwrap().len(), 2);
    assert_eq!(listed[0]["id"], id, "newest first");
}

async fn label_filters_and_the_labels_patch(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let one = create(&app, &u, json!({"agent_id": a, "labels": {"team": "web", "env": "prod", "a": "b:c"}})).await;
    let two = create(&app, &u, json!({"agent_id": a, "labels": {"team": "web", "env": "dev"}})).await;
    let three = create(&app, &u, json!({"agent_id": a})).await;
    let ids = |r: Resp| -> Vec<String> {
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        r.body["data"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap().to_owned()).collect()
    };
    let (one_id, two_id) = (one["id"].as_str().unwrap(), two["id"].as_str().unwrap());
    assert_eq!(ids(app.get("/api/conversations", &u.key).await).len(), 3);
    assert_eq!(ids(app.get("/api/conversations?label=team:web", &u.key).await), [two_id, one_id]);
    assert_eq!(ids(app.get("/api/conversations?label=team:web&label=env:prod", &u.key).await), [one_id]);
    assert_eq!(ids(app.get("/api/conversations?label[]=team:web&label%5B%5D=env:dev", &u.key).await), [two_id]);
    assert_eq!(ids(app.get("/api/conversations?label=a:b:c", &u.key).await), [one_id]);
    assert!(ids(app.get("/api/conversations?label=a:b", &u.key).await).is_empty());
    assert!(ids(app.get("/api/conversations?label=team:web&label=env:qa", &u.key).await).is_empty());
    for bad in ["label=nocolon", "label=:v", "label[]=x", "label=team:web&label=broken"] {
        let r = app.get(&format!("/api/conversations?{bad}"), &u.key).await;
        assert_error(&r, StatusCode::BAD_REQUEST, "invalid_label_filter");
    }

    // PATCH: null removes, unnamed keys stay, a changed value replaces.
    let r = patch_labels(&app, &u.key, one_id, json!({"env": null, "team": "api", "new": "1", "absent": null})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["labels"], json!({"team": "api", "a": "b:c", "new": "1"}));
    assert_eq!(ids(app.get("/api/conversations?label=team:web", &u.key).await), [two_id]);
    let r = patch_labels(&app, &u.key, one_id, json!({})).await;
    assert_eq!(r.body["data"]["labels"], json!({"team": "api", "a": "b:c", "new": "1"}));

    // Limits count after the merge; the error names only the key sent.
    let id = three["id"].as_str().unwrap();
    let full: serde_json::Map<String, Value> = (0..32).map(|i| (format!("k{i:02}"), json!("v"))).collect();
    assert_eq!(patch_labels(&app, &u.key, id, Value::Object(full)).await.status, StatusCode::OK);
    let m = label_errors(&patch_labels(&app, &u.key, id, json!({"zz-extra": "v"})).await);
    assert_eq!(m.len(), 1);
    assert!(m[0].contains("zz-extra") && !m[0].contains("k00"), "{m:?}");
    // Replacing one and removing one to make room both count.
    let r = patch_labels(&app, &u.key, id, json!({"k00": "changed", "k01": null, "zz-extra": "v"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["labels"].as_object().unwrap().len(), 32);
    let m = label_errors(&patch_labels(&app, &u.key, id, json!({"k02": "v".repeat(257)})).await);
    assert!(m[0].contains("k02") && m[0].contains("256"), "{m:?}");
    assert_eq!(patch_labels(&app, &u.key, id, json!({"k02": "v".repeat(256)})).await.status, StatusCode::OK);
    let long = "k".repeat(65);
    let m = label_errors(&patch_labels(&app, &u.key, id, json!({long.clone(): "v", "k03": null})).await);
    assert!(m.iter().all(|m| m.contains(&long)), "{m:?}");
    let m = label_errors(&patch_labels(&app, &u.key, id, json!({"k04": "a\u{0}"})).await);
    assert!(m[0].contains("k04"), "{m:?}");
    // A refused patch changed nothing.
    let got = app.get(&format!("/api/conversations/{id}"), &u.key).await;
    assert_eq!(got.body["data"]["labels"]["k03"], "v");
    assert_eq!(got.body["data"]["labels"].as_object().unwrap().len(), 32);
    let r = patch_labels(&app, &u.key, &Uuid::new_v4().to_string(), json!({"a": "b"})).await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");

    // A channel resume merges the labels sent into the channel's conversation.
    let first = create(&app, &u, json!({"agent_id": a, "channel_id": "chat-1", "labels": {"x": "1"}})).await;
    let r = app
        .post("/api/conversations", &u.key, json!({"agent_id": a, "channel_id": "chat-1", "labels": {"y": "2"}}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["id"], first["id"]);
    assert_eq!(r.body["data"]["labels"], json!({"x": "1", "y": "2"}));
    let r = app
        .post(
            "/api/conversations",
            &u.key,
            json!({"agent_id": a, "channel_id": "chat-1", "session_config": {"effort": "high"}}),
        )
        .await;
    assert_error(&r, StatusCode::CONFLICT, "conversation_session_config_differs");
    let fresh = create(&app, &u, json!({"agent_id": a, "channel_id": "chat-1", "fresh": true})).await;
    assert_ne!(fresh["id"], first["id"]);
    let r = app.post("/api/conversations", &u.key, json!({"agent_id": a, "channel_id": "chat-1"})).await;
    assert_eq!((r.status, &r.body["data"]["id"]), (StatusCode::OK, &fresh["id"]), "the fresh one is the binding now");
}

async fn the_callback_key_labels_only_its_own_conversation(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let mine = create(&app, &u, json!({"agent_id": a})).await;
    let other = create(&app, &u, json!({"agent_id": a})).await;
    let machine: Uuid = mine["sandbox_id"].as_str().unwrap().parse().unwrap();
    assert_ne!(mine["sandbox_id"], other["sandbox_id"], "ephemeral conversations get their own machines");
    // Provisioning revokes the machine's older keys; mint ours once it is done.
    wait_ready(&app, machine).await;
    let key = acs::core::keys::create_for_sandbox(&app.state().db.pool, u.id.parse().unwrap(), machine, "machine")
        .await
        .unwrap()
        .api_key;
    let (mine_id, other_id) = (mine["id"].as_str().unwrap(), other["id"].as_str().unwrap());

    let r = patch_labels(&app, &key, mine_id, json!({"by": "agent"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["labels"], json!({"by": "agent"}));
    let r = patch_labels(&app, &key, other_id, json!({"by": "agent"})).await;
    assert_error(&r, StatusCode::FORBIDDEN, "machine_may_not_label_another_conversation");
    // Another account's conversation stays invisible: 404, not 403.
    let stranger = app.user().await;
    let sa = agent(&app, &stranger, json!({})).await;
    let theirs = create(&app, &stranger, json!({"agent_id": sa})).await;
    let r = patch_labels(&app, &key, theirs["id"].as_str().unwrap(), json!({"by": "agent"})).await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");

    // It sees its own conversation only, and may not open one.
    let listed = app.get("/api/conversations", &key).await;
    assert_eq!(listed.body["data"].as_array().unwrap().len(), 1, "{}", listed.text);
    assert_eq!(listed.body["data"][0]["id"], mine_id);
    assert_eq!(app.get(&format!("/api/conversations/{mine_id}"), &key).await.status, StatusCode::OK);
    assert_error(&app.get(&format!("/api/conversations/{other_id}"), &key).await, StatusCode::NOT_FOUND, "not_found");
    let r = app.post("/api/conversations", &key, json!({"agent_id": a})).await;
    assert_refused(&r, StatusCode::FORBIDDEN, "insufficient_scope");
    let unchanged = app.get(&format!("/api/conversations/{other_id}"), &u.key).await;
    assert_eq!(unchanged.body["data"]["labels"], json!({}));
}

async fn another_accounts_conversation_is_not_found(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let conv = create(&app, &u, json!({"agent_id": a, "labels": {"k": "v"}})).await;
    let id = conv["id"].as_str().unwrap();
    let other = app.user().await;
    for (method, path, body) in [
        (Method::GET, format!("/api/conversations/{id}"), None),
        (Method::PATCH, format!("/api/conversations/{id}/labels"), Some(json!({"labels": {"k": "w"}}))),
        (Method::POST, format!("/api/conversations/{id}/prompts"), Some(json!({"prompt": "hi"}))),
        (Method::GET, format!("/api/conversations/{id}/turns"), None),
        (Method::POST, format!("/api/conversations/{id}/wake"), None),
        (Method::POST, format!("/api/conversations/{id}/interrupt"), None),
        (Method::POST, format!("/api/conversations/{id}/terminate"), None),
        (Method::GET, "/api/conversations/not-a-uuid".to_owned(), None),
    ] {
        let r = app.request(method.clone(), &path, Some(&other.key), body).await;
        assert_error(&r, StatusCode::NOT_FOUND, "not_found");
    }
    assert_eq!(app.get("/api/conversations", &other.key).await.body["data"], json!([]));
    // Nothing the stranger sent reached it.
    let got = app.get(&format!("/api/conversations/{id}"), &u.key).await.body["data"].clone();
    assert_eq!(got["labels"], json!({"k": "v"}));
    assert_ne!(got["status"], "terminated");
    // The other account's agent is not found either.
    let r = app.post("/api/conversations", &other.key, json!({"agent_id": a})).await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");
}

async fn prompts_terminate_and_ended_conversations(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let conv = create(&app, &u, json!({"agent_id": a})).await;
    let id = conv["id"].as_str().unwrap();
    let prompts = format!("/api/conversations/{id}/prompts");
    for (body, code, field) in [
        (json!({"prompt": "  "}), "invalid_prompt", None),
        (json!({}), "invalid_prompt", None),
        (json!({"prompt": "p", "client_request_id": "r".repeat(201)}), "validation_failed", Some("client_request_id")),
        (json!({"prompt": "p", "client_request_id": ""}), "validation_failed", Some("client_request_id")),
        (json!({"prompt": "p", "client_request_id": "a\u{0}"}), "validation_failed", Some("client_request_id")),
        (json!({"prompt": "p", "session_config": {"bad key": true}}), "session_config_invalid", None),
    ] {
        let r = app.post(&prompts, &u.key, body).await;
        assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, code);
        if let Some(field) = field {
            assert!(r.body["errors"][field].is_array(), "{}", r.text);
        }
    }
    let r = app.post(&format!("/api/conversations/{id}/interrupt"), &u.key, json!({})).await;
    assert_eq!((r.status, &r.body), (StatusCode::OK, &json!({"data": {"interrupted": false}})), "{}", r.text);

    // The answer precedes the turn: it carries the value sent, character for character, and no turn id.
    let r = app.post(&prompts, &u.key, json!({"prompt": "hello", "client_request_id": " Ré-1 "})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert!(["accepted", "queued"].contains(&r.body["data"]["status"].as_str().unwrap()), "{}", r.text);
    assert_eq!(r.body["data"]["conversation_id"], id);
    assert_eq!(r.body["data"]["client_request_id"], " Ré-1 ");
    assert_eq!(r.body["data"].as_object().unwrap().len(), 3, "{}", r.text);

    let r = app.post(&format!("/api/conversations/{id}/terminate"), &u.key, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["status"], "terminated");
    assert!(r.body["data"]["ended_at"].is_string(), "{}", r.text);
    let again = app.post(&format!("/api/conversations/{id}/terminate"), &u.key, json!({})).await;
    assert_eq!(again.status, StatusCode::OK);
    for field in ["id", "status", "ended_at"] {
        assert_eq!(again.body["data"][field], r.body["data"][field], "terminating again changes nothing");
    }

    let r = app.post(&prompts, &u.key, json!({"prompt": "hello"})).await;
    assert_error(&r, StatusCode::GONE, "conversation_ended");
    let r = app.post(&format!("/api/conversations/{id}/wake"), &u.key, json!({})).await;
    assert_error(&r, StatusCode::GONE, "conversation_ended");
    let r = app.post(&format!("/api/conversations/{id}/interrupt"), &u.key, json!({})).await;
    assert_eq!(r.body, json!({"data": {"interrupted": false}}));
    // An ended conversation is no channel binding.
    let first = create(&app, &u, json!({"agent_id": a, "channel_id": "room"})).await;
    app.post(&format!("/api/conversations/{}/terminate", first["id"].as_str().unwrap()), &u.key, json!({})).await;
    let next = create(&app, &u, json!({"agent_id": a, "channel_id": "room"})).await;
    assert_ne!(next["id"], first["id"]);
}
