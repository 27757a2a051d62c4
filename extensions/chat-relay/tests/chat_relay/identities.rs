//! The identity API: provisioning, its field rules, re-provisioning, changes,
//! deletion, and the flag.

use acs_testkit::{Backend, TestApp, acp_agent, assert_error, spawn_with};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::common::{identity_keys, provision, provisioned};

const PATH: &str = "/api/chat-relay/identities";

async fn app(b: Backend) -> TestApp {
    spawn_with(b, &[("features.chat_relay", json!(true))]).await
}

/// Every body of a response, for "the private key is never in one".
fn assert_no_secret(texts: &[&str], secrets: &[&str]) {
    for t in texts {
        for s in secrets {
            assert!(!t.contains(s), "a response holds the private key: {t}");
        }
    }
}

fn field_error(r: &acs_testkit::Resp, field: &str) {
    assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert!(r.body["errors"][field].is_array(), "{field} named: {}", r.text);
}

async fn provisioning_follows_the_field_rules(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let agent = acp_agent(&app, &u, "/bin/true", json!({})).await;
    let id = identity_keys();
    let owner = identity_keys().pubkey;
    let good = provision(&id, "wss://relay.example", &owner, agent);
    let with = |key: &str, value: Value| {
        let mut body = good.clone();
        body[key] = value;
        body
    };

    // name: 1 to 200 characters.
    for (name, ok) in [("", false), ("x", true), (&"n".repeat(200)[..], true), (&"n".repeat(201)[..], false)] {
        let r = app.post(PATH, &u.key, with("name", json!(name))).await;
        if ok {
            assert!(r.status.is_success(), "{}", r.text);
        } else {
            field_error(&r, "name");
        }
    }
    // Relays are wss:// unless the instance allows ws://.
    field_error(&app.post(PATH, &u.key, with("relay_url", json!("ws://127.0.0.1:7000"))).await, "relay_url");
    field_error(&app.post(PATH, &u.key, with("relay_url", json!("https://relay.example"))).await, "relay_url");
    // The pubkey must be the nsec's, in hex; the nsec bech32.
    let other = identity_keys();
    field_error(&app.post(PATH, &u.key, with("pubkey", json!(other.pubkey))).await, "pubkey");
    field_error(&app.post(PATH, &u.key, with("pubkey", json!("abc"))).await, "pubkey");
    let hex_secret = id.keys.secret_key().to_secret_hex();
    field_error(&app.post(PATH, &u.key, with("private_key_nsec", json!(hex_secret))).await, "private_key_nsec");
    // The auth tag names the owner: ["auth", "<64 hex>", ...].
    for tag in [json!(["p", owner]).to_string(), json!(["auth", "abc"]).to_string(), "auth".to_owned()] {
        field_error(&app.post(PATH, &u.key, with("auth_tag", json!(tag))).await, "auth_tag");
    }
    // allowlist mode needs a non-empty list of 64-hex keys.
    field_error(&app.post(PATH, &u.key, with("respond_to", json!("allowlist"))).await, "respond_to_allowlist");
    let mut body = with("respond_to", json!("allowlist"));
    body["respond_to_allowlist"] = json!([]);
    field_error(&app.post(PATH, &u.key, body.clone()).await, "respond_to_allowlist");
    body["respond_to_allowlist"] = json!(["not-a-key"]);
    field_error(&app.post(PATH, &u.key, body).await, "respond_to_allowlist");
    field_error(&app.post(PATH, &u.key, with("respond_to", json!("everyone"))).await, "respond_to");
    // A missing required field is named.
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("auth_tag");
    field_error(&app.post(PATH, &u.key, missing).await, "auth_tag");
    // Unknown agent or environment: core's 404.
    let r = app.post(PATH, &u.key, with("agent_id", json!(uuid::Uuid::now_v7()))).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.text);
    let r = app.post(PATH, &u.key, with("environment_id", json!(uuid::Uuid::now_v7()))).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.text);
    // Another account's agent is unknown too.
    let stranger = app.user().await;
    let r = app.post(PATH, &stranger.key, good.clone()).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.text);
    assert!(app.get(PATH, &stranger.key).await.body["data"].as_array().unwrap().is_empty());
}

async fn provisioning_is_idempotent_on_the_pubkey(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let agent = acp_agent(&app, &u, "/bin/true", json!({})).await;
    let env = app.post("/api/environments", &u.key, json!({"name": "relay env"})).await;
    assert_eq!(env.status, StatusCode::CREATED, "{}", env.text);
    let env = env.body["data"]["id"].clone();
    let id = identity_keys();
    let owner = identity_keys().pubkey;
    let friend = identity_keys().pubkey;
    let mut body = provision(&id, "wss://relay.example/path", &owner, agent);
    body["environment_id"] = env.clone();
    body["sandbox_mode"] = json!("persistent");
    body["display_name"] = json!("Relay Bot");
    body["respond_to"] = json!("allowlist");
    body["respond_to_allowlist"] = json!([friend.to_uppercase()]);
    let r = app.post(PATH, &u.key, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let first = r.body["data"].clone();
    let mut texts = vec![r.text.clone()];
    assert_eq!(first["pubkey"], json!(id.pubkey));
    assert_eq!(first["name"], "relay bot");
    assert_eq!(first["display_name"], "Relay Bot");
    assert_eq!(first["environment_id"], env);
    assert_eq!(first["sandbox_mode"], "persistent");
    assert_eq!(first["respond_to"], "allowlist");
    assert_eq!(first["respond_to_allowlist"], json!([friend]));
    assert_eq!(first["enabled"], true);
    assert_eq!(first["relay_url"], "wss://relay.example/path");
    for key in ["id", "agent_id", "vault_id", "inserted_at", "updated_at"] {
        assert!(first[key].is_string(), "{key}: {first}");
    }
    assert!(first.get("private_key_nsec").is_none() && first.get("auth_tag").is_none());
    // The vault is the caller's, and the key is not one of its secrets.
    let vault = first["vault_id"].as_str().unwrap();
    let r = app.get(&format!("/api/vaults/{vault}"), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let r = app.get(&format!("/api/vaults/{vault}/secrets"), &u.key).await;
    assert_eq!(r.body["data"], json!([]), "{}", r.text);

    // Again with the same pubkey: 200, the same identity, omitted optional fields cleared.
    let r = app.post(PATH, &u.key, provision(&id, "wss://relay.example", &owner, agent)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    texts.push(r.text.clone());
    let again = r.body["data"].clone();
    assert_eq!(again["id"], first["id"]);
    assert_eq!(again["vault_id"], first["vault_id"]);
    assert_eq!(again["inserted_at"], first["inserted_at"]);
    assert_eq!(again["environment_id"], Value::Null);
    assert_eq!(again["sandbox_mode"], Value::Null);
    assert_eq!(again["display_name"], Value::Null);
    assert_eq!(again["respond_to"], "owner-only");
    assert_eq!(again["respond_to_allowlist"], json!([]));
    assert_eq!(again["relay_url"], "wss://relay.example");

    let one = format!("{PATH}/{}", first["id"].as_str().unwrap());
    let r = app.get(&one, &u.key).await;
    assert_eq!(r.body["data"], again);
    texts.push(r.text.clone());
    let r = app.get(PATH, &u.key).await;
    assert_eq!(r.body["data"], json!([again]));
    texts.push(r.text.clone());

    // PATCH: named fields change, the rules hold.
    let r = app.request(Method::PATCH, &one, Some(&u.key), Some(json!({"respond_to": "allowlist"}))).await;
    field_error(&r, "respond_to_allowlist");
    let r = app.request(Method::PATCH, &one, Some(&u.key), Some(json!({"name": ""}))).await;
    field_error(&r, "name");
    let r = app
        .request(
            Method::PATCH,
            &one,
            Some(&u.key),
            Some(json!({"respond_to": "anyone", "enabled": false, "environment_id": env, "display_name": "D"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    texts.push(r.text.clone());
    assert_eq!(r.body["data"]["respond_to"], "anyone");
    assert_eq!(r.body["data"]["enabled"], false);
    assert_eq!(r.body["data"]["environment_id"], env);
    assert_eq!(r.body["data"]["display_name"], "D");
    let r = app.request(Method::PATCH, &one, Some(&u.key), Some(json!({"environment_id": null}))).await;
    assert_eq!(r.body["data"]["environment_id"], Value::Null, "{}", r.text);
    assert_eq!(r.body["data"]["display_name"], "D");

    // The private key is in no answer, in no form.
    let hex_secret = id.keys.secret_key().to_secret_hex();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    assert_no_secret(&refs, &[&id.nsec, &hex_secret]);

    // Changes are audited.
    let r = app.get("/api/audit", &u.key).await;
    let actions: Vec<&str> = r.body["data"].as_array().unwrap().iter().filter_map(|e| e["action"].as_str()).collect();
    assert!(actions.contains(&"chat_relay_identity.created"), "{actions:?}");
    assert!(actions.contains(&"chat_relay_identity.updated"), "{actions:?}");

    // A vault its owner deleted is made again by a re-provision.
    assert_eq!(app.delete(&format!("/api/vaults/{vault}"), &u.key).await.status, StatusCode::NO_CONTENT);
    let r = app.post(PATH, &u.key, provision(&id, "wss://relay.example", &owner, agent)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let vault = r.body["data"]["vault_id"].as_str().unwrap().to_owned();
    assert_ne!(json!(vault), first["vault_id"]);
    assert_eq!(app.get(&format!("/api/vaults/{vault}"), &u.key).await.status, StatusCode::OK);

    // DELETE: gone, and its vault with it.
    let r = app.delete(&one, &u.key).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    assert_error(&app.get(&one, &u.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_eq!(app.get(&format!("/api/vaults/{vault}"), &u.key).await.status, StatusCode::NOT_FOUND);
    assert_error(&app.delete(&one, &u.key).await, StatusCode::NOT_FOUND, "not_found");
}

async fn routes_answer_404_with_the_flag_off(b: Backend) {
    let app = spawn_with(b, &[]).await;
    let u = app.user().await;
    let id = identity_keys();
    let body = provision(&id, "wss://relay.example", &id.pubkey, uuid::Uuid::now_v7());
    assert_error(&app.get(PATH, &u.key).await, StatusCode::NOT_FOUND, "chat_relay_not_enabled");
    assert_error(&app.post(PATH, &u.key, body).await, StatusCode::NOT_FOUND, "chat_relay_not_enabled");
    let one = format!("{PATH}/{}", uuid::Uuid::now_v7());
    assert_error(&app.get(&one, &u.key).await, StatusCode::NOT_FOUND, "chat_relay_not_enabled");
    assert_error(&app.delete(&one, &u.key).await, StatusCode::NOT_FOUND, "chat_relay_not_enabled");
}

async fn a_restricted_key_may_read_but_not_provision(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let agent = acp_agent(&app, &u, "/bin/true", json!({})).await;
    let r = app.post("/api/keys", &u.key, json!({"name": "r", "scope": "restricted"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let restricted = r.body["data"]["api_key"].as_str().unwrap().to_owned();
    let id = identity_keys();
    let body = provision(&id, "wss://relay.example", &identity_keys().pubkey, agent);
    let r = app.post(PATH, &restricted, body.clone()).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    let made = provisioned(&app, &u, body).await;
    let r = app.get(&format!("{PATH}/{}", made["id"].as_str().unwrap()), &restricted).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}

async fn an_account_deletion_removes_its_identities(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let other = app.user().await;
    for user in [&u, &other] {
        let agent = acp_agent(&app, user, "/bin/true", json!({})).await;
        provisioned(&app, user, provision(&identity_keys(), "wss://relay.example", &identity_keys().pubkey, agent))
            .await;
    }
    let r = app.request(Method::DELETE, "/api/account", Some(&u.key), Some(json!({"confirm": u.email}))).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    let left: Vec<String> = sqlx::query_scalar("SELECT account_id FROM chat_relay_identities")
        .fetch_all(&app.state().db.pool)
        .await
        .unwrap();
    assert_eq!(left, vec![other.id.clone()]);
}

acs_testkit::both!(
    an_account_deletion_removes_its_identities,
    provisioning_follows_the_field_rules,
    provisioning_is_idempotent_on_the_pubkey,
    routes_answer_404_with_the_flag_off,
    a_restricted_key_may_read_but_not_provision,
);
