//! The harness against a real relay and real Nostr clients: NIP-17 in and
//! out, NIP-04 in and out, `respond_to`, a server restart (nothing answered
//! twice) and a relay that drops every connection.

use std::time::Duration;

use acs_testkit::{Backend, TestApp, User, scripted_app, scripted_runtime_agent};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::common::{IdentityKeys, Person, TestRelay, identity_keys, provision, provisioned};

/// A flag-on server with the scripted agent, permitting the test relay's ws://.
async fn app(b: Backend) -> TestApp {
    // RUST_LOG=acs_ext_chat_relay=debug shows the harness at work.
    static LOG: std::sync::Once = std::sync::Once::new();
    LOG.call_once(|| {
        let filter = tracing_subscriber::EnvFilter::from_default_env();
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
    });
    crate::common::ensure_sandboxd();
    scripted_app(b, &[("features.chat_relay", json!(true)), ("chat_relay.allow_insecure_relays", json!(true))]).await
}

/// An identity on `relay` owned by `owner`, answered by the scripted agent (it echoes a prompt
/// without directives; `say: x` answers `x`), with further provision fields of `extra`.
async fn identity(app: &TestApp, u: &User, relay: &TestRelay, owner: &Person, extra: Value) -> (IdentityKeys, Value) {
    let agent = scripted_runtime_agent(app, u, "acp", json!({})).await;
    let keys = identity_keys();
    let mut body = provision(&keys, &relay.url, &owner.hex(), agent);
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    let made = provisioned(app, u, body).await;
    (keys, made)
}

async fn patch(app: &TestApp, u: &User, identity: &Value, body: Value) {
    let path = format!("/api/chat-relay/identities/{}", identity["id"].as_str().unwrap());
    let r = app.request(Method::PATCH, &path, Some(&u.key), Some(body)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}

async fn answers_in_the_kind_it_was_asked_by_respond_to(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let relay = TestRelay::start().await;
    let owner = Person::join(&relay).await;
    let friend = Person::join(&relay).await;
    let stranger = Person::join(&relay).await;
    let (keys, made) = identity(&app, &u, &relay, &owner, json!({})).await;
    let me = keys.keys.public_key();

    // Owner-only: the stranger's message (sent first, handled first) goes unanswered.
    stranger.nip17(me, "say: not for you").await;
    owner.nip17(me, "say: pong seventeen").await;
    let got = owner.wait_for(1).await;
    assert_eq!(got[0].text, "pong seventeen");
    assert!(got[0].nip17 && got[0].from == me, "{got:?}");
    owner.nip04(me, "say: pong four").await;
    let got = owner.wait_for(2).await;
    assert_eq!(got[1].text, "pong four");
    assert!(!got[1].nip17 && got[1].from == me, "{got:?}");
    assert!(stranger.received().is_empty());

    // The conversation is the sender's channel: both turns ran in one.
    let r = app.get("/api/conversations", &u.key).await;
    let convs = r.body["data"].as_array().unwrap();
    assert_eq!(convs.len(), 1, "{}", r.text);
    assert_eq!(convs[0]["channel_id"], json!(owner.hex()));
    assert_eq!(convs[0]["vault_id"], made["vault_id"]);
    assert_eq!(convs[0]["agent_id"], made["agent_id"]);

    // Allowlist: the friend is answered, the stranger still not.
    patch(&app, &u, &made, json!({"respond_to": "allowlist", "respond_to_allowlist": [friend.hex()]})).await;
    stranger.nip04(me, "say: still not").await;
    friend.nip04(me, "say: hello friend").await;
    let got = friend.wait_for(1).await;
    assert_eq!(got[0].text, "hello friend");
    // Anyone: the stranger too.
    patch(&app, &u, &made, json!({"respond_to": "anyone"})).await;
    stranger.nip17(me, "say: welcome stranger").await;
    let got = stranger.wait_for(1).await;
    assert_eq!(got, vec![crate::common::Received { from: me, nip17: true, text: "welcome stranger".into() }]);
    // Nobody: not even the owner, and narrowing back does not answer what was passed over.
    patch(&app, &u, &made, json!({"respond_to": "nobody"})).await;
    owner.nip17(me, "say: ignored").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    patch(&app, &u, &made, json!({"respond_to": "owner-only"})).await;
    owner.nip17(me, "say: back").await;
    let got = owner.wait_for(3).await;
    assert_eq!(got[2].text, "back");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(owner.received().len(), 3, "{:?}", owner.received());
    assert_eq!(stranger.received().len(), 1);
}

async fn a_restart_answers_nothing_twice_and_a_dropped_relay_is_redialled(b: Backend) {
    let mut app = app(b).await;
    let u = app.user().await;
    let relay = TestRelay::start().await;
    let owner = Person::join(&relay).await;
    let (keys, _) = identity(&app, &u, &relay, &owner, json!({})).await;
    let me = keys.keys.public_key();
    owner.nip17(me, "say: one").await;
    assert_eq!(owner.wait_for(1).await[0].text, "one");

    // Another server on the same database reads the relay's history again from its cursor,
    // and a replica beside it hears every message too: each is answered once.
    app.restart().await;
    let replica = app.replica().await;
    owner.nip04(me, "say: two").await;
    let got = owner.wait_for(2).await;
    assert_eq!(got[1].text, "two");
    replica.shutdown().await.unwrap();

    // The relay drops every connection and comes back empty on the same port.
    let relay = relay.restart().await;
    owner.nip17(me, "say: three").await;
    let got = owner.wait_for(3).await;
    assert_eq!(got[2].text, "three");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let texts: Vec<String> = owner.received().into_iter().map(|r| r.text).collect();
    assert_eq!(texts, ["one", "two", "three"]);
    // The private key is in no event of the conversation the messages ran in.
    let r = app.get("/api/conversations", &u.key).await;
    let conversation = r.body["data"][0]["id"].as_str().unwrap().to_owned();
    let r = app.get(&format!("/api/conversations/{conversation}/events?limit=5000"), &u.key).await;
    assert!(r.status.is_success() && r.text.contains("three"), "{}", r.text);
    assert!(!r.text.contains(&keys.nsec) && !r.text.contains(&keys.keys.secret_key().to_secret_hex()));
    drop(relay);
}

async fn turns_run_with_the_identitys_environment_and_sandbox_mode(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let relay = TestRelay::start().await;
    let owner = Person::join(&relay).await;
    let env = app.post("/api/environments", &u.key, json!({"name": "relay env"})).await;
    assert_eq!(env.status, StatusCode::CREATED, "{}", env.text);
    let env = env.body["data"]["id"].clone();
    let extra = json!({"environment_id": env, "sandbox_mode": "persistent"});
    let (keys, _) = identity(&app, &u, &relay, &owner, extra).await;
    owner.nip04(keys.keys.public_key(), "say: at home").await;
    assert_eq!(owner.wait_for(1).await[0].text, "at home");
    let r = app.get("/api/conversations", &u.key).await;
    let conversation = &r.body["data"][0];
    assert_eq!(conversation["environment_id"], env, "{}", r.text);
    let sandbox = app.get(&format!("/api/sandboxes/{}", conversation["sandbox_id"].as_str().unwrap()), &u.key).await;
    assert_eq!(sandbox.body["data"]["mode"], "persistent", "{}", sandbox.text);
}

acs_testkit::both!(
    turns_run_with_the_identitys_environment_and_sandbox_mode,
    answers_in_the_kind_it_was_asked_by_respond_to,
    a_restart_answers_nothing_twice_and_a_dropped_relay_is_redialled,
);
