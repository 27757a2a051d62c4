//! The console's webhooks pages (`/account/webhooks`) over HTTP, as a
//! browser without script uses them: an endpoint made through the form (its
//! signing secret shown once), a test sent to a real receiver and verified
//! with that secret, the delivery log with each attempt, redelivery, a new
//! secret, resume and delete; each change checked through the API.

use std::time::Duration;

use acs_testkit::browser::{Browser, assert_labelled, field, location};
use hmac::{Hmac, KeyInit, Mac};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::common::{Backend, Resp, TestApp, User, spawn_with};
use crate::receiver::{Received, Receiver, Reply};

crate::both!(
    the_pages_need_a_session_label_their_controls_and_stay_in_their_account,
    an_endpoint_is_made_tested_redelivered_rotated_resumed_and_deleted_through_forms,
);

async fn app(b: Backend) -> TestApp {
    spawn_with(b, &[("webhooks.allow_http", json!(true)), ("webhooks.allowed_private_cidrs", json!(["127.0.0.0/8"]))])
        .await
}

async fn signed_in(app: &TestApp, u: &User) -> Browser {
    let mut b = Browser::new(app);
    b.sign_in(&u.email, &u.password).await;
    b
}

fn data(r: &Resp) -> &Value {
    assert!(r.status.is_success(), "{}", r.text);
    &r.body["data"]
}

/// The value a page shows once.
fn shown_once(html: &str) -> String {
    html.split("<code id=\"shown-once\">").nth(1).and_then(|s| s.split('<').next()).unwrap_or_default().to_owned()
}

/// Whether a delivery is signed with `secret` (docs/webhooks.md: HMAC-SHA256 over `<t>.<body>`).
fn signed_with(r: &Received, secret: &str) -> bool {
    let sig = r.signature();
    let part = |k: &str| sig.split(',').find_map(|kv| kv.strip_prefix(k)).unwrap_or_default().to_owned();
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{}.{}", part("t="), r.text()).as_bytes());
    hex::encode(mac.finalize().into_bytes()) == part("v1=")
}

/// Posts the "New endpoint" form with (csrf, url).
async fn create(b: &mut Browser, (csrf, url): (&str, &str)) -> Resp {
    let fields = [
        ("csrf", csrf),
        ("url", url),
        ("event_types", "conversation.turn.*, conversation.provision.failed"),
        ("description", "ci"),
    ];
    b.post_form("/account/webhooks", &fields).await
}

/// Waits for the endpoint's deliveries (through the API) to satisfy `done`.
async fn deliveries(app: &TestApp, key: &str, hook: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    for _ in 0..300 {
        let r = app.get(&format!("/api/webhooks/{hook}/deliveries"), key).await;
        let all = data(&r).as_array().cloned().unwrap_or_default();
        if done(&all) {
            return all;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the deliveries of {hook} did not come to the expected state");
}

async fn the_pages_need_a_session_label_their_controls_and_stay_in_their_account(b: Backend) {
    let app = app(b).await;
    let (u, other) = (app.user().await, app.user().await);
    let hook = Receiver::start().await;
    let r = app.post("/api/webhooks", &u.key, json!({"url": hook.url("/mine"), "description": "mine <b>"})).await;
    let id = data(&r)["id"].as_str().unwrap().to_owned();
    let d = app.post(&format!("/api/webhooks/{id}/test"), &u.key, json!({})).await;
    let delivery = data(&d)["id"].as_str().unwrap().to_owned();
    deliveries(&app, &u.key, &id, |all| all.iter().any(|d| d["attempt_count"].as_i64() >= Some(1))).await;

    let pages = [
        "/account/webhooks".to_owned(),
        format!("/account/webhooks/{id}"),
        format!("/account/webhooks/{id}/deliveries/{delivery}"),
    ];
    let mut mine = signed_in(&app, &u).await;
    for path in &pages {
        let r = mine.get(path).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.text);
        assert_labelled(path, &r.text);
        assert!(!r.text.contains("mine <b>"), "{path}: escaped");
    }
    let nav = mine.get("/").await.text;
    assert!(nav.contains("<a href=\"/account/webhooks\">Webhooks</a>"), "the navigation links the pages");
    let list = mine.get("/account/webhooks").await.text;
    assert!(list.contains(&format!("href=\"/account/webhooks/{id}\"")), "{list}");
    assert!(list.contains("mine &lt;b&gt;"), "{list}");

    let mut anon = Browser::new(&app);
    for path in &pages {
        let r = anon.get(path).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{path}");
        assert!(location(&r).starts_with("/login?next="), "{path}: {}", location(&r));
    }

    let mut theirs = signed_in(&app, &other).await;
    for path in &pages[1..] {
        let r = theirs.get(path).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}: {}", r.text);
        assert!(!r.text.contains("/mine"), "{path}");
    }
    let token = field(&theirs.get("/account/webhooks").await.text, "csrf").unwrap();
    for action in ["test", "rotate", "resume", "delete", &format!("deliveries/{delivery}/redeliver")] {
        let r = theirs.post_form(&format!("/account/webhooks/{id}/{action}"), &[("csrf", &token)]).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{action}: {}", r.text);
    }
    assert_eq!(app.get(&format!("/api/webhooks/{id}"), &u.key).await.status, StatusCode::OK);
    assert!(!theirs.get("/account/webhooks").await.text.contains("/mine"));
}

async fn an_endpoint_is_made_tested_redelivered_rotated_resumed_and_deleted_through_forms(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let hook = Receiver::start().await;
    hook.set_default(Reply::ok().body("thanks <b>"));
    let url = hook.url("/acs");
    let mut browser = signed_in(&app, &u).await;
    let token = field(&browser.get("/account/webhooks").await.text, "csrf").unwrap();
    let r = create(&mut browser, ("wrong", &url)).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    // A refused address is said above the form, the input kept.
    let r = create(&mut browser, (&token, "ftp://example.com/x")).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert!(r.text.contains("role=\"alert\"") && r.text.contains("value=\"ftp://example.com/x\""), "{}", r.text);
    assert!(data(&app.get("/api/webhooks", &u.key).await).as_array().unwrap().is_empty());

    let r = create(&mut browser, (&token, &url)).await;
    assert_eq!(r.status, StatusCode::OK, "the secret on the page, never in an address: {}", r.text);
    let secret = shown_once(&r.text);
    assert!(secret.starts_with("whsec_"), "{}", r.text);
    let all = data(&app.get("/api/webhooks", &u.key).await).clone();
    let e = all[0].clone();
    assert_eq!((e["url"].as_str(), e["description"].as_str()), (Some(url.as_str()), Some("ci")));
    assert_eq!(e["event_types"], json!(["conversation.turn.*", "conversation.provision.failed"]));
    let id = e["id"].as_str().unwrap().to_owned();
    let list = browser.get("/account/webhooks").await.text;
    assert!(!list.contains(&secret) && !list.contains("shown-once"), "shown once only");

    // Send test: delivered, signed with the secret shown.
    let here = format!("/account/webhooks/{id}");
    let r = browser.post_form(&format!("{here}/test"), &[("csrf", &token)]).await;
    assert_eq!((r.status, location(&r)), (StatusCode::SEE_OTHER, here.clone()), "{}", r.text);
    let got = hook.wait_for(1).await;
    assert_eq!(got[0].event_type(), "webhook.test");
    assert!(signed_with(&got[0], &secret), "signed with the secret shown once");
    let done = deliveries(&app, &u.key, &id, |all| all.iter().any(|d| d["status"] == "succeeded")).await;
    let delivery = done[0]["id"].as_str().unwrap().to_owned();
    let page = browser.get(&here).await.text;
    assert!(!page.contains(&secret));
    assert!(page.contains(&format!("href=\"{here}/deliveries/{delivery}\">webhook.test</a>")), "{page}");
    assert!(page.contains("succeeded") && !page.contains(">Resume</button>"), "{page}");
    let attempts = browser.get(&format!("{here}/deliveries/{delivery}")).await;
    assert_eq!(attempts.status, StatusCode::OK);
    assert!(attempts.text.contains("<td>200</td>"), "{}", attempts.text);
    assert!(attempts.text.contains("thanks &lt;b&gt;") && !attempts.text.contains("thanks <b>"), "escaped body");

    // Redeliver: a second attempt of the same delivery.
    let r = browser.post_form(&format!("{here}/deliveries/{delivery}/redeliver"), &[("csrf", &token)]).await;
    assert_eq!((r.status, location(&r)), (StatusCode::SEE_OTHER, here.clone()), "{}", r.text);
    hook.wait_for(2).await;
    deliveries(&app, &u.key, &id, |all| all.iter().any(|d| d["attempt_count"].as_i64() == Some(2))).await;

    // Rotate: a new secret, shown once, signs what follows.
    let r = browser.post_form(&format!("{here}/rotate"), &[("csrf", &token)]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let rotated = shown_once(&r.text);
    assert!(rotated.starts_with("whsec_") && rotated != secret);
    assert!(!browser.get(&here).await.text.contains(&rotated));
    browser.post_form(&format!("{here}/test"), &[("csrf", &token)]).await;
    let got = hook.wait_for(3).await;
    assert!(signed_with(&got[2], &rotated) && !signed_with(&got[2], &secret));

    // Disabled (here by its owner): the page offers Resume.
    let off = json!({"status": "disabled"});
    let r = app.request(Method::PATCH, &format!("/api/webhooks/{id}"), Some(&u.key), Some(off)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let page = browser.get(&here).await.text;
    assert!(page.contains(&format!("action=\"{here}/resume\"")) && page.contains(">Resume</button>"), "{page}");
    let r = browser.post_form(&format!("{here}/resume"), &[("csrf", &token)]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.text);
    assert_eq!(data(&app.get(&format!("/api/webhooks/{id}"), &u.key).await)["status"], "active");

    // Delete.
    let r = browser.post_form(&format!("{here}/delete"), &[("csrf", "wrong")]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = browser.post_form(&format!("{here}/delete"), &[("csrf", &token)]).await;
    assert_eq!((r.status, location(&r)), (StatusCode::SEE_OTHER, "/account/webhooks".to_owned()));
    assert_eq!(app.get(&format!("/api/webhooks/{id}"), &u.key).await.status, StatusCode::NOT_FOUND);
    assert_eq!(browser.get(&here).await.status, StatusCode::NOT_FOUND);
}
