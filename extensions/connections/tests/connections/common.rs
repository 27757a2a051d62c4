//! A real OAuth provider on loopback, and a person's browser driving its
//! login and consent forms.

use std::collections::BTreeMap;
use std::process::Stdio;

use acs_core::features;
pub use acs_testkit::browser::Browser;
pub use acs_testkit::{Backend, Resp, TestApp, User, assert_error, spawn_with};
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub const CLIENT_ID: &str = "acs-test-client";
pub const CLIENT_SECRET: &str = "a client secret no answer may show";

/// A server with the flag on and `http://` providers allowed.
pub async fn app(b: Backend) -> TestApp {
    spawn_with(
        b,
        &[
            ("features.connections", json!(true)),
            ("connections.allow_http", json!(true)),
            ("connections.poll_seconds", json!(1)),
        ],
    )
    .await
}

/// Turns the flag on or off while the server runs (as an operator would).
pub async fn set_flag(app: &TestApp, on: bool) {
    let state = app.state();
    let by = features::Changer { actor: "cli".into(), ip: None };
    features::store(&state.db, "connections", Some(on), &by).await.unwrap();
    features::refresh(state).await.unwrap();
}

/// panva's oidc-provider, one process per test.
pub struct Idp {
    pub issuer: String,
    http: reqwest::Client,
    _child: Child,
}

impl Idp {
    /// A provider that knows one confidential client redirecting to `redirect_uri`.
    pub async fn start(redirect_uri: &str, access_token_ttl: u64) -> Idp {
        Idp::start_with(redirect_uri, access_token_ttl, json!({})).await
    }

    /// The same, with more of the provider's configuration (provider.mjs).
    pub async fn start_with(redirect_uri: &str, access_token_ttl: u64, extra: Value) -> Idp {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/provider");
        assert!(
            dir.join("node_modules/oidc-provider").exists(),
            "the test provider is not installed: run `npm ci --prefix {}`",
            dir.display()
        );
        let mut config = json!({
            "clients": [{"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "redirect_uris": [redirect_uri]}],
            "access_token_ttl": access_token_ttl,
        });
        config.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
        let mut child = Command::new("node")
            .arg("provider.mjs")
            .current_dir(&dir)
            .env("PROVIDER_CONFIG", config.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line())
            .await
            .expect("the provider starts within 30 s")
            .unwrap()
            .expect("the provider prints its issuer");
        let issuer = serde_json::from_str::<Value>(&first).unwrap()["issuer"].as_str().unwrap().to_owned();
        // The rest of its output is not read; keep the pipe drained.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        Idp { issuer, http, _child: child }
    }

    /// Revokes every grant it made (the person disconnects the app at the provider).
    pub async fn revoke_grants(&self) {
        let r = self.http.post(format!("{}/test/revoke-grants", self.issuer)).send().await.unwrap();
        assert!(r.status().is_success());
    }

    pub async fn stats(&self) -> Value {
        self.http.get(format!("{}/test/stats", self.issuer)).send().await.unwrap().json().await.unwrap()
    }

    /// Whether the provider accepts `token` as a live access token (RFC 7662 introspection).
    pub async fn token_active(&self, token: &str) -> bool {
        let body = form(&[("token", token)]);
        let r = self
            .http
            .post(format!("{}/token/introspection", self.issuer))
            .basic_auth(CLIENT_ID, Some(CLIENT_SECRET))
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        r.json::<Value>().await.unwrap()["active"] == true
    }
}

fn form(fields: &[(&str, &str)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in fields {
        s.append_pair(k, v);
    }
    s.finish()
}

/// The provider's part of a browser: keeps the provider's cookies, follows
/// its redirects, fills its login form (any login) and approves its consent
/// form, until it sends the browser back to acs. Returns that address.
pub async fn through_provider(app: &TestApp, first: &str) -> String {
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let mut cookies: BTreeMap<String, String> = BTreeMap::new();
    let mut url = reqwest::Url::parse(first).unwrap();
    let mut post: Option<String> = None;
    for _ in 0..20 {
        if url.as_str().starts_with(&app.base) {
            return url.to_string();
        }
        let cookie = cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ");
        let req = match post.take() {
            Some(body) => http.post(url.clone()).header(CONTENT_TYPE, "application/x-www-form-urlencoded").body(body),
            None => http.get(url.clone()),
        };
        let res = req.header(COOKIE, cookie).send().await.unwrap();
        for v in res.headers().get_all(SET_COOKIE) {
            let v = v.to_str().unwrap();
            let pair = v.split(';').next().unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            if value.is_empty() || v.contains("expires=Thu, 01 Jan 1970") {
                cookies.remove(name.trim());
            } else {
                cookies.insert(name.trim().to_owned(), value.trim().to_owned());
            }
        }
        let status = res.status();
        if status.is_redirection() {
            let to = res.headers()[LOCATION].to_str().unwrap().to_owned();
            url = url.join(&to).unwrap();
            continue;
        }
        let html = res.text().await.unwrap();
        assert_eq!(status, StatusCode::OK, "the provider's page: {html}");
        let action =
            html.split("action=\"").nth(1).and_then(|s| s.split('"').next()).expect("a form").replace("&amp;", "&");
        let prompt = acs_testkit::browser::field(&html, "prompt").expect("an interaction form");
        post = Some(match prompt.as_str() {
            "login" => form(&[("prompt", "login"), ("login", "alice"), ("password", "anything")]),
            _ => form(&[("prompt", prompt.as_str())]),
        });
        url = url.join(&action).unwrap();
    }
    panic!("the provider never sent the browser back to acs");
}

/// A person signed in to acs in a browser.
pub async fn signed_in(app: &TestApp, u: &User) -> Browser {
    let mut b = Browser::new(app);
    b.sign_in(&u.email, &u.password).await;
    b
}

/// The path and query of an address of acs.
pub fn local(app: &TestApp, url: &str) -> String {
    url.strip_prefix(&app.base).expect("an address of acs").to_owned()
}

/// Adds a provider named `slug` for `issuer` and runs its discovery; returns its id.
pub async fn discovered_provider(app: &TestApp, u: &User, slug: &str, issuer: &str) -> String {
    let r = app
        .post(
            "/api/connection-providers",
            &u.key,
            json!({
                "slug": slug, "name": "Test IdP", "issuer": issuer,
                "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
                "scopes": ["openid", "offline_access"], "hosts": ["api.idp.test", "*.idp.test"],
            }),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let id = r.body["data"]["id"].as_str().unwrap().to_owned();
    let r = app.post(&format!("/api/connection-providers/{id}/discover"), &u.key, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    id
}

/// Runs the whole browser flow for provider `slug`; returns the final page.
pub async fn connect(app: &TestApp, browser: &mut Browser, slug: &str) -> Resp {
    let r = browser.get(&format!("/connections/{slug}/start")).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.text);
    let to_provider = acs_testkit::browser::location(&r);
    let back = through_provider(app, &to_provider).await;
    browser.get(&local(app, &back)).await
}

/// A provider, an account, and a connection made through the browser flow.
pub struct Connected {
    pub app: TestApp,
    pub idp: Idp,
    pub user: User,
    pub connection_id: String,
}

pub async fn connected(b: Backend, access_token_ttl: u64, overrides: &[(&str, Value)]) -> Connected {
    let mut config = vec![
        ("features.connections", json!(true)),
        ("connections.allow_http", json!(true)),
        ("connections.poll_seconds", json!(1)),
    ];
    config.extend(overrides.iter().cloned());
    let app = spawn_with(b, &config).await;
    let idp = Idp::start(&format!("{}/connections/idp/callback", app.base), access_token_ttl).await;
    let user = app.user().await;
    discovered_provider(&app, &user, "idp", &idp.issuer).await;
    let mut browser = signed_in(&app, &user).await;
    let page = connect(&app, &mut browser, "idp").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(page.text.contains("Connected"), "{}", page.text);
    let list = app.get("/api/connections", &user.key).await;
    let connection_id = list.body["data"][0]["id"].as_str().expect("a connection").to_owned();
    Connected { app, idp, user, connection_id }
}

/// What the binding source gives for a connection (as core's broker asks).
pub async fn source_value(app: &TestApp, account: &str, id: &str) -> Option<acs_core::extension::SourceValue> {
    let state = app.state();
    let source = state
        .extensions
        .binding_sources
        .iter()
        .find(|s| s.key() == "connection_id")
        .expect("the connections binding source is registered");
    source.value(state, account.parse().unwrap(), id.parse().unwrap()).await.unwrap()
}
