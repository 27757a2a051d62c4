//! What the chat-relay tests share: a real local relay, a person with a
//! Nostr client of their own, and identity provisioning.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acs_testkit::{TestApp, User};
use nostr_relay_builder::{LocalRelay, RelayBuilder};
use nostr_sdk::prelude::*;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Builds the machine supervisor beside the test binaries when it is not there yet (the server
/// looks for `sandboxd` next to its executable; this crate's build does not make it).
pub fn ensure_sandboxd() {
    let exe = std::env::current_exe().unwrap();
    if !exe.parent().unwrap().join("../sandboxd").is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let built = std::process::Command::new(cargo).args(["build", "-q", "-p", "acs", "--bin", "sandboxd"]).status();
        assert!(built.unwrap().success(), "building sandboxd");
    }
}

/// A relay on 127.0.0.1, restartable on the same port (a relay that drops every connection).
pub struct TestRelay {
    relay: LocalRelay,
    pub port: u16,
    pub url: String,
}

impl TestRelay {
    pub async fn start() -> TestRelay {
        Self::on(None).await
    }

    async fn on(port: Option<u16>) -> TestRelay {
        // A free port is picked before it is bound, so tests running at once may collide: try again.
        let mut tries = 0;
        let relay = loop {
            let mut builder = RelayBuilder::default().addr(IpAddr::V4(Ipv4Addr::LOCALHOST));
            if let Some(port) = port {
                builder = builder.port(port);
            }
            let relay = LocalRelay::new(builder);
            match relay.run().await {
                Ok(()) => break relay,
                Err(e) if tries < 50 => {
                    tries += 1;
                    eprintln!("the relay did not start ({e}); trying again");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("the relay does not start: {e}"),
            }
        };
        let url = relay.url().await.to_string().trim_end_matches('/').to_owned();
        let port = url.rsplit(':').next().unwrap().parse().unwrap();
        TestRelay { relay, port, url }
    }

    /// Stops the relay (every connection drops, its events are gone) and starts a new one on the same port.
    pub async fn restart(self) -> TestRelay {
        let port = self.port;
        self.relay.shutdown();
        drop(self.relay);
        tokio::time::sleep(Duration::from_millis(300)).await;
        Self::on(Some(port)).await
    }
}

/// A direct message as a person received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub from: PublicKey,
    pub nip17: bool,
    pub text: String,
}

/// Someone with their own keys and Nostr client, collecting the direct messages sent to them.
pub struct Person {
    pub keys: Keys,
    client: Client,
    got: Arc<Mutex<Vec<Received>>>,
}

impl Person {
    pub async fn join(relay: &TestRelay) -> Person {
        let keys = Keys::generate();
        let client = Client::builder().signer(keys.clone()).build();
        let opts = RelayOptions::new().retry_interval(Duration::from_secs(1)).adjust_retry_interval(false);
        client.pool().add_relay(relay.url.as_str(), opts).await.unwrap();
        client.connect().await;
        client.wait_for_connection(Duration::from_secs(5)).await;
        let me = keys.public_key();
        let since = Timestamp::from(Timestamp::now().as_secs() - 3 * 24 * 3600);
        client
            .subscribe(
                Filter::new().kinds([Kind::GiftWrap, Kind::EncryptedDirectMessage]).pubkey(me).since(since),
                None,
            )
            .await
            .unwrap();
        let got = Arc::new(Mutex::new(Vec::new()));
        let (c, k, g) = (client.clone(), keys.clone(), got.clone());
        let mut notifications = client.notifications();
        tokio::spawn(async move {
            while let Ok(n) = notifications.recv().await {
                let RelayPoolNotification::Event { event, .. } = n else { continue };
                let received = match event.kind {
                    Kind::GiftWrap => match c.unwrap_gift_wrap(&event).await {
                        Ok(gift) => Received { from: gift.sender, nip17: true, text: gift.rumor.content },
                        Err(_) => continue,
                    },
                    Kind::EncryptedDirectMessage => match nip04::decrypt(k.secret_key(), &event.pubkey, &event.content)
                    {
                        Ok(text) => Received { from: event.pubkey, nip17: false, text },
                        Err(_) => continue,
                    },
                    _ => continue,
                };
                g.lock().unwrap().push(received);
            }
        });
        Person { keys, client, got }
    }

    pub fn hex(&self) -> String {
        self.keys.public_key().to_hex()
    }

    /// Sends a NIP-17 direct message, retrying while the relay is away.
    pub async fn nip17(&self, to: PublicKey, text: &str) {
        let event = EventBuilder::private_msg(&self.keys, to, text, []).await.unwrap();
        self.send(&event).await;
    }

    /// Sends a NIP-04 direct message, retrying while the relay is away.
    pub async fn nip04(&self, to: PublicKey, text: &str) {
        let content = nip04::encrypt(self.keys.secret_key(), &to, text).unwrap();
        let event = EventBuilder::new(Kind::EncryptedDirectMessage, content)
            .tag(Tag::public_key(to))
            .sign_with_keys(&self.keys)
            .unwrap();
        self.send(&event).await;
    }

    async fn send(&self, event: &Event) {
        for _ in 0..100 {
            if let Ok(out) = self.client.send_event(event).await
                && !out.success.is_empty()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        panic!("the relay never took the message");
    }

    pub fn received(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// Waits until `n` messages have arrived; returns them all.
    pub async fn wait_for(&self, n: usize) -> Vec<Received> {
        for _ in 0..600 {
            let got = self.received();
            if got.len() >= n {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{n} message(s) did not arrive: {:?}", self.received());
    }
}

/// An identity's keys: its `pubkey` in hex and its `nsec`.
pub struct IdentityKeys {
    pub keys: Keys,
    pub pubkey: String,
    pub nsec: String,
}

pub fn identity_keys() -> IdentityKeys {
    let keys = Keys::generate();
    IdentityKeys { pubkey: keys.public_key().to_hex(), nsec: keys.secret_key().to_bech32().unwrap(), keys }
}

/// The owner attestation tag naming `owner`.
fn auth_tag(owner: &str) -> String {
    json!(["auth", owner]).to_string()
}

/// A provision request for `keys` on `relay_url`, owned by `owner`, answered by `agent_id`.
pub fn provision(keys: &IdentityKeys, relay_url: &str, owner: &str, agent_id: impl ToString) -> Value {
    json!({
        "name": "relay bot", "relay_url": relay_url, "agent_id": agent_id.to_string(),
        "pubkey": keys.pubkey, "private_key_nsec": keys.nsec, "auth_tag": auth_tag(owner),
    })
}

/// Provisions, expecting 201; the identity.
pub async fn provisioned(app: &TestApp, u: &User, body: Value) -> Value {
    let r = app.post("/api/chat-relay/identities", &u.key, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"].clone()
}
