//! Benchmark of the chat relay extension (docs/chat-relay.md) on SQLite, in
//! one run, against a real local Nostr relay (`nostr-relay-builder`, run in a
//! child process of this one so the server's memory is measured alone):
//!
//! 1. message in to answer out: the owner's Nostr client publishes an
//!    encrypted direct message (`say: pong <i>`) to an identity answered by
//!    the scripted agent, and the time until the client has received and
//!    decrypted the identity's answer. BENCH_RELAY_MESSAGES sequential
//!    messages on one identity for NIP-04 and on another for NIP-17; the first
//!    of each starts the machine and is reported apart, the later ones are the
//!    awake conversation.
//! 2. BENCH_RELAY_IDENTITIES identities held by one server (each its own key,
//!    all on the one relay, owner-only): provisioned through the API, then
//!    waited for until the harness has a TCP connection to the relay per
//!    identity (counted in /proc/net/tcp); the server process's RSS growth per
//!    identity and the time to bring them all up.
//!
//! Needs root and scripts/setup. Run through `bench/run`, or alone:
//!
//!     cargo build --release --bin sandboxd -p acs-scripted-agent && cargo run --release --example bench_chat_relay
//!
//! Knobs: BENCH_RELAY_MESSAGES (20), BENCH_RELAY_IDENTITIES (1000).

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use nostr_relay_builder::builder::RateLimit;
use nostr_relay_builder::{LocalRelay, RelayBuilder};
use nostr_sdk::prelude::*;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

#[path = "util/mod.rs"]
mod util;
use util::{bench_account, env_or, fan_out, percentile, start_server};

/// Set in the child process that only runs the relay.
const RELAY_CHILD: &str = "BENCH_CHAT_RELAY_CHILD";

/// The child: a relay on 127.0.0.1 printing its URL, until its stdin closes (the parent is gone).
async fn relay_child() {
    let limit = RateLimit { max_reqs: 500, notes_per_minute: 100_000 };
    let relay = LocalRelay::new(RelayBuilder::default().addr(IpAddr::V4(Ipv4Addr::LOCALHOST)).rate_limit(limit));
    relay.run().await.expect("the relay starts");
    println!("{}", relay.url().await.to_string().trim_end_matches('/'));
    let _ = tokio::task::spawn_blocking(|| std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new())).await;
    relay.shutdown();
}

/// The relay child process and its URL.
async fn spawn_relay() -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .env(RELAY_CHILD, "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the relay process starts");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let url = lines.next_line().await.unwrap().expect("the relay prints its URL");
    (child, url)
}

/// A direct message the owner received, and when.
struct Received {
    from: PublicKey,
    nip17: bool,
    text: String,
    at: Instant,
}

/// The owner: their keys and Nostr client, with every direct message to them on a channel.
struct Owner {
    keys: Keys,
    client: Client,
    got: tokio::sync::mpsc::UnboundedReceiver<Received>,
}

impl Owner {
    async fn join(relay_url: &str) -> Owner {
        let keys = Keys::generate();
        let client = Client::builder().signer(keys.clone()).build();
        client.pool().add_relay(relay_url, RelayOptions::new()).await.unwrap();
        client.connect().await;
        client.wait_for_connection(Duration::from_secs(5)).await;
        let me = keys.public_key();
        let since = Timestamp::from(Timestamp::now().as_secs() - 3 * 24 * 3600);
        let filter = Filter::new().kinds([Kind::GiftWrap, Kind::EncryptedDirectMessage]).pubkey(me).since(since);
        client.subscribe(filter, None).await.unwrap();
        let (tx, got) = tokio::sync::mpsc::unbounded_channel();
        let (c, k) = (client.clone(), keys.clone());
        let mut notifications = client.notifications();
        tokio::spawn(async move {
            while let Ok(n) = notifications.recv().await {
                let RelayPoolNotification::Event { event, .. } = n else { continue };
                let (from, nip17, text) = match event.kind {
                    Kind::GiftWrap => match c.unwrap_gift_wrap(&event).await {
                        Ok(gift) => (gift.sender, true, gift.rumor.content),
                        Err(_) => continue,
                    },
                    Kind::EncryptedDirectMessage => match nip04::decrypt(k.secret_key(), &event.pubkey, &event.content)
                    {
                        Ok(text) => (event.pubkey, false, text),
                        Err(_) => continue,
                    },
                    _ => continue,
                };
                let _ = tx.send(Received { from, nip17, text, at: Instant::now() });
            }
        });
        Owner { keys, client, got }
    }

    /// Publishes a direct message of the kind asked to `to`, then waits for its answer `expect`:
    /// milliseconds from just before the publishing to the decrypted answer.
    async fn ask(&mut self, to: PublicKey, nip17: bool, text: &str, expect: &str) -> f64 {
        let t = Instant::now();
        let event = if nip17 {
            EventBuilder::private_msg(&self.keys, to, text, []).await.unwrap()
        } else {
            let content = nip04::encrypt(self.keys.secret_key(), &to, text).unwrap();
            EventBuilder::new(Kind::EncryptedDirectMessage, content)
                .tag(Tag::public_key(to))
                .sign_with_keys(&self.keys)
                .unwrap()
        };
        let out = self.client.send_event(&event).await.expect("the relay takes the message");
        assert!(!out.success.is_empty(), "the relay refused the message: {:?}", out.failed);
        loop {
            let r = tokio::time::timeout(Duration::from_secs(60), self.got.recv())
                .await
                .expect("an answer in 60 s")
                .expect("the client is running");
            if r.from == to && r.nip17 == nip17 && r.text == expect {
                return r.at.duration_since(t).as_secs_f64() * 1000.0;
            }
        }
    }
}

/// A provision request for a fresh key on `relay_url`, owned by `owner`, answered by `agent_id`.
fn provision(relay_url: &str, owner: &str, agent_id: &str, name: &str) -> (Keys, Value) {
    let keys = Keys::generate();
    let body = json!({
        "name": name, "relay_url": relay_url, "agent_id": agent_id,
        "pubkey": keys.public_key().to_hex(), "private_key_nsec": keys.secret_key().to_bech32().unwrap(),
        "auth_tag": json!(["auth", owner]).to_string(), "respond_to": "owner-only",
    });
    (keys, body)
}

/// Established TCP connections in this network namespace whose far end is `port` (the client side
/// of connections to the relay: the relay's own side has `port` as its local port).
fn connections_to(port: u16) -> usize {
    let mut n = 0;
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() > 3
                && cols[3] == "01"
                && cols[2].rsplit(':').next().and_then(|p| u16::from_str_radix(p, 16).ok()) == Some(port)
            {
                n += 1;
            }
        }
    }
    n
}

fn self_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    if std::env::var_os(RELAY_CHILD).is_some() {
        return relay_child().await;
    }
    let messages = env_or("BENCH_RELAY_MESSAGES", 20).max(2);
    let identities = env_or("BENCH_RELAY_IDENTITIES", 1000);
    let agent_bin = std::env::current_exe().unwrap().parent().unwrap().join("../scripted-agent");
    let agent_bin =
        agent_bin.canonicalize().expect("target/<profile>/scripted-agent (cargo build -p acs-scripted-agent)");
    let dir = std::env::temp_dir().join(format!("acs-bench-chat-relay-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let (mut relay, relay_url) = spawn_relay().await;
    let relay_port: u16 = relay_url.rsplit(':').next().unwrap().parse().unwrap();

    let binds = json!([format!("{}:/opt/acs/bin/scripted-agent", agent_bin.display())]);
    let db_url = format!("sqlite://{}", dir.join("acs.db").display());
    let running = start_server(
        &db_url,
        &dir,
        &[
            ("sandbox.ro_binds", binds),
            ("features.chat_relay", json!(true)),
            ("chat_relay.allow_insecure_relays", json!(true)),
        ],
    )
    .await;
    let sandbox_cfg = &running.state.config().sandbox;
    let (lease_dir, run_dir) = (sandbox_cfg.lease_dir.clone(), sandbox_cfg.run_dir.clone());
    let base = format!("http://{}", running.addr);
    let http = reqwest::Client::new();
    let (_, key) = bench_account(&http, &base).await;
    let post = |path: &str, body: Value| http.post(format!("{base}{path}")).bearer_auth(&key).json(&body).send();
    let agent: Value =
        post("/api/agents", json!({"name": "bench", "runtime": "acp", "command": ["/opt/acs/bin/scripted-agent"]}))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    let agent_id = agent["data"]["id"].as_str().unwrap().to_owned();
    let mut owner = Owner::join(&relay_url).await;
    let owner_hex = owner.keys.public_key().to_hex();

    // 1. message in to answer out, per kind on an identity of its own.
    let mut kinds = Vec::new();
    for (label, nip17) in [("NIP-04", false), ("NIP-17", true)] {
        let (keys, body) = provision(&relay_url, &owner_hex, &agent_id, &format!("bench {label}"));
        let r = post("/api/chat-relay/identities", body).await.unwrap();
        assert_eq!(r.status(), 201, "provisioning: {}", r.text().await.unwrap());
        // The harness connects within the doorbell's round: wait for its connection.
        let before = connections_to(relay_port);
        let t = Instant::now();
        while connections_to(relay_port) <= before && t.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await; // its subscriptions
        let to = keys.public_key();
        let mut samples = Vec::with_capacity(messages);
        for i in 0..messages {
            samples.push(owner.ask(to, nip17, &format!("say: pong {i}"), &format!("pong {i}")).await);
        }
        let first = samples.remove(0);
        kinds.push((label, first, percentile(&mut samples, 0.5), percentile(&mut samples, 0.9)));
    }
    // The machines of part 1 go before the memory is measured.
    let list: Value =
        http.get(format!("{base}/api/conversations")).bearer_auth(&key).send().await.unwrap().json().await.unwrap();
    for c in list["data"].as_array().unwrap() {
        post(&format!("/api/conversations/{}/terminate", c["id"].as_str().unwrap()), json!({})).await.unwrap();
    }

    // 2. many identities held by one server.
    let bodies: Vec<Value> =
        (0..identities).map(|i| provision(&relay_url, &owner_hex, &agent_id, &format!("bench {i}")).1).collect();
    let bodies = std::sync::Arc::new(bodies);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let rss_before = self_rss_kib();
    let conns_before = connections_to(relay_port);
    let started = Instant::now();
    let (h, b, k, bs) = (http.clone(), base.clone(), key.clone(), bodies.clone());
    let statuses = fan_out(8, identities, move |i| {
        let req = h.post(format!("{b}/api/chat-relay/identities")).bearer_auth(&k).json(&bs[i]);
        async move { req.send().await.map(|r| r.status().as_u16()).unwrap_or(0) }
    })
    .await;
    let provisioned_s = started.elapsed().as_secs_f64();
    let refused = statuses.iter().filter(|s| **s != 201).count();
    // Every identity's connection: until they are all there, or their number stops growing for 10 s.
    let (mut held, mut last_growth) = (0, Instant::now());
    loop {
        let now = connections_to(relay_port).saturating_sub(conns_before);
        if now > held {
            held = now;
            last_growth = Instant::now();
        }
        if held >= identities - refused || last_growth.elapsed() > Duration::from_secs(10) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let up_s = last_growth.duration_since(started).as_secs_f64();
    tokio::time::sleep(Duration::from_millis(2000)).await; // their subscriptions settle
    let rss_after = self_rss_kib();
    let per_identity_kib = rss_after.saturating_sub(rss_before) as f64 / identities.max(1) as f64;

    println!(
        "| chat relay (Nostr), scripted agent, SQLite, local relay on loopback | first (new machine) | p50 | p90 | goal |"
    );
    println!("| --- | ---: | ---: | ---: | --- |");
    for (label, first, p50, p90) in &kinds {
        let verdict = if *p50 < 300.0 { "met" } else { "**missed**" };
        println!(
            "| {label} direct message published to its answer received and decrypted, one identity, {} later messages | {first:.0} ms | {p50:.0} ms | {p90:.0} ms | p50 < 300 ms: {verdict} |",
            messages - 1
        );
    }
    let verdict = if refused == 0 && held >= identities { "met" } else { "**missed**" };
    println!(
        "| {identities} identities on one relay: provisioned in {provisioned_s:.1} s ({refused} refused), {held} connections held, all up {up_s:.1} s after the first provision | server RSS +{:.1} KiB per identity ({:.0} MB in all) | | | a connection per identity: {verdict} |",
        per_identity_kib,
        rss_after.saturating_sub(rss_before) as f64 / 1024.0
    );

    running.shutdown().await.unwrap();
    owner.client.shutdown().await;
    drop(relay.stdin.take());
    let _ = tokio::time::timeout(Duration::from_secs(5), relay.wait()).await;
    acs::core::provider::local::purge_blocking(
        &dir.join("sandboxes/machines"),
        std::path::Path::new(&run_dir),
        std::path::Path::new(&lease_dir),
    );
    let _ = std::fs::remove_dir_all(&dir);
}
