//! The event log of conversations (spec 2.2, 4.1, 6.2), on both databases:
//! the paging rules, the feed's `blocks`, `prompts` and `streams`, the
//! per-conversation and all-conversations SSE streams with resume, the
//! `conversations` signals, the transcript, and live fan-out across
//! replicas. Conversations and events are written through the store and the
//! log's own writer (no turn engine needed); everything else is HTTP.

use std::time::Duration;

use acs::core::conversations::store::{self, NewConversation};
use acs::core::events::page::{Order, PageQuery, page};
use acs::core::events::{self, NewEvent, Scope, StageState};
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::{Backend, TestApp, User, assert_error, spawn};

/// Appends `n` output events to `turn` (or to no turn), returning their ids.
async fn append(app: &TestApp, scope: &Scope, turn: Option<Uuid>, n: usize) -> Vec<i64> {
    let scope = Scope { turn_id: turn, ..scope.clone() };
    for i in 0..n {
        events::output(app.state(), &scope, "stdout", &format!("line {i}")).await.unwrap();
    }
    let all = all(app, scope.conversations[0]).await;
    all[all.len() - n..].to_vec()
}

async fn all(app: &TestApp, conversation: Uuid) -> Vec<i64> {
    let q = PageQuery::new(None, None, None, Some(5000), false).unwrap();
    page(&app.state().db, conversation, &q).await.unwrap().events.iter().map(|e| e.id).collect()
}

async fn ids(app: &TestApp, conversation: Uuid, q: PageQuery) -> (Vec<i64>, events::page::Page) {
    let p = page(&app.state().db, conversation, &q).await.unwrap();
    (p.events.iter().map(|e| e.id).collect(), p)
}

async fn setup(b: Backend) -> (TestApp, Scope) {
    let app = spawn(b).await;
    let u = app.user().await;
    let conversation = Uuid::now_v7();
    let scope =
        Scope { account_id: u.id.parse().unwrap(), sandbox_id: None, conversations: vec![conversation], turn_id: None };
    (app, scope)
}

async fn pages_forward_and_back_with_cursors_from_the_page(b: Backend) {
    let (app, scope) = setup(b).await;
    let c = scope.conversations[0];
    events::stage(app.state(), &scope, "provision", StageState::Started, &json!({}), None).await.unwrap();
    let mut every = all(&app, c).await;
    every.extend(append(&app, &scope, None, 9).await);
    assert_eq!(every.len(), 10);
    // Another conversation's events never show.
    let other = Scope { conversations: vec![Uuid::now_v7()], ..scope.clone() };
    append(&app, &other, None, 3).await;

    let (first, p) = ids(&app, c, PageQuery::new(None, None, None, Some(4), false).unwrap()).await;
    assert_eq!(first, every[..4]);
    assert!(p.has_more);
    assert_eq!(p.next_cursor, Some(every[3]));
    assert_eq!((p.oldest_cursor, p.newest_cursor), (Some(every[0]), Some(every[3])));
    assert_eq!(p.order, Order::Asc);
    let (second, p) = ids(&app, c, PageQuery::new(p.next_cursor, None, None, Some(4), false).unwrap()).await;
    assert_eq!(second, every[4..8]);
    let (third, p) = ids(&app, c, PageQuery::new(p.next_cursor, None, None, Some(4), false).unwrap()).await;
    assert_eq!(third, every[8..]);
    assert!(!p.has_more);
    let (none, p) = ids(&app, c, PageQuery::new(p.next_cursor, None, None, Some(4), false).unwrap()).await;
    assert!(none.is_empty());
    assert_eq!((p.next_cursor, p.oldest_cursor, p.newest_cursor), (None, None, None));
    // `before` bounds a forward page.
    let (bounded, _) =
        ids(&app, c, PageQuery::new(Some(every[1]), Some(every[5]), None, Some(100), false).unwrap()).await;
    assert_eq!(bounded, every[2..5]);
    // Newest first: next_cursor is the oldest id, passed as `before`.
    let (newest, p) = ids(&app, c, PageQuery::new(None, None, Some("desc"), Some(3), false).unwrap()).await;
    assert_eq!(newest, [every[9], every[8], every[7]]);
    assert_eq!(p.next_cursor, Some(every[7]));
    assert_eq!(p.newest_cursor, Some(every[9]));
    let (older, _) = ids(&app, c, PageQuery::new(None, p.next_cursor, Some("desc"), Some(3), false).unwrap()).await;
    assert_eq!(older, [every[6], every[5], every[4]]);
}

async fn whole_turns_extend_a_page_to_the_turns_first_event(b: Backend) {
    let (app, scope) = setup(b).await;
    let c = scope.conversations[0];
    let (t1, t2) = (Uuid::now_v7(), Uuid::now_v7());
    let one = append(&app, &scope, Some(t1), 3).await;
    let loose = append(&app, &scope, None, 2).await;
    let two = append(&app, &scope, Some(t2), 6).await;
    // limit 4 lands inside turn two: the page reaches back to its first event.
    let (got, p) = ids(&app, c, PageQuery::new(None, None, Some("desc"), Some(4), true).unwrap()).await;
    let want: Vec<i64> = two.iter().rev().copied().collect();
    assert_eq!(got, want, "the whole of turn two, beyond the limit");
    assert!(p.has_more);
    assert!(!p.turn_split);
    // The next page holds earlier events only: loose ones page by limit alone.
    let (got, p) = ids(&app, c, PageQuery::new(None, p.next_cursor, Some("desc"), Some(1), true).unwrap()).await;
    assert_eq!(got, [loose[1]]);
    let (got, p) = ids(&app, c, PageQuery::new(None, p.next_cursor, Some("desc"), Some(2), true).unwrap()).await;
    assert_eq!(got, [loose[0], one[2], one[1], one[0]]);
    assert!(!p.has_more);
    // The same page without whole_turns stops at the limit.
    let (got, _) = ids(&app, c, PageQuery::new(None, None, Some("desc"), Some(4), false).unwrap()).await;
    assert_eq!(got.len(), 4);
}

async fn a_turn_over_the_page_ceiling_is_cut(b: Backend) {
    let (app, scope) = setup(b).await;
    let c = scope.conversations[0];
    let t = Uuid::now_v7();
    append(&app, &scope, None, 1).await;
    let db = &app.state().db;
    let scoped = Scope { turn_id: Some(t), ..scope.clone() };
    let lines: Vec<NewEvent> = (0..5003).map(|i| NewEvent::output("stdout", i.to_string())).collect();
    events::append(app.state(), &scoped, &lines, None).await.unwrap();
    let p = page(db, c, &PageQuery::new(None, None, Some("desc"), Some(10), true).unwrap()).await.unwrap();
    assert_eq!(p.events.len(), 5000);
    assert!(p.turn_split);
    assert!(p.has_more);
}

async fn appended_events_reach_live_subscribers_on_every_replica(b: Backend) {
    let (app, scope) = setup(b).await;
    let mut here = app.state().events.subscribe();
    let written = append(&app, &scope, None, 3).await;
    for id in &written {
        let e = tokio::time::timeout(std::time::Duration::from_secs(5), here.recv()).await.unwrap().unwrap();
        assert_eq!(e.id, *id);
        assert_eq!(e.conversation_id, Some(scope.conversations[0]));
        assert_eq!(e.kind, "output");
    }
    if b == Backend::Postgres {
        // Written on one replica, seen live on another (LISTEN/NOTIFY).
        let replica = app.replica().await;
        let mut there = replica.state.events.subscribe();
        // The relay's LISTEN is in place once a notification round trip works.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut sent = Vec::new();
        loop {
            assert!(std::time::Instant::now() < deadline, "the replica never heard of an event");
            sent.push(append(&app, &scope, None, 1).await[0]);
            if let Ok(Ok(e)) = tokio::time::timeout(std::time::Duration::from_millis(300), there.recv()).await {
                assert!(sent.contains(&e.id), "only events written on the other replica arrive");
                break;
            }
        }
        let last = append(&app, &scope, Some(Uuid::now_v7()), 1).await[0];
        // Earlier probes may still be arriving; the last one comes whole and in order after them.
        let e = loop {
            let e = tokio::time::timeout(std::time::Duration::from_secs(5), there.recv()).await.unwrap().unwrap();
            if e.id == last {
                break e;
            }
            assert!(sent.contains(&e.id));
        };
        assert!(e.turn_id.is_some());
        assert_eq!(e.data, "line 0");
        replica.shutdown().await.unwrap();
    }
}

/// An open SSE response and the frames read so far (also read by the team stream tests).
pub struct Sse {
    resp: reqwest::Response,
    buf: String,
}

/// One SSE frame that is not a comment.
#[derive(Debug)]
pub struct Frame {
    pub event: Option<String>,
    pub id: Option<i64>,
    pub data: Value,
}

impl Sse {
    async fn open(app: &TestApp, key: &str, last: Option<i64>) -> Sse {
        Sse::at(&app.http, &app.base, "/api/events/stream", key, last).await
    }

    /// Opens `path` on the server at `base`, resuming after `last`.
    pub async fn at(http: &reqwest::Client, base: &str, path: &str, key: &str, last: Option<i64>) -> Sse {
        let mut req = http.get(format!("{base}{path}")).bearer_auth(key);
        if let Some(id) = last {
            req = req.header("last-event-id", id.to_string());
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
        Sse { resp, buf: String::new() }
    }

    /// The next frame within `wait`, comments skipped; None when none came.
    pub async fn frame_within(&mut self, wait: Duration) -> Option<Frame> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let text: String = self.buf.drain(..end + 2).collect();
                let field = |name: &str| text.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().to_owned());
                let Some(data) = field("data:") else { continue };
                return Some(Frame {
                    event: field("event:"),
                    id: field("id:").map(|v| v.parse().unwrap()),
                    data: serde_json::from_str(&data).unwrap(),
                });
            }
            let chunk = tokio::time::timeout_at(deadline, self.resp.chunk()).await.ok()?;
            let chunk = chunk.unwrap().expect("the stream stays open");
            self.buf.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    async fn frame(&mut self) -> Frame {
        self.frame_within(Duration::from_secs(10)).await.expect("a frame within 10 s")
    }

    /// The next event frame as (id, body).
    async fn next(&mut self) -> (i64, Value) {
        let f = self.frame().await;
        assert_eq!(f.event, None, "an event frame, not {f:?}");
        (f.id.expect("an event frame has an id"), f.data)
    }

    /// Reads on until the server ends the stream: true when it did within `wait`.
    pub async fn ends_within(&mut self, wait: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match tokio::time::timeout_at(deadline, self.resp.chunk()).await {
                Err(_) => return false,
                Ok(Ok(Some(chunk))) => self.buf.push_str(&String::from_utf8_lossy(&chunk)),
                Ok(Ok(None) | Err(_)) => return true,
            }
        }
    }

    /// Frames until one named `event` (None: an event frame) arrives within 20 s.
    pub async fn until(&mut self, event: Option<&str>) -> (Frame, Vec<Frame>) {
        let mut before = Vec::new();
        loop {
            let f = self.frame_within(Duration::from_secs(20)).await.expect("a frame within 20 s");
            if f.event.as_deref() == event {
                return (f, before);
            }
            before.push(f);
        }
    }
}

async fn the_all_conversations_stream_resumes_with_nothing_lost_or_repeated(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let other = app.user().await;
    let c = Uuid::now_v7();
    let scope = Scope { account_id: u.id.parse().unwrap(), sandbox_id: None, conversations: vec![c], turn_id: None };
    let before = append(&app, &scope, None, 2).await;
    // From the start: the log first, then live events.
    let mut sse = Sse::open(&app, &u.key, None).await;
    for id in &before {
        assert_eq!(sse.next().await.0, *id);
    }
    let foreign = Scope { account_id: other.id.parse().unwrap(), conversations: vec![Uuid::now_v7()], ..scope.clone() };
    append(&app, &foreign, None, 1).await;
    let no_conversation = Scope { conversations: vec![], sandbox_id: Some(Uuid::now_v7()), ..scope.clone() };
    events::stage(app.state(), &no_conversation, "provision", StageState::Started, &json!({}), None).await.unwrap();
    let turn = Uuid::now_v7();
    let live = append(&app, &scope, Some(turn), 2).await;
    let (id, body) = sse.next().await;
    assert_eq!(id, live[0], "other accounts' and machine-only events are not on it");
    assert_eq!(body["conversation_id"], c.to_string());
    assert_eq!(body["turn_id"], turn.to_string());
    assert_eq!(body["kind"], "output");
    assert_eq!(body["stream"], "stdout");
    assert_eq!(body["data"], "line 0");
    assert!(body.get("id").is_none(), "the id travels in the id: line");
    assert_eq!(sse.next().await.0, live[1]);
    // Dropped; events written meanwhile arrive on resume, then live ones, once each.
    drop(sse);
    let missed = append(&app, &scope, None, 3).await;
    let mut sse = Sse::open(&app, &u.key, Some(live[1])).await;
    for id in &missed {
        assert_eq!(sse.next().await.0, *id);
    }
    let after = append(&app, &scope, None, 1).await;
    assert_eq!(sse.next().await.0, after[0]);
    // A cursor that is not an event id is refused.
    let bad = app.http.get(format!("{}/api/events/stream", app.base)).bearer_auth(&u.key).header("last-event-id", "x");
    assert_eq!(bad.send().await.unwrap().status(), StatusCode::UNPROCESSABLE_ENTITY);
}

/// Many appenders at once (a burst of turns): a live stream gets every event once, in id order.
async fn concurrent_appends_all_reach_a_live_stream_in_order(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let account = u.id.parse().unwrap();
    let mut sse = Sse::open(&app, &u.key, None).await;
    let writers = (0..40).map(|_| {
        let app = &app;
        async move {
            let scope =
                Scope { account_id: account, sandbox_id: None, conversations: vec![Uuid::now_v7()], turn_id: None };
            for i in 0..10 {
                events::output(app.state(), &scope, "stdout", &format!("line {i}")).await.unwrap();
            }
        }
    });
    futures::future::join_all(writers).await;
    let mut seen = Vec::new();
    for _ in 0..400 {
        seen.push(sse.next().await.0);
    }
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "out of order or repeated: {seen:?}");
}

// ---- the HTTP feed, streams and transcript ----

/// A conversation of `account` stored directly (on `sandbox` when given).
async fn conversation(app: &TestApp, account: &User, sandbox: Option<Uuid>) -> Uuid {
    let id = Uuid::now_v7();
    let new = NewConversation {
        id,
        account_id: account.id.parse().unwrap(),
        agent_id: Uuid::now_v7(),
        runtime: "acp".into(),
        api_access: "owner".into(),
        ..NewConversation::default()
    };
    store::insert(&app.state().db, &new).await.unwrap();
    if let Some(s) = sandbox {
        store::set_sandbox(&app.state().db, id, s).await.unwrap();
    }
    id
}

fn scope_of(account: &User, conversation: Uuid, turn: Option<Uuid>) -> Scope {
    Scope {
        account_id: account.id.parse().unwrap(),
        sandbox_id: None,
        conversations: vec![conversation],
        turn_id: turn,
    }
}

/// Appends `events` in one call; their ids in order.
async fn write(app: &TestApp, scope: &Scope, events: &[NewEvent]) -> Vec<i64> {
    events::append(app.state(), scope, events, None).await.unwrap().iter().map(|e| e.id).collect()
}

fn lines(n: usize) -> Vec<NewEvent> {
    (0..n).map(|i| NewEvent::output("stdout", format!("line {i}"))).collect()
}

fn prompt(text: &str) -> NewEvent {
    NewEvent::output("prompt", text).with_blocks(json!([{"type": "text", "text": text}]))
}

fn text(t: &str) -> NewEvent {
    NewEvent::output("stdout", t).with_blocks(json!([{"type": "text", "text": t}]))
}

/// The feed's ids for a query string, and the whole answer.
async fn feed(app: &TestApp, key: &str, c: Uuid, query: &str) -> (Vec<i64>, Value) {
    let r = app.get(&format!("/api/conversations/{c}/events?{query}"), key).await;
    assert_eq!(r.status, StatusCode::OK, "{query}: {}", r.text);
    let ids = r.body["data"].as_array().unwrap().iter().map(|e| e["id"].as_i64().unwrap()).collect();
    (ids, r.body)
}

fn rev(ids: &[i64]) -> Vec<i64> {
    ids.iter().rev().copied().collect()
}

async fn the_events_feed_follows_the_paging_rules(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let c = conversation(&app, &u, None).await;
    let (t1, t2) = (Uuid::now_v7(), Uuid::now_v7());
    let mut every =
        write(&app, &scope_of(&u, c, None), &[NewEvent::stage("provision", StageState::Done, &json!({}))]).await;
    let one = write(&app, &scope_of(&u, c, Some(t1)), &lines(3)).await;
    let loose = write(&app, &scope_of(&u, c, None), &lines(4)).await;
    let two = write(&app, &scope_of(&u, c, Some(t2)), &lines(6)).await;
    every.extend(one.iter().chain(&loose).chain(&two));
    // Another conversation's events never show.
    let other = conversation(&app, &u, None).await;
    write(&app, &scope_of(&u, other, Some(t2)), &lines(2)).await;

    // Forward: the default order, `after` pages on, `next_cursor` is the page's last id.
    let (ids, body) = feed(&app, &u.key, c, "limit=5").await;
    assert_eq!(ids, every[..5]);
    assert_eq!(body["meta"], json!({"limit": 5, "has_more": true, "next_cursor": every[4]}));
    assert_eq!(
        body["page"],
        json!({"order": "asc", "oldest_cursor": every[0], "newest_cursor": every[4], "turn_split": false})
    );
    let e = &body["data"][0];
    assert_eq!(
        (e["kind"].as_str(), e["stage"].as_str(), e["state"].as_str()),
        (Some("stage"), Some("provision"), Some("done"))
    );
    assert_eq!(e["stream"], "");
    assert!(e.get("blocks").is_none() && e.get("conversation_id").is_none() && e.get("duration_ms").is_none());
    assert_eq!(body["data"][1]["turn_id"], t1.to_string());
    assert!(body["data"][1]["ts"].as_str().unwrap().ends_with('Z'));
    let (ids, _) = feed(&app, &u.key, c, &format!("after={}&limit=5", every[4])).await;
    assert_eq!(ids, every[5..10]);
    let (ids, body) = feed(&app, &u.key, c, &format!("after={}&limit=100", every[9])).await;
    assert_eq!(ids, every[10..]);
    assert_eq!(body["meta"]["has_more"], false);
    let (ids, body) = feed(&app, &u.key, c, &format!("after={}", every[13])).await;
    assert!(ids.is_empty());
    assert_eq!(body["meta"], json!({"limit": 100, "has_more": false, "next_cursor": null}));
    assert_eq!((body["page"]["oldest_cursor"].is_null(), body["page"]["newest_cursor"].is_null()), (true, true));
    // `before` bounds a forward page.
    let (ids, _) = feed(&app, &u.key, c, &format!("after={}&before={}", every[1], every[6])).await;
    assert_eq!(ids, every[2..6]);

    // Newest first: next_cursor is the oldest id, passed as `before` for the older page.
    let (ids, body) = feed(&app, &u.key, c, "order=desc&limit=3").await;
    assert_eq!(ids, rev(&every[11..]));
    assert_eq!(body["meta"]["next_cursor"], every[11]);
    assert_eq!(body["page"]["newest_cursor"], every[13]);
    assert_eq!(body["page"]["order"], "desc");
    let (ids, _) = feed(&app, &u.key, c, &format!("order=desc&limit=3&before={}", every[11])).await;
    assert_eq!(ids, rev(&every[8..11]));

    // whole_turns: limit 4 ends inside turn two, so the page reaches back to its first event.
    let (ids, body) = feed(&app, &u.key, c, "order=desc&whole_turns=true&limit=4").await;
    assert_eq!(ids, rev(&two), "the whole of turn two, beyond the limit");
    assert_eq!(body["meta"]["has_more"], true);
    assert_eq!(body["meta"]["limit"], 4);
    assert_eq!(body["page"]["turn_split"], false);
    // The next page returns earlier events only; loose ones page by limit alone.
    let next = body["meta"]["next_cursor"].as_i64().unwrap();
    assert_eq!(next, two[0]);
    let (ids, body) = feed(&app, &u.key, c, &format!("order=desc&whole_turns=true&limit=3&before={next}")).await;
    assert_eq!(ids, rev(&loose[1..]));
    // Ending on turn one's last event takes the whole turn.
    let next = body["meta"]["next_cursor"].as_i64().unwrap();
    let (ids, body) = feed(&app, &u.key, c, &format!("order=desc&whole_turns=true&limit=2&before={next}")).await;
    assert_eq!(ids, [loose[0], one[2], one[1], one[0]]);
    assert_eq!(body["meta"]["has_more"], true, "the stage event is older still");
    // Without whole_turns the same page stops at the limit.
    let (ids, _) = feed(&app, &u.key, c, "order=desc&limit=4").await;
    assert_eq!(ids, rev(&two[2..]));

    // Parameter checks.
    let (ids, _) = feed(&app, &u.key, c, "limit=5000").await;
    assert_eq!(ids, every);
    for bad in ["limit=5001", "limit=0", "limit=-3", "limit=x", "order=sideways", "after=x"] {
        let r = app.get(&format!("/api/conversations/{c}/events?{bad}"), &u.key).await;
        assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    }
    for bad in ["whole_turns=true", "whole_turns=true&order=asc"] {
        let r = app.get(&format!("/api/conversations/{c}/events?{bad}"), &u.key).await;
        assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
        assert!(r.body["errors"]["whole_turns"].is_array(), "{}", r.text);
    }
    let r = app.get(&format!("/api/conversations/{c}/events?limit=5001"), &u.key).await;
    assert!(r.body["errors"]["limit"].is_array(), "{}", r.text);
}

async fn a_turn_over_5000_events_splits_the_page(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let c = conversation(&app, &u, None).await;
    let early = write(&app, &scope_of(&u, c, None), &lines(1)).await;
    let turn = write(&app, &scope_of(&u, c, Some(Uuid::now_v7())), &lines(5003)).await;
    let (ids, body) = feed(&app, &u.key, c, "order=desc&whole_turns=true&limit=10").await;
    assert_eq!(ids.len(), 5000);
    assert_eq!(ids, rev(&turn[3..]));
    assert_eq!(body["page"]["turn_split"], true);
    assert_eq!(body["meta"]["has_more"], true);
    // The rest of the turn and what came before follow on the next page.
    let next = body["meta"]["next_cursor"].as_i64().unwrap();
    let (ids, body) = feed(&app, &u.key, c, &format!("order=desc&whole_turns=true&limit=10&before={next}")).await;
    assert_eq!(ids, [turn[2], turn[1], turn[0], early[0]]);
    assert_eq!((body["page"]["turn_split"].as_bool(), body["meta"]["has_more"].as_bool()), (Some(false), Some(false)));
}

async fn blocks_prompts_and_streams_shape_the_feed(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let c = conversation(&app, &u, None).await;
    let t = Uuid::now_v7();
    let thought = NewEvent::output("stdout", "").with_blocks(json!([{"type": "thinking", "text": "hmm"}]));
    let ids = write(
        &app,
        &scope_of(&u, c, Some(t)),
        &[
            prompt("hello"),
            NewEvent::stage("turn", StageState::Started, &json!({"turn_id": t})),
            text("hi there"),
            thought,
            NewEvent::output("stderr", "warning: x"),
        ],
    )
    .await;
    let [p, stage, out, think, err] = ids[..] else { panic!() };
    let k = &u.key;
    // Prompts are hidden unless asked for.
    assert_eq!(feed(&app, k, c, "").await.0, [stage, out, think, err]);
    assert_eq!(feed(&app, k, c, "prompts=false").await.0, [stage, out, think, err]);
    let (ids, body) = feed(&app, k, c, "prompts=true").await;
    assert_eq!(ids, [p, stage, out, think, err]);
    assert_eq!((body["data"][0]["stream"].as_str(), body["data"][0]["data"].as_str()), (Some("prompt"), Some("hello")));
    // Streams narrow output; stage events stay.
    assert_eq!(feed(&app, k, c, "streams=stderr").await.0, [stage, err]);
    assert_eq!(feed(&app, k, c, "streams=stdout").await.0, [stage, out, think]);
    assert_eq!(feed(&app, k, c, "streams=stdout,stderr").await.0, [stage, out, think, err]);
    assert_eq!(feed(&app, k, c, "streams=stderr&prompts=true").await.0, [p, stage, err]);
    // whole_turns counts only what the filter keeps.
    let (ids, body) = feed(&app, k, c, "streams=stderr&order=desc&whole_turns=true&limit=1").await;
    assert_eq!(ids, [err, stage]);
    assert_eq!(body["meta"]["has_more"], false);
    for bad in ["streams=bogus", "streams=stdout,bogus", "streams=", "streams=prompt", "prompts=maybe", "blocks=2"] {
        let r = app.get(&format!("/api/conversations/{c}/events?{bad}"), k).await;
        assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    }
    let r = app.get(&format!("/api/conversations/{c}/events?streams=bogus"), k).await;
    assert!(r.body["errors"]["streams"].is_array(), "{}", r.text);
    // Blocks only when asked; [] for events without any.
    let (_, body) = feed(&app, k, c, "blocks=true&prompts=true").await;
    let blocks: Vec<&Value> = body["data"].as_array().unwrap().iter().map(|e| &e["blocks"]).collect();
    assert_eq!(
        blocks,
        [
            &json!([{"type": "text", "text": "hello"}]),
            &json!([]),
            &json!([{"type": "text", "text": "hi there"}]),
            &json!([{"type": "thinking", "text": "hmm"}]),
            &json!([]),
        ]
    );
    let (_, body) = feed(&app, k, c, "blocks=false").await;
    assert!(body["data"].as_array().unwrap().iter().all(|e| e.get("blocks").is_none()));
}

async fn a_conversation_is_seen_only_by_its_callers(b: Backend) {
    let app = spawn(b).await;
    let (u, other) = (app.user().await, app.user().await);
    let (machine, elsewhere) = (Uuid::now_v7(), Uuid::now_v7());
    let mine = conversation(&app, &u, Some(machine)).await;
    let theirs = conversation(&app, &other, None).await;
    let on_other_machine = conversation(&app, &u, Some(elsewhere)).await;
    let unplaced = conversation(&app, &u, None).await;
    write(&app, &scope_of(&u, mine, None), &lines(1)).await;
    let sandbox_key =
        acs::core::keys::create_for_sandbox(&app.state().db.pool, u.id.parse().unwrap(), machine, "machine")
            .await
            .unwrap()
            .api_key;
    for part in ["events", "stream", "history"] {
        let path = |c: &dyn std::fmt::Display| format!("/api/conversations/{c}/{part}");
        for (c, key) in
            [(theirs, &u.key), (Uuid::now_v7(), &u.key), (on_other_machine, &sandbox_key), (unplaced, &sandbox_key)]
        {
            assert_error(&app.get(&path(&c), key).await, StatusCode::NOT_FOUND, "not_found");
        }
        assert_error(&app.get(&path(&"not-a-uuid"), &u.key).await, StatusCode::NOT_FOUND, "not_found");
        for key in [&u.key, &sandbox_key] {
            let r = app.http.get(format!("{}{}", app.base, path(&mine))).bearer_auth(key).send().await.unwrap();
            assert_eq!(r.status(), StatusCode::OK, "{part}");
        }
        let r = app.request(reqwest::Method::GET, &path(&mine), None, None).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    }
}

async fn the_conversation_stream_resumes_after_a_dropped_connection(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let c = conversation(&app, &u, None).await;
    let sibling = conversation(&app, &u, None).await;
    let turn = Uuid::now_v7();
    let scope = scope_of(&u, c, Some(turn));
    let staged = NewEvent::stage("turn", StageState::Started, &json!({"turn_id": turn})).with_duration(Some(12));
    let before = write(&app, &scope, &[prompt("do it"), staged, text("ok")]).await;
    let path = format!("/api/conversations/{c}/stream?blocks=true");
    let mut sse = Sse::at(&app.http, &app.base, &path, &u.key, None).await;
    // From the start: the log (no prompt), then live events.
    let (id, body) = sse.next().await;
    assert_eq!(id, before[1]);
    assert_eq!((body["kind"].as_str(), body["stage"].as_str()), (Some("stage"), Some("turn")));
    assert_eq!(body["blocks"], json!([]));
    assert!(body.get("duration_ms").is_none() && body.get("conversation_id").is_none(), "{body}");
    assert!(body.get("id").is_none(), "the id travels in the id: line");
    let (id, body) = sse.next().await;
    assert_eq!(id, before[2]);
    assert_eq!(body["blocks"], json!([{"type": "text", "text": "ok"}]));
    assert_eq!(body["turn_id"], turn.to_string());
    write(&app, &scope_of(&u, sibling, None), &lines(2)).await;
    write(&app, &scope, &[prompt("again")]).await;
    let live = write(&app, &scope, &lines(2)).await;
    assert_eq!(sse.next().await.0, live[0], "other conversations' events and prompts are not on it");
    assert_eq!(sse.next().await.0, live[1]);
    // Dropped; what was written meanwhile comes on resume, then live events, once each.
    drop(sse);
    let missed = write(&app, &scope, &lines(3)).await;
    let mut sse = Sse::at(&app.http, &app.base, &format!("/api/conversations/{c}/stream"), &u.key, Some(live[1])).await;
    for id in &missed {
        let (got, body) = sse.next().await;
        assert_eq!(got, *id);
        assert!(body.get("blocks").is_none(), "blocks only when asked");
    }
    let after = write(&app, &scope, &lines(1)).await;
    assert_eq!(sse.next().await.0, after[0]);
    assert!(sse.frame_within(Duration::from_millis(300)).await.is_none(), "nothing repeats");
    let bad = app.http.get(format!("{}/api/conversations/{c}/stream", app.base)).bearer_auth(&u.key);
    assert_eq!(bad.header("last-event-id", "-4").send().await.unwrap().status(), StatusCode::UNPROCESSABLE_ENTITY);
}

async fn conversations_signals_reach_the_all_conversations_stream(b: Backend) {
    let app = spawn(b).await;
    let (u, other) = (app.user().await, app.user().await);
    let c = conversation(&app, &u, None).await;
    let scope = scope_of(&u, c, None);
    let staged = NewEvent::stage("provision", StageState::Done, &json!({})).with_duration(Some(40));
    let first = write(&app, &scope, &[staged, prompt("hidden"), text("shown")]).await;
    let mut sse = Sse::at(&app.http, &app.base, "/api/events/stream?blocks=true", &u.key, None).await;
    let (id, body) = sse.next().await;
    assert_eq!(id, first[0]);
    assert_eq!((body["duration_ms"].as_i64(), body["conversation_id"].as_str()), (Some(40), Some(&*c.to_string())));
    assert_eq!(body["blocks"], json!([]));
    let (id, body) = sse.next().await;
    assert_eq!(id, first[2], "prompts are not on streams");
    assert_eq!(body["blocks"], json!([{"type": "text", "text": "shown"}]));
    assert!(body["duration_ms"].is_null());
    // Another account's signal is not sent here; ours is, without an id, between events.
    events::signal::conversations_changed(app.state(), other.id.parse().unwrap(), None).await;
    events::signal::conversations_changed(app.state(), u.id.parse().unwrap(), None).await;
    let after = write(&app, &scope, &lines(1)).await;
    let f = sse.frame().await;
    assert_eq!(f.event.as_deref(), Some("conversations"));
    assert_eq!(f.id, None);
    assert_eq!(f.data, json!({"reason": "changed"}));
    assert_eq!(sse.next().await.0, after[0]);
    assert!(sse.frame_within(Duration::from_millis(300)).await.is_none());

    if b == Backend::Postgres {
        // A signal and an event written on one server reach a stream on another.
        let replica = app.replica().await;
        let there = format!("http://{}", replica.addr);
        let mut far = Sse::at(&app.http, &there, "/api/events/stream", &u.key, Some(after[0])).await;
        // The replica's LISTEN is in place once a signal makes the round trip.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            assert!(std::time::Instant::now() < deadline, "the replica never heard of a signal");
            events::signal::conversations_changed(app.state(), u.id.parse().unwrap(), None).await;
            if let Some(f) = far.frame_within(Duration::from_millis(300)).await {
                assert_eq!(f.event.as_deref(), Some("conversations"));
                break;
            }
        }
        let live = write(&app, &scope, &lines(1)).await;
        // Late copies of the probing signals may come first.
        let got = loop {
            let f = far.frame().await;
            if f.event.is_none() {
                break f;
            }
        };
        assert_eq!(got.id, Some(live[0]));
        assert_eq!(got.data["data"], "line 0");
        // An open stream does not hold up a graceful shutdown: it ends with the server.
        tokio::time::timeout(Duration::from_secs(10), replica.shutdown())
            .await
            .expect("shutdown waits on no stream")
            .unwrap();
        let ended = async { while let Ok(Some(_)) = far.resp.chunk().await {} };
        tokio::time::timeout(Duration::from_secs(5), ended).await.expect("the stream ends");
    }
}

async fn history_is_the_transcript_by_turn(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let c = conversation(&app, &u, None).await;
    let (t1, t2) = (Uuid::now_v7(), Uuid::now_v7());
    let call =
        json!([{"type": "tool_call", "tool_call_id": "c1", "title": "ls", "kind": "execute", "status": "pending"}]);
    let update = json!([{"type": "tool_call_update", "tool_call_id": "c1", "status": "completed"}]);
    let ask = json!([{"type": "permission_request", "request_id": "9", "tool_call": {"tool_call_id": "c2"},
        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]}]);
    write(
        &app,
        &scope_of(&u, c, Some(t1)),
        &[
            prompt("list files").with_blocks(
                json!([{"type": "text", "text": "list files"}, {"type": "image", "media_type": "image/png"}]),
            ),
            NewEvent::stage("turn", StageState::Started, &json!({})),
            NewEvent::output("stdout", "").with_blocks(json!([{"type": "thinking", "text": "I will "}])),
            NewEvent::output("stdout", "").with_blocks(json!([{"type": "thinking", "text": "run ls"}])),
            NewEvent::output("stdout", "").with_blocks(call),
            NewEvent::output("stderr", "noise"),
            NewEvent::output("stdout", "").with_blocks(update),
            text("Here "),
            text("they are."),
            NewEvent::output("stdout", "").with_blocks(ask),
        ],
    )
    .await;
    write(&app, &scope_of(&u, c, Some(t2)), &[prompt("thanks"), text("welcome")]).await;
    let r = app.get(&format!("/api/conversations/{c}/history"), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(
        r.body["data"],
        json!([
            {"turn_id": t1, "role": "user", "blocks": [{"type": "text", "text": "list files"},
                {"type": "image", "media_type": "image/png"}]},
            {"turn_id": t1, "role": "agent", "blocks": [
                {"type": "thinking", "text": "I will run ls"},
                {"type": "tool_call", "tool_call_id": "c1", "title": "ls", "kind": "execute", "status": "completed"},
                {"type": "text", "text": "Here they are."},
                {"type": "permission_request", "request_id": "9", "tool_call": {"tool_call_id": "c2"},
                    "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]},
            ]},
            {"turn_id": t2, "role": "user", "blocks": [{"type": "text", "text": "thanks"}]},
            {"turn_id": t2, "role": "agent", "blocks": [{"type": "text", "text": "welcome"}]},
        ])
    );
    let empty = conversation(&app, &u, None).await;
    let r = app.get(&format!("/api/conversations/{empty}/history"), &u.key).await;
    assert_eq!(r.body, json!({"data": []}));
}

crate::both!(
    the_all_conversations_stream_resumes_with_nothing_lost_or_repeated,
    concurrent_appends_all_reach_a_live_stream_in_order,
    appended_events_reach_live_subscribers_on_every_replica,
    pages_forward_and_back_with_cursors_from_the_page,
    whole_turns_extend_a_page_to_the_turns_first_event,
    a_turn_over_the_page_ceiling_is_cut,
    the_events_feed_follows_the_paging_rules,
    a_turn_over_5000_events_splits_the_page,
    blocks_prompts_and_streams_shape_the_feed,
    a_conversation_is_seen_only_by_its_callers,
    the_conversation_stream_resumes_after_a_dropped_connection,
    conversations_signals_reach_the_all_conversations_stream,
    history_is_the_transcript_by_turn,
);
