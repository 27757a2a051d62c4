//! Paging rules of a conversation's event log (spec 4.1), on both
//! databases. Events are appended through the log's own writer; the
//! conversations API that serves these pages comes with the turn engine.

use acs::core::events::page::{Order, PageQuery, page};
use acs::core::events::{self, Scope, StageState};
use serde_json::json;
use uuid::Uuid;

use crate::common::{Backend, TestApp, spawn};

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
    for i in 0..5003 {
        events::output(app.state(), &scoped, "stdout", &format!("{i}")).await.unwrap();
    }
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

/// An open SSE response and the frames read so far.
struct Sse {
    resp: reqwest::Response,
    buf: String,
}

impl Sse {
    async fn open(app: &TestApp, key: &str, last: Option<i64>) -> Sse {
        let mut req = app.http.get(format!("{}/api/events/stream", app.base)).bearer_auth(key);
        if let Some(id) = last {
            req = req.header("last-event-id", id.to_string());
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), reqwest::StatusCode::OK);
        assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
        Sse { resp, buf: String::new() }
    }

    /// The next data frame as (id, body); comment frames are skipped.
    async fn next(&mut self) -> (i64, serde_json::Value) {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let frame: String = self.buf.drain(..end + 2).collect();
                let id = frame.lines().find_map(|l| l.strip_prefix("id:")).map(|v| v.trim().parse().unwrap());
                let data = frame.lines().find_map(|l| l.strip_prefix("data:")).map(|v| v.trim().to_owned());
                if let (Some(id), Some(data)) = (id, data) {
                    return (id, serde_json::from_str(&data).unwrap());
                }
                continue;
            }
            let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), self.resp.chunk()).await;
            let chunk = chunk.expect("a frame within 10 s").unwrap().expect("the stream stays open");
            self.buf.push_str(&String::from_utf8_lossy(&chunk));
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
    assert_eq!(bad.send().await.unwrap().status(), reqwest::StatusCode::UNPROCESSABLE_ENTITY);
}

crate::both!(
    the_all_conversations_stream_resumes_with_nothing_lost_or_repeated,
    appended_events_reach_live_subscribers_on_every_replica,
    pages_forward_and_back_with_cursors_from_the_page,
    whole_turns_extend_a_page_to_the_turns_first_event,
    a_turn_over_the_page_ceiling_is_cut,
);
