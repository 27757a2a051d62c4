//! The harness: one relay connection per enabled identity. Each connection
//! subscribes to the encrypted direct messages to the identity's key (NIP-17
//! gift wraps, kind 1059, and NIP-04, kind 4) from the stored cursor on,
//! claims each message it will answer (a unique row: no restart, reconnect
//! or second replica answers twice), runs it as a turn and answers in the
//! kind it came in. The relay client reconnects by itself, with backoff, and
//! subscribes again.

use std::collections::HashMap;
use std::time::Duration;

use acs_platform::state::AppState;
use acs_platform::time_fmt::now_micros;
use nostr_sdk::prelude::*;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::store::{self, Row};
use crate::turn::Runner;
use crate::{api, rules};

/// How often identities (and the flag) are read again without a doorbell (changes made on another replica).
const RESCAN: Duration = Duration::from_secs(5);
/// Gift wraps carry a created_at up to two days in the past (NIP-59): the
/// subscription reaches that far back behind the cursor.
const GIFT_WRAP_SKEW_SECS: u64 = 2 * 24 * 3600;
/// The first reconnect comes after this; the relay client lengthens it after repeated failures.
const RETRY: Duration = Duration::from_secs(1);
/// Attempts at sending an answer, a `RETRY` apart.
const SEND_ATTEMPTS: usize = 30;

/// What restarts an identity's connection when it changes.
#[derive(PartialEq, Eq)]
struct Fingerprint(i64);

struct Serving {
    fingerprint: Fingerprint,
    stop: CancellationToken,
    task: tokio::task::Id,
}

/// How a connection task ended.
enum Ended {
    /// Stopped, or it cannot work until the identity changes (its key, its relay address).
    Done,
    /// It lost messages on the way (or its client stopped): start it again from the cursor.
    Restart,
}

/// The worker: keeps one connection task per enabled identity, in step with the table.
pub async fn run(state: AppState) {
    let bell = crate::doorbell(&state);
    let mut serving: HashMap<Uuid, Serving> = HashMap::new();
    let mut tasks = JoinSet::new();
    loop {
        // While the flag is off no identity is served; turned on, they are at the next round.
        let rows = if state.feature_enabled(crate::NAME) { store::enabled(&state).await } else { Ok(Vec::new()) };
        match rows {
            Ok(rows) => reconcile(&state, rows, &mut serving, &mut tasks),
            Err(e) => tracing::warn!("chat relay: reading identities failed: {e}"),
        }
        tokio::select! {
            _ = state.shutdown.cancelled() => break,
            _ = bell.0.notified() => {}
            _ = tokio::time::sleep(RESCAN) => {}
        }
        // Ended tasks that should run again leave the map, so the next round starts them.
        while let Some(done) = tasks.try_join_next_with_id() {
            let task = match done {
                Ok((_, Ended::Done)) => continue,
                Ok((task, Ended::Restart)) => task,
                Err(e) => {
                    tracing::error!("chat relay: a connection task failed: {e}");
                    e.id()
                }
            };
            serving.retain(|_, s| s.task != task);
        }
    }
    for s in serving.values() {
        s.stop.cancel();
    }
    while tasks.join_next().await.is_some() {}
}

fn reconcile(state: &AppState, rows: Vec<Row>, serving: &mut HashMap<Uuid, Serving>, tasks: &mut JoinSet<Ended>) {
    let wanted: HashMap<Uuid, Row> = rows.into_iter().map(|r| (r.id, r)).collect();
    serving.retain(|id, s| {
        let keep = wanted.get(id).is_some_and(|r| Fingerprint(r.updated_at) == s.fingerprint);
        if !keep {
            s.stop.cancel();
        }
        keep
    });
    for (id, row) in wanted {
        if serving.contains_key(&id) {
            continue;
        }
        let stop = state.shutdown.child_token();
        let fingerprint = Fingerprint(row.updated_at);
        let task = tasks.spawn(serve(state.clone(), row, stop.clone())).id();
        serving.insert(id, Serving { fingerprint, stop, task });
    }
}

/// One identity's connection, until `stop`.
async fn serve(state: AppState, identity: Row, stop: CancellationToken) -> Ended {
    let Some(api) = api::of(&state) else {
        tracing::error!("chat relay: the in-process API is missing; identity {} is not served", identity.id);
        return Ended::Done;
    };
    let keys = match open_keys(&state, &identity).await {
        Ok(keys) => keys,
        Err(e) => {
            tracing::error!("chat relay: identity {}: its key could not be opened: {e}", identity.id);
            return Ended::Done;
        }
    };
    let client = Client::builder().signer(keys.clone()).build();
    let opts = RelayOptions::new().reconnect(true).retry_interval(RETRY).adjust_retry_interval(true);
    if let Err(e) = client.pool().add_relay(identity.relay_url.as_str(), opts).await {
        tracing::warn!("chat relay: identity {}: relay {} refused: {e}", identity.id, identity.relay_url);
        return Ended::Done;
    }
    let mut notifications = client.notifications();
    client.connect().await;
    let me = keys.public_key();
    let since = identity.cursor_at.unwrap_or(identity.created_at / 1_000_000).max(0) as u64;
    let filters = [
        Filter::new().kind(Kind::GiftWrap).pubkey(me).since(Timestamp::from(since.saturating_sub(GIFT_WRAP_SKEW_SECS))),
        Filter::new().kind(Kind::EncryptedDirectMessage).pubkey(me).since(Timestamp::from(since)),
    ];
    for filter in filters {
        if let Err(e) = client.subscribe(filter, None).await {
            // The relay client subscribes again on every (re)connection.
            tracing::debug!("chat relay: identity {}: subscribing: {e}", identity.id);
        }
    }
    let runner = Runner {
        api: &api,
        events: &state.events,
        caller: api::identity_caller(identity.account_id, identity.id),
        identity: &identity,
        stop: &stop,
    };
    let ended = loop {
        let notification = tokio::select! {
            _ = stop.cancelled() => break Ended::Done,
            n = notifications.recv() => n,
        };
        match notification {
            Ok(RelayPoolNotification::Event { event, .. }) => {
                if handle(&state, &client, &keys, &runner, &event).await == Current::Stale {
                    break Ended::Restart;
                }
            }
            Ok(RelayPoolNotification::Shutdown) => break Ended::Restart,
            Ok(_) => {}
            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                // The cursor stands before the skipped ones: a new connection reads them again.
                tracing::warn!("chat relay: identity {}: {n} relay notifications skipped; reconnecting", identity.id);
                break Ended::Restart;
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => break Ended::Restart,
        }
    };
    client.shutdown().await;
    ended
}

async fn open_keys(state: &AppState, identity: &Row) -> Result<Keys, Box<dyn std::error::Error + Send + Sync>> {
    let nsec = state
        .crypto
        .decrypt(&state.db, identity.account_id, &store::nsec_aad(identity.id), &identity.sealed_nsec)
        .await?;
    Ok(Keys::new(SecretKey::from_bech32(&nsec)?))
}

/// A direct message as received: who sent it, its text, and how to answer.
struct Incoming {
    sender: PublicKey,
    text: String,
    kind: DmKind,
    /// When the sender wrote it (the rumor's time for a gift wrap).
    written_at: u64,
}

#[derive(Clone, Copy)]
enum DmKind {
    Nip17,
    Nip04,
}

async fn open(client: &Client, keys: &Keys, event: &Event) -> Option<Incoming> {
    match event.kind {
        Kind::GiftWrap => {
            let gift = client.unwrap_gift_wrap(event).await.ok()?;
            // NIP-17: a chat message whose author is the seal's signer.
            (gift.rumor.kind == Kind::PrivateDirectMessage && gift.rumor.pubkey == gift.sender).then(|| Incoming {
                sender: gift.sender,
                text: gift.rumor.content,
                kind: DmKind::Nip17,
                written_at: gift.rumor.created_at.as_secs(),
            })
        }
        Kind::EncryptedDirectMessage => {
            let text = nip04::decrypt(keys.secret_key(), &event.pubkey, &event.content).ok()?;
            Some(Incoming { sender: event.pubkey, text, kind: DmKind::Nip04, written_at: event.created_at.as_secs() })
        }
        _ => None,
    }
}

/// Whether the connection still serves the identity as stored.
#[derive(PartialEq, Eq)]
enum Current {
    Yes,
    /// The identity changed (or went) since the connection started: the
    /// message waits for the connection with the new settings.
    Stale,
}

async fn current(state: &AppState, identity: &Row) -> Current {
    match store::find_any(state, identity.id).await {
        Ok(Some(now)) if now.enabled && now.updated_at == identity.updated_at => Current::Yes,
        Ok(_) => Current::Stale,
        Err(e) => {
            tracing::warn!("chat relay: identity {}: reading it failed: {e}", identity.id);
            Current::Stale
        }
    }
}

async fn handle(state: &AppState, client: &Client, keys: &Keys, runner: &Runner<'_>, event: &Event) -> Current {
    let identity = runner.identity;
    // A change commits before the harness hears of it: decide by the stored settings only.
    if current(state, identity).await == Current::Stale {
        return Current::Stale;
    }
    let incoming = open(client, keys, event).await;
    // A created_at in the future must not move the cursor past messages still to come.
    let seen = event.created_at.as_secs().min(Timestamp::now().as_secs());
    if let Err(e) = store::advance_cursor(state, identity.id, seen as i64).await {
        tracing::warn!("chat relay: identity {}: the cursor was not saved: {e}", identity.id);
    }
    let Some(incoming) = incoming else {
        tracing::debug!("chat relay: identity {}: event {} is no direct message to it", identity.id, event.id);
        return Current::Yes;
    };
    // Messages written before the identity existed are history, not requests.
    if incoming.written_at < (identity.created_at / 1_000_000) as u64 || incoming.sender == keys.public_key() {
        return Current::Yes;
    }
    // Every message is claimed once, answered or not: one passed over stays
    // so when `respond_to` later widens.
    match store::claim(state, identity.account_id, &identity.pubkey, &event.id.to_hex()).await {
        Ok(true) => {}
        Ok(false) => return Current::Yes,
        Err(e) => {
            tracing::warn!("chat relay: identity {}: claiming event {} failed: {e}", identity.id, event.id);
            return Current::Yes;
        }
    }
    let sender = incoming.sender.to_hex();
    if !rules::answers(identity.respond_to, &identity.owner_pubkey, &identity.allowlist, &sender)
        || incoming.text.trim().is_empty()
    {
        tracing::debug!("chat relay: identity {}: event {} is not answered (respond_to)", identity.id, event.id);
        return Current::Yes;
    }
    let started = now_micros();
    let text = match runner.run(&sender, &event.id.to_hex(), &incoming.text).await {
        Ok(text) => text,
        Err(e) => {
            tracing::warn!("chat relay: identity {}: event {} went unanswered: {e}", identity.id, event.id);
            return Current::Yes;
        }
    };
    let reply = match incoming.kind {
        DmKind::Nip17 => EventBuilder::private_msg(keys, incoming.sender, text, []).await.map_err(|e| e.to_string()),
        DmKind::Nip04 => {
            nip04::encrypt(keys.secret_key(), &incoming.sender, &text).map_err(|e| e.to_string()).and_then(|content| {
                EventBuilder::new(Kind::EncryptedDirectMessage, content)
                    .tag(Tag::public_key(incoming.sender))
                    .sign_with_keys(keys)
                    .map_err(|e| e.to_string())
            })
        }
    };
    let sent = match reply {
        Ok(reply) => send(client, runner, &reply).await,
        Err(e) => Err(e),
    };
    match sent {
        Ok(_) => tracing::info!(
            identity = %identity.id, ms = (now_micros() - started) / 1000,
            "chat relay: answered event {}", event.id
        ),
        Err(e) => tracing::warn!("chat relay: identity {}: the answer to {} was not sent: {e}", identity.id, event.id),
    }
    Current::Yes
}

/// Sends an answer, retrying while the relay is away (it may be reconnecting).
async fn send(client: &Client, runner: &Runner<'_>, reply: &Event) -> Result<(), String> {
    let mut last = String::new();
    for _ in 0..SEND_ATTEMPTS {
        match client.send_event(reply).await {
            Ok(out) if !out.success.is_empty() => return Ok(()),
            Ok(out) => last = format!("{:?}", out.failed),
            Err(e) => last = e.to_string(),
        }
        tokio::select! {
            _ = runner.stop.cancelled() => break,
            _ = tokio::time::sleep(RETRY) => {}
        }
    }
    Err(last)
}
