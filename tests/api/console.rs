//! The console's conversation and sandbox pages, over HTTP as a browser
//! without script would use them (the page, its forms, the older pages)
//! and as the page's script does (the live stream of rendering operations,
//! resumed with `Last-Event-ID`). The real browser tests are tests/browser.

use std::time::Duration;

use acs_testkit::browser::{Browser, field, location};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::both;
use crate::common::{
    Backend, TestApp, User, create_conversation, finished_turns, scripted_app, scripted_runtime_agent,
};

both!(
    the_conversation_page_draws_turns_as_blocks,
    the_live_stream_sends_each_event_once_and_resumes,
    forms_prompt_interrupt_and_answer_without_script,
    older_turns_come_in_whole_pages,
    the_sandbox_page_browses_files_redacted,
    pages_of_another_account_are_not_found,
);

async fn signed_in(app: &TestApp, u: &User) -> Browser {
    let mut b = Browser::new(app);
    b.sign_in(&u.email, &u.password).await;
    b
}

/// A conversation of the scripted agent after its first turn ended.
async fn conversation(app: &TestApp, u: &User, agent: Uuid, prompt: &str) -> (Uuid, Value) {
    let c = create_conversation(app, u, json!({"agent_id": agent, "prompt": prompt})).await;
    let id: Uuid = c["id"].as_str().unwrap().parse().unwrap();
    finished_turns(app, id, 1).await;
    (id, c)
}

async fn the_conversation_page_draws_turns_as_blocks(b: Backend) {
    let app = scripted_app(b, &[]).await;
    let u = app.user().await;
    let agent = scripted_runtime_agent(&app, &u, "acp", json!({})).await;
    let prompt =
        "think: planning it\nsay: hello <world>\ntool: t1 read Read README.md\nplan: first; second\nusage: 12 3";
    let (id, _) = conversation(&app, &u, agent, prompt).await;
    let turn = crate::common::turns(&app, id).await.remove(0);
    let mut browser = signed_in(&app, &u).await;
    let page = browser.get(&format!("/conversations/{id}")).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    let html = &page.text;
    let t = turn.id;
    assert!(html.contains(&format!("<article class=\"turn\" id=\"turn-{t}\" data-status=\"done\">")), "{html}");
    assert!(html.contains("<div class=\"prompt\">think: planning it\nsay: hello &lt;world&gt;"), "{html}");
    assert!(html.contains("<div class=\"blk thinking\" data-merge=\"thinking\">planning it</div>"), "{html}");
    // Streamed in 16-byte pieces, drawn as one block, escaped.
    assert!(html.contains("<div class=\"blk text\" data-merge=\"text\">hello &lt;world&gt;"), "{html}");
    assert!(html.contains(&format!("id=\"tool-{t}-t1\" data-status=\"completed\"")), "{html}");
    assert!(html.contains("<li data-status=\"pending\">first</li><li data-status=\"pending\">second</li>"));
    assert!(html.contains("12 in · 3 out tokens"), "{html}");
    assert!(html.contains(&format!("data-live=\"/conversations/{id}/live?after=")));
    // Every control is labelled; the stylesheet and script come from the binary.
    assert!(html.contains("<label for=\"f-prompt\">Message</label><textarea id=\"f-prompt\""));
    for asset in [acs_core::session::html::stylesheet(), acs_core::session::html::script()] {
        assert!(html.contains(asset), "{asset}");
        let r = browser.get(asset).await;
        assert_eq!(r.status, StatusCode::OK);
        assert!(r.headers["cache-control"].to_str().unwrap().contains("immutable"));
    }
    let csp = page.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"), "{csp}");
}

/// Reads SSE frames until `until` holds for the frames so far (or 20 s pass).
async fn frames(mut res: reqwest::Response, until: impl Fn(&[(i64, Value)]) -> bool) -> Vec<(i64, Value)> {
    let mut buf = String::new();
    let mut out: Vec<(i64, Value)> = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !until(&out) {
        let chunk = tokio::time::timeout_at(deadline, res.chunk()).await.expect("the frames came in time");
        buf.push_str(std::str::from_utf8(&chunk.unwrap().expect("the stream stays open")).unwrap());
        while let Some(end) = buf.find("\n\n") {
            let frame: String = buf.drain(..end + 2).collect();
            let mut id = None;
            let mut data = None;
            for line in frame.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = v.trim().parse().ok();
                }
                if let Some(v) = line.strip_prefix("data:") {
                    data = serde_json::from_str(v.trim()).ok();
                }
                if let Some(v) = line.strip_prefix("event:") {
                    assert_eq!(v.trim(), "ops");
                }
            }
            if let (Some(id), Some(data)) = (id, data) {
                out.push((id, data));
            }
        }
    }
    out
}

fn texts(frames: &[(i64, Value)]) -> String {
    frames
        .iter()
        .flat_map(|(_, ops)| ops.as_array().cloned().unwrap_or_default())
        .filter(|op| op["op"] == "text")
        .map(|op| op["text"].as_str().unwrap_or("").to_owned())
        .collect()
}

async fn the_live_stream_sends_each_event_once_and_resumes(b: Backend) {
    let app = scripted_app(b, &[]).await;
    let u = app.user().await;
    let agent = scripted_runtime_agent(&app, &u, "acp", json!({})).await;
    let (id, _) = conversation(&app, &u, agent, "say: first turn").await;
    let browser = signed_in(&app, &u).await;
    let live = format!("/conversations/{id}/live?after=0");
    let res = browser.request(Method::GET, &live).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    // From the start: the first turn's frame, header and text.
    let seen = frames(res, |f| {
        texts(f).contains("first turn") && f.iter().any(|(_, ops)| ops.to_string().contains("\"head\""))
    })
    .await;
    let ids: Vec<i64> = seen.iter().map(|(id, _)| *id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "in order, once: {ids:?}");
    let ops = seen.iter().flat_map(|(_, o)| o.as_array().cloned().unwrap()).collect::<Vec<_>>();
    assert_eq!(ops.iter().filter(|o| o["op"] == "turn").count(), 1, "one frame per turn");
    let last = *ids.last().unwrap();

    // A dropped connection resumes after the last id it saw: the next turn only.
    let r = app.post(&format!("/api/conversations/{id}/prompts"), &u.key, json!({"prompt": "say: second turn"})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let res = browser.request(Method::GET, &live).header("Last-Event-ID", last.to_string()).send().await.unwrap();
    let resumed = frames(res, |f| texts(f).contains("second turn")).await;
    assert!(resumed.iter().all(|(id, _)| *id > last), "nothing repeats");
    assert!(!texts(&resumed).contains("first turn"));
    // The new turn's frame is drawn (the page does not have it) with its header.
    assert!(resumed.iter().any(|(_, ops)| ops.as_array().unwrap().iter().any(|o| o["op"] == "turn")));

    // Signing out (here from another tab) ends the stream within seconds.
    let mut res = browser.request(Method::GET, &live).header("Last-Event-ID", last.to_string()).send().await.unwrap();
    let mut tab = Browser::new(&app);
    tab.cookies = browser.cookies.clone();
    let csrf = field(&tab.get("/").await.text, "csrf").unwrap();
    assert_eq!(tab.post_form("/logout", &[("csrf", &csrf)]).await.status, StatusCode::SEE_OTHER);
    let ended = tokio::time::timeout(Duration::from_secs(20), async { while let Ok(Some(_)) = res.chunk().await {} });
    assert!(ended.await.is_ok(), "the stream ended with the session");

    // Without a session the stream is not served.
    let anon = app.http.get(format!("{}{live}", app.base)).send().await.unwrap();
    assert_eq!(anon.status(), StatusCode::SEE_OTHER);
    let mut again = signed_in(&app, &u).await;
    let r = again.request(Method::GET, &live).header("Last-Event-ID", "x").send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(again.get("/").await.status, StatusCode::OK);
}

async fn forms_prompt_interrupt_and_answer_without_script(b: Backend) {
    let app = scripted_app(b, &[]).await;
    let u = app.user().await;
    let agent =
        scripted_runtime_agent(&app, &u, "acp", json!({"permission_policy": {"default": "ask", "ask_timeout": 60}}))
            .await;
    let (id, _) = conversation(&app, &u, agent, "say: ready").await;
    let mut browser = signed_in(&app, &u).await;
    let page = browser.get(&format!("/conversations/{id}")).await;
    let csrf = field(&page.text, "csrf").unwrap();
    let here = format!("/conversations/{id}");

    let r = browser.post_form(&format!("{here}/prompt"), &[("csrf", "wrong"), ("prompt", "say: no")]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = browser.post_form(&format!("{here}/prompt"), &[("csrf", &csrf), ("prompt", "   ")]).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "the API's refusal, shown: {}", r.text);
    assert!(r.text.contains("role=\"alert\""));

    // A permission request: the page offers its options as buttons; a click answers it.
    let r = browser
        .post_form(
            &format!("{here}/prompt"),
            &[("csrf", &csrf), ("prompt", "permission: t2 rm -rf build"), ("client_request_id", "req-7")],
        )
        .await;
    assert_eq!((r.status, location(&r)), (StatusCode::SEE_OTHER, here.clone()));
    let mut asked = String::new();
    for _ in 0..200 {
        asked = browser.get(&here).await.text;
        if asked.contains("Allow once</button>") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(asked.contains("<code>req-7</code>"), "client_request_id shown: {asked}");
    let action =
        asked.split("action=\"").find(|a| a.contains("/permissions/")).unwrap().split('"').next().unwrap().to_owned();
    let r = browser.post_form(&action, &[("csrf", &csrf), ("option", "allow-once")]).await;
    assert_eq!((r.status, location(&r)), (StatusCode::SEE_OTHER, here.clone()));
    let turns = finished_turns(&app, id, 2).await;
    let page = browser.get(&here).await.text;
    assert!(page.contains("permission: allow-once"), "{page}");
    assert!(page.contains("data-answered") && page.contains("Answered: allow-once."), "{page}");
    assert_eq!(turns[1].client_request_id.as_deref(), Some("req-7"));

    // With the script (JSON answers): a long turn, interrupted.
    let r = browser
        .request(Method::POST, &format!("{here}/prompt"))
        .header("Accept", "application/json")
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(format!("csrf={csrf}&prompt=sleep%3A+30000"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().await.unwrap(), json!({"ok": true}));
    // Interrupt once the turn runs (its `turn` stage started).
    for _ in 0..200 {
        let started: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM events WHERE conversation_id = $1 AND stage = 'turn' AND state = 'started'",
        )
        .bind(id.to_string())
        .fetch_one(&app.state().db.pool)
        .await
        .unwrap();
        if started == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = browser.post_form(&format!("{here}/interrupt"), &[("csrf", &csrf)]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    let turns = finished_turns(&app, id, 3).await;
    assert_eq!(turns[2].status, "interrupted");
}

async fn older_turns_come_in_whole_pages(b: Backend) {
    let app = scripted_app(b, &[]).await;
    let u = app.user().await;
    let agent = scripted_runtime_agent(&app, &u, "acp", json!({})).await;
    // Four turns of about 130 events each. The first page takes 300 events and
    // extends back to the start of the turn the cut falls in: the newest three.
    let long = |n: usize| format!("say: turn-{n}-start {}", "x".repeat(2000));
    let (id, _) = conversation(&app, &u, agent, &long(1)).await;
    for n in [2, 3, 4] {
        let r = app.post(&format!("/api/conversations/{id}/prompts"), &u.key, json!({"prompt": long(n)})).await;
        assert_eq!(r.status, StatusCode::ACCEPTED);
        finished_turns(&app, id, n).await;
    }
    let turns = crate::common::turns(&app, id).await;
    let article = |n: usize| format!("<article class=\"turn\" id=\"turn-{}\"", turns[n].id);
    let mut browser = signed_in(&app, &u).await;
    let page = browser.get(&format!("/conversations/{id}")).await.text;
    assert!(
        page.contains(&article(3)) && page.contains(&article(2)) && page.contains(&article(1)),
        "the newest whole turns"
    );
    assert!(!page.contains(&article(0)), "the oldest waits");
    let fragment = page.split("data-fragment=\"").nth(1).unwrap().split('"').next().unwrap().replace("&amp;", "&");
    let older = browser.get(&fragment).await;
    assert_eq!(older.status, StatusCode::OK);
    assert!(older.text.contains(&article(0)), "{}", older.text);
    assert!(
        !older.text.contains(&article(1)) && !older.text.contains("id=\"older\""),
        "earlier turns only, the last page"
    );
    assert_eq!(older.text.matches("<article class=\"turn\"").count(), 1);
    // Without the script, the same page as a link.
    let plain = browser.get(&format!("/conversations/{id}?before={}", fragment.rsplit('=').next().unwrap())).await;
    assert!(plain.text.contains(&article(0)) && !plain.text.contains("data-live="));
}

async fn the_sandbox_page_browses_files_redacted(b: Backend) {
    let app = scripted_app(b, &[]).await;
    let u = app.user().await;
    let r = app.post("/api/vaults", &u.key, json!({"name": "v"})).await;
    let vault = r.body["data"]["id"].as_str().unwrap().to_owned();
    let r = app
        .request(
            Method::PUT,
            &format!("/api/vaults/{vault}/secrets/TOKEN"),
            Some(&u.key),
            Some(json!({"value": "tok-9f8e7d6c5b"})),
        )
        .await;
    assert!(r.status.is_success(), "{}", r.text);
    let agent = scripted_runtime_agent(&app, &u, "acp", json!({"vault_id": vault})).await;
    let (_, c) = conversation(&app, &u, agent, "write: /workspace/config.txt token=tok-9f8e7d6c5b\nsay: ok").await;
    let machine = c["sandbox_id"].as_str().unwrap().to_owned();

    // The API's directory listing, which the file browser reads.
    let names = |r: &crate::common::Resp| -> Vec<(String, String)> {
        let entries = r.body["data"]["entries"].as_array().unwrap().iter();
        entries.map(|e| (e["name"].as_str().unwrap().to_owned(), e["kind"].as_str().unwrap().to_owned())).collect()
    };
    let r = app.get(&format!("/api/sandboxes/{machine}/directory?path=/workspace"), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert!(names(&r).contains(&("config.txt".into(), "file".into())), "{}", r.text);
    let r = app.get(&format!("/api/sandboxes/{machine}/directory?path=/"), &u.key).await;
    let root = names(&r);
    assert!(root.contains(&("workspace".into(), "directory".into())), "{root:?}");
    let first_file = root.iter().position(|(_, k)| k != "directory").unwrap_or(root.len());
    assert!(root[first_file..].iter().all(|(_, k)| k != "directory"), "directories first: {root:?}");
    let r = app.get(&format!("/api/sandboxes/{machine}/directory?path=/workspace/config.txt"), &u.key).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    let r = app.get(&format!("/api/sandboxes/{machine}/directory?path=/workspace/missing"), &u.key).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.text);
    let r = app.get(&format!("/api/sandboxes/{machine}/directory?path=relative"), &u.key).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);

    let mut browser = signed_in(&app, &u).await;
    let page = browser.get(&format!("/sandboxes/{machine}")).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(page.text.contains("/file?path=%2Fworkspace%2Fconfig.txt\">config.txt</a>"), "{}", page.text);
    let file = browser.get(&format!("/sandboxes/{machine}/file?path=%2Fworkspace%2Fconfig.txt")).await;
    assert_eq!(file.status, StatusCode::OK);
    assert!(file.text.contains("<pre id=\"file-content\">token=[REDACTED]</pre>"), "{}", file.text);
    assert!(!file.text.contains("tok-9f8e7d6c5b"));
    for view in ["diff", "changes", "egress"] {
        let r = browser.get(&format!("/sandboxes/{machine}/{view}")).await;
        assert_eq!(r.status, StatusCode::OK, "{view}: {}", r.text);
        assert!(!r.text.contains("tok-9f8e7d6c5b"));
    }
    let list = browser.get("/sandboxes").await;
    assert!(list.text.contains(&format!("href=\"/sandboxes/{machine}\"")));
}

async fn pages_of_another_account_are_not_found(b: Backend) {
    let app = scripted_app(b, &[]).await;
    let (u, other) = (app.user().await, app.user().await);
    let agent = scripted_runtime_agent(&app, &u, "acp", json!({})).await;
    let (id, c) = conversation(&app, &u, agent, "say: mine").await;
    let machine = c["sandbox_id"].as_str().unwrap();
    let mut theirs = signed_in(&app, &other).await;
    for path in [
        format!("/conversations/{id}"),
        format!("/conversations/{id}/live"),
        format!("/conversations/{id}/older?before=999999"),
        format!("/sandboxes/{machine}"),
        format!("/sandboxes/{machine}/file?path=%2Fworkspace"),
    ] {
        let r = theirs.get(&path).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}: {}", r.text);
        assert!(!r.text.contains("mine"));
    }
    let page = theirs.get("/").await;
    let csrf = field(&page.text, "csrf").unwrap();
    let r = theirs.post_form(&format!("/conversations/{id}/prompt"), &[("csrf", &csrf), ("prompt", "say: hi")]).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(crate::common::turns(&app, id).await.len(), 1);
}
