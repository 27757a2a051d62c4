//! OAuth clients, the consent page, the PKCE token exchange (driven by the
//! stock `oauth2` crate as an app would) and CORS.

use acs_testkit::browser::{Browser, field, form_body, location};
use oauth2::basic::BasicClient;
use oauth2::{
    AuthUrl, AuthorizationCode, ClientId, CsrfToken, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, TokenResponse,
    TokenUrl,
};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::both;
use crate::common::{Backend, Resp, TestApp, User, assert_error, assert_refused, into_resp, spawn, spawn_with};

both!(
    clients_are_registered_with_exact_safe_redirects,
    twenty_five_clients_per_account,
    a_stock_oauth_client_signs_in_with_pkce,
    token_exchange_refusals_follow_rfc_6749,
    authorize_errors_never_redirect_to_unverified_addresses,
    development_mode_until_an_operator_publishes,
    cors_admits_registered_and_configured_origins_only,
    failed_exchanges_spend_the_failed_authentication_allowance,
    a_replica_learns_new_origins_within_its_reload_period,
);

const APP_REDIRECT: &str = "http://127.0.0.1:9/callback";

async fn client(app: &TestApp, u: &User, name: &str, uris: &[&str]) -> Value {
    let r = app.post("/api/oauth/clients", &u.key, json!({"name": name, "redirect_uris": uris})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"].clone()
}

async fn request(app: &TestApp, method: reqwest::Method, path: &str, key: &str, body: Value) -> Resp {
    app.request(method, path, Some(key), Some(body)).await
}

async fn clients_are_registered_with_exact_safe_redirects(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let c = client(&app, &u, "Notes app", &["https://notes.example/cb", "http://localhost:3000/cb"]).await;
    assert_eq!(c["client_id"], c["id"]);
    assert_eq!(c["published"], false);
    assert_eq!(c["redirect_uris"], json!(["https://notes.example/cb", "http://localhost:3000/cb"]));
    let id = c["id"].as_str().unwrap();

    for (uris, field_name) in [
        (json!([]), "redirect_uris"),
        (json!(["http://notes.example/cb"]), "redirect_uris[0]"),
        (json!(["https://notes.example/cb#x"]), "redirect_uris[0]"),
        (json!(["https://a.example/cb", "notes"]), "redirect_uris[1]"),
        (json!(["https://a.example/cb", "https://a.example/cb"]), "redirect_uris[1]"),
    ] {
        let r = app.post("/api/oauth/clients", &u.key, json!({"name": "x", "redirect_uris": uris})).await;
        assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
        assert!(r.body["errors"][field_name].is_array(), "{field_name}: {}", r.text);
    }
    let r = app.post("/api/oauth/clients", &u.key, json!({"name": " ", "redirect_uris": [APP_REDIRECT]})).await;
    assert!(r.body["errors"]["name"].is_array(), "{}", r.text);
    let r =
        app.post("/api/oauth/clients", &u.key, json!({"name": "n".repeat(201), "redirect_uris": [APP_REDIRECT]})).await;
    assert!(r.body["errors"]["name"].is_array(), "{}", r.text);
    client(&app, &u, &"n".repeat(200), &[APP_REDIRECT]).await;

    // PATCH: an omitted field stays; redirect_uris is replaced whole.
    let r =
        request(&app, reqwest::Method::PATCH, &format!("/api/oauth/clients/{id}"), &u.key, json!({"name": "Notes"}))
            .await;
    assert_eq!(r.body["data"]["name"], "Notes", "{}", r.text);
    assert_eq!(r.body["data"]["redirect_uris"].as_array().unwrap().len(), 2);
    let r = request(
        &app,
        reqwest::Method::PATCH,
        &format!("/api/oauth/clients/{id}"),
        &u.key,
        json!({"redirect_uris": ["https://notes.example/v2"]}),
    )
    .await;
    assert_eq!(r.body["data"]["redirect_uris"], json!(["https://notes.example/v2"]));
    assert_eq!(r.body["data"]["name"], "Notes");

    let other = app.user().await;
    assert_error(&app.get(&format!("/api/oauth/clients/{id}"), &other.key).await, StatusCode::NOT_FOUND, "not_found");
    assert_eq!(app.get("/api/oauth/clients", &other.key).await.body["data"], json!([]));
    let restricted = app.post("/api/keys", &u.key, json!({"name": "r", "scope": "restricted"})).await;
    let restricted = restricted.body["data"]["api_key"].as_str().unwrap().to_owned();
    assert_refused(&app.get("/api/oauth/clients", &restricted).await, StatusCode::FORBIDDEN, "insufficient_scope");
    assert_eq!(app.get("/api/oauth/clients", &u.key).await.body["data"].as_array().unwrap().len(), 2);
    assert_eq!(app.delete(&format!("/api/oauth/clients/{id}"), &u.key).await.status, StatusCode::NO_CONTENT);
    assert_eq!(app.get(&format!("/api/oauth/clients/{id}"), &u.key).await.status, StatusCode::NOT_FOUND);
}

async fn twenty_five_clients_per_account(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    for i in 0..25 {
        client(&app, &u, &format!("c{i}"), &[APP_REDIRECT]).await;
    }
    let r = app.post("/api/oauth/clients", &u.key, json!({"name": "c25", "redirect_uris": [APP_REDIRECT]})).await;
    assert_error(&r, StatusCode::CONFLICT, "oauth_client_limit_reached");
    assert_eq!((r.body["count"].as_i64(), r.body["limit"].as_i64()), (Some(25), Some(25)));
    // Another account has its own 25.
    let other = app.user().await;
    client(&app, &other, "mine", &[APP_REDIRECT]).await;
}

/// oauth2's HTTP client, over the tests' reqwest.
async fn send(request: oauth2::HttpRequest) -> Result<oauth2::HttpResponse, reqwest::Error> {
    let http = reqwest::Client::new();
    let req = reqwest::Request::try_from(request).expect("an oauth2 request converts");
    let res = http.execute(req).await?;
    let mut out = oauth2::http::Response::builder().status(res.status().as_u16());
    for (k, v) in res.headers() {
        out = out.header(k.as_str(), v.as_bytes());
    }
    Ok(out.body(res.bytes().await?.to_vec()).unwrap())
}

fn stock_client(
    app: &TestApp,
    client_id: &str,
) -> oauth2::basic::BasicClient<
    oauth2::EndpointSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointSet,
> {
    BasicClient::new(ClientId::new(client_id.to_owned()))
        .set_auth_uri(AuthUrl::new(format!("{}/oauth/authorize", app.base)).unwrap())
        .set_token_uri(TokenUrl::new(format!("{}/api/oauth/token", app.base)).unwrap())
        .set_redirect_uri(RedirectUrl::new(APP_REDIRECT.to_owned()).unwrap())
}

/// Approves on the consent page in `browser` and returns the redirect's query pairs.
async fn approve(browser: &mut Browser, authorize_url: &str, decision: &str) -> Vec<(String, String)> {
    let page = browser.get(authorize_url).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    let mut fields: Vec<(String, String)> = Vec::new();
    for name in
        ["csrf", "response_type", "client_id", "redirect_uri", "state", "code_challenge", "code_challenge_method"]
    {
        fields.push((name.into(), field(&page.text, name).unwrap_or_default()));
    }
    fields.push(("decision".into(), decision.into()));
    let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let r = browser.post_form("/oauth/authorize", &pairs).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.text);
    let to = location(&r);
    assert!(to.starts_with(&format!("{APP_REDIRECT}?")), "{to}");
    reqwest::Url::parse(&to).unwrap().query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
}

fn param<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

async fn a_stock_oauth_client_signs_in_with_pkce(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let c = client(&app, &u, "Notes <app>", &[APP_REDIRECT]).await;
    let oauth = stock_client(&app, c["client_id"].as_str().unwrap());
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, csrf) = oauth.authorize_url(CsrfToken::new_random).set_pkce_challenge(challenge).url();
    let path = url.as_str().strip_prefix(&app.base).unwrap().to_owned();

    // Not signed in: the consent page sends the person to sign in and back.
    let mut browser = Browser::new(&app);
    let r = browser.get(&path).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    let to = location(&r);
    assert!(to.starts_with("/login?next=%2Foauth%2Fauthorize%3F"), "{to}");
    browser.sign_in(&u.email, &u.password).await;
    let page = browser.get(&path).await;
    assert!(page.text.contains("Allow Notes &lt;app&gt;?"), "the name is shown, escaped: {}", page.text);
    assert!(page.text.contains("http://127.0.0.1:9"), "the destination is named");
    // Consent must not be clickjacked, nor its CSRF token cached.
    assert_eq!(page.headers["x-frame-options"], "DENY");
    assert!(page.headers["content-security-policy"].to_str().unwrap().contains("frame-ancestors 'none'"));
    assert_eq!(page.headers["cache-control"], "no-store");

    let back = approve(&mut browser, &path, "approve").await;
    assert_eq!(param(&back, "state"), Some(csrf.secret().as_str()), "state comes back");
    let code = param(&back, "code").unwrap().to_owned();
    let token = oauth
        .exchange_code(AuthorizationCode::new(code.clone()))
        .set_pkce_verifier(verifier)
        .request_async(&send)
        .await
        .expect("the code exchanges");
    let key = token.access_token().secret().clone();
    assert!(key.starts_with("acs_"));
    assert_eq!(token.token_type().as_ref(), "bearer");
    let expires = token.expires_in().unwrap().as_secs();
    assert_eq!(expires, 30 * 24 * 3600);
    let me = app.get("/api/auth/me", &key).await;
    assert_eq!(me.body["data"]["email"], u.email.as_str());
    assert_eq!(me.body["data"]["key"]["scope"], "full");
    let keys = app.get("/api/keys", &u.key).await;
    let issued = keys.body["data"].as_array().unwrap().iter().find(|k| k["name"] == "Notes <app>").unwrap().clone();
    assert!(issued["expires_at"].is_string());

    // The code works once; a replay fails and revokes the key it gave.
    let replay = oauth
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(PkceCodeVerifier::new("x".repeat(43)))
        .request_async(&send)
        .await;
    assert!(format!("{replay:?}").contains("invalid_grant"), "{replay:?}");
    assert_eq!(app.get("/api/auth/me", &key).await.status, StatusCode::UNAUTHORIZED, "revoked after the replay");
}

/// A code issued by approving through a bearer key (a programmatic consent).
async fn code_for(app: &TestApp, u: &User, client_id: &str, challenge: &str) -> String {
    let r = app
        .http
        .post(format!("{}/oauth/authorize", app.base))
        .bearer_auth(&u.key)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_body(&[
            ("response_type", "code"),
            ("client_id", client_id),
            ("redirect_uri", APP_REDIRECT),
            ("state", "s1"),
            ("code_challenge", challenge),
            ("code_challenge_method", "S256"),
            ("decision", "approve"),
        ]))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let to = r.headers()["location"].to_str().unwrap().to_owned();
    let url = reqwest::Url::parse(&to).unwrap();
    url.query_pairs().find(|(k, _)| k == "code").unwrap().1.into_owned()
}

async fn exchange(app: &TestApp, fields: &[(&str, &str)]) -> Resp {
    into_resp(
        app.http
            .post(format!("{}/api/oauth/token", app.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form_body(fields))
            .send()
            .await
            .unwrap(),
    )
    .await
}

#[track_caller]
fn assert_oauth_error(r: &Resp, error: &str) {
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text);
    assert_eq!(r.body["error"], error, "{}", r.text);
    assert!(r.body["error_description"].is_string(), "{}", r.text);
    assert_eq!(r.headers["cache-control"], "no-store");
}

async fn token_exchange_refusals_follow_rfc_6749(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let c = client(&app, &u, "App", &[APP_REDIRECT]).await;
    let id = c["client_id"].as_str().unwrap();
    let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
    let code = code_for(&app, &u, id, challenge).await;
    let good = |code: &str| {
        vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code.to_owned()),
            ("redirect_uri", APP_REDIRECT.to_owned()),
            ("client_id", id.to_owned()),
            ("code_verifier", verifier.to_owned()),
        ]
    };
    let with = |code: &str, name: &str, value: &str| -> Vec<(String, String)> {
        good(code).into_iter().map(|(k, v)| (k.to_owned(), if k == name { value.to_owned() } else { v })).collect()
    };
    let as_refs = |v: &[(String, String)]| -> Vec<(String, String)> { v.to_vec() };
    async fn post(app: &TestApp, v: Vec<(String, String)>) -> Resp {
        let pairs: Vec<(&str, &str)> = v.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        exchange(app, &pairs).await
    }
    // A wrong verifier, and a redirect URI one character off: refused, and the code still stands.
    assert_oauth_error(
        &post(&app, with(&code, "code_verifier", &format!("{}j", &verifier[..42]))).await,
        "invalid_grant",
    );
    assert_oauth_error(&post(&app, with(&code, "redirect_uri", "http://127.0.0.1:9/callbacK")).await, "invalid_grant");
    assert_oauth_error(&post(&app, with(&code, "client_id", &uuid::Uuid::nil().to_string())).await, "invalid_client");
    assert_oauth_error(&post(&app, with(&code, "grant_type", "password")).await, "unsupported_grant_type");
    assert_oauth_error(&post(&app, with(&code, "code", "acsc_nothing")).await, "invalid_grant");
    let missing: Vec<(String, String)> =
        as_refs(&with(&code, "x", "")).into_iter().filter(|(k, _)| k != "code_verifier").collect();
    assert_oauth_error(&post(&app, missing).await, "invalid_request");
    // JSON is taken too; this exchange succeeds.
    let fields: serde_json::Map<String, Value> =
        good(&code).into_iter().map(|(k, v)| (k.to_owned(), Value::String(v))).collect();
    let r = app.public_post("/api/oauth/token", Value::Object(fields)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["token_type"], "Bearer");
    assert!(r.body.get("data").is_none(), "RFC 6749 shape, not wrapped");
    assert_eq!(r.headers["cache-control"], "no-store");
    // Other types of body are refused.
    let r = into_resp(
        app.http
            .post(format!("{}/api/oauth/token", app.base))
            .header("content-type", "text/plain")
            .body("x")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    // Expired: ten minutes pass (the row is aged instead).
    let late = code_for(&app, &u, id, challenge).await;
    sqlx::query("UPDATE oauth_codes SET expires_at = 1 WHERE used_at IS NULL")
        .execute(&app.state().db.pool)
        .await
        .unwrap();
    assert_oauth_error(&post(&app, with(&late, "x", "")).await, "invalid_grant");
    // Codes are stored as digests only.
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM oauth_codes WHERE code_hash = $1")
        .bind(late)
        .fetch_one(&app.state().db.pool)
        .await
        .unwrap();
    assert_eq!(n, 0);
}

async fn authorize_errors_never_redirect_to_unverified_addresses(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let c = client(&app, &u, "App", &[APP_REDIRECT]).await;
    let id = c["client_id"].as_str().unwrap().to_owned();
    let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
    let url = |overrides: &[(&str, &str)]| {
        let mut fields = vec![
            ("response_type", "code"),
            ("client_id", id.as_str()),
            ("redirect_uri", APP_REDIRECT),
            ("state", "xyz"),
            ("code_challenge", challenge),
            ("code_challenge_method", "S256"),
        ];
        for (k, v) in overrides {
            fields.retain(|(name, _)| name != k);
            if !v.is_empty() {
                fields.push((k, v));
            }
        }
        format!("/oauth/authorize?{}", form_body(&fields))
    };
    // Unknown client or unregistered redirect: a page, never a redirect.
    for bad in [
        url(&[("client_id", &uuid::Uuid::new_v4().to_string())]),
        url(&[("client_id", "not-an-id")]),
        url(&[("redirect_uri", "http://127.0.0.1:9/callbacK")]),
        url(&[("redirect_uri", "https://evil.example/cb")]),
        url(&[("redirect_uri", "")]),
    ] {
        let r = app.get(&bad, &u.key).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}");
        assert!(r.headers.get("location").is_none(), "{bad}");
    }
    // Other errors go back to the app with `state`.
    for (bad, error) in [
        (url(&[("response_type", "token")]), "unsupported_response_type"),
        (url(&[("code_challenge_method", "plain")]), "invalid_request"),
        (url(&[("code_challenge_method", "")]), "invalid_request"),
        (url(&[("code_challenge", "")]), "invalid_request"),
        (url(&[("code_challenge", "short")]), "invalid_request"),
    ] {
        let r = app.get(&bad, &u.key).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{bad}");
        let to = reqwest::Url::parse(&location(&r)).unwrap();
        let pairs: Vec<(String, String)> = to.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        assert_eq!(param(&pairs, "error"), Some(error), "{bad}");
        assert_eq!(param(&pairs, "state"), Some("xyz"));
    }
    // Deny, from a signed-in browser.
    let mut browser = Browser::new(&app);
    browser.sign_in(&u.email, &u.password).await;
    let back = approve(&mut browser, &url(&[]), "deny").await;
    assert_eq!(param(&back, "error"), Some("access_denied"));
    assert_eq!(param(&back, "state"), Some("xyz"));
    assert!(param(&back, "code").is_none());
    // A cross-site post carries the cookie, not the token.
    let r = browser
        .post_form(
            "/oauth/authorize",
            &[
                ("response_type", "code"),
                ("client_id", &id),
                ("redirect_uri", APP_REDIRECT),
                ("code_challenge", challenge),
                ("code_challenge_method", "S256"),
                ("decision", "approve"),
            ],
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM oauth_codes").fetch_one(&app.state().db.pool).await.unwrap();
    assert_eq!(n, 0, "no code was issued");
}

async fn development_mode_until_an_operator_publishes(b: Backend) {
    let app = spawn(b).await;
    let owner = app.user().await;
    let c = client(&app, &owner, "Beta app", &[APP_REDIRECT]).await;
    let id = c["client_id"].as_str().unwrap().to_owned();
    let other = app.user().await;
    let oauth = stock_client(&app, &id);
    let (challenge, _) = PkceCodeChallenge::new_random_sha256();
    let (url, _) = oauth.authorize_url(CsrfToken::new_random).set_pkce_challenge(challenge).url();
    let path = url.as_str().strip_prefix(&app.base).unwrap().to_owned();
    let r = app.get(&path, &other.key).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    assert!(r.text.contains("in development") && r.headers.get("location").is_none());
    assert_eq!(app.get(&path, &owner.key).await.status, StatusCode::OK);

    // The operator publishes it with the command line, on the server's database.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_acs"))
        .args(["oauth-clients", "publish", &id])
        .envs(app.config_env())
        .current_dir(&app.dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_acs"))
        .args(["oauth-clients", "publish", &uuid::Uuid::new_v4().to_string()])
        .envs(app.config_env())
        .current_dir(&app.dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(app.get(&path, &other.key).await.status, StatusCode::OK, "published: anyone may sign in");
    let got = app.get(&format!("/api/oauth/clients/{id}"), &owner.key).await;
    assert_eq!(got.body["data"]["published"], true);
    let r =
        request(&app, reqwest::Method::PATCH, &format!("/api/oauth/clients/{id}"), &owner.key, json!({"name": "x"}))
            .await;
    assert_error(&r, StatusCode::CONFLICT, "oauth_client_published");
    assert_error(
        &app.delete(&format!("/api/oauth/clients/{id}"), &owner.key).await,
        StatusCode::CONFLICT,
        "oauth_client_published",
    );
}

async fn preflight(app: &TestApp, path: &str, origin: &str) -> Resp {
    into_resp(
        app.http
            .request(reqwest::Method::OPTIONS, format!("{}{path}", app.base))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "authorization, content-type")
            .send()
            .await
            .unwrap(),
    )
    .await
}

async fn with_origin(app: &TestApp, path: &str, key: &str, origin: &str) -> Resp {
    into_resp(
        app.http.get(format!("{}{path}", app.base)).bearer_auth(key).header("origin", origin).send().await.unwrap(),
    )
    .await
}

async fn cors_admits_registered_and_configured_origins_only(b: Backend) {
    let app =
        spawn_with(b, &[("cors.allowed_origins", json!(["http://localhost:3000", "https://portal.example:443"]))])
            .await;
    let u = app.user().await;
    let c = client(&app, &u, "Web app", &["https://notes.example/auth/cb"]).await;
    for origin in ["https://notes.example", "http://localhost:3000"] {
        let r = preflight(&app, "/api/agents", origin).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{origin}: {}", r.text);
        assert_eq!(r.headers["access-control-allow-origin"], origin);
        let allowed = r.headers["access-control-allow-headers"].to_str().unwrap();
        for h in ["authorization", "content-type", "last-event-id", "idempotency-key"] {
            assert!(allowed.contains(h), "{h}");
        }
        assert!(r.headers.get("access-control-allow-credentials").is_none());
        let r = with_origin(&app, "/api/auth/me", &u.key, origin).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.headers["access-control-allow-origin"], origin);
        assert!(r.headers.get("access-control-allow-credentials").is_none());
        assert!(r.headers.get_all("vary").iter().any(|v| v == "origin"));
    }
    // A configured default port matches the Origin browsers send, which leaves it out.
    let r = preflight(&app, "/api/agents", "https://portal.example").await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(r.headers["access-control-allow-origin"], "https://portal.example");
    // Refusals reach allowed apps readable, too.
    let r = with_origin(&app, "/api/auth/me", "acs_wrong", "https://notes.example").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_eq!(r.headers["access-control-allow-origin"], "https://notes.example");
    // An unregistered origin, or one a character off: no CORS headers at all.
    for origin in ["https://evil.example", "https://notes.example.evil", "http://notes.example", "null"] {
        let r = preflight(&app, "/api/agents", origin).await;
        assert!(r.headers.get("access-control-allow-origin").is_none(), "{origin}");
        assert_ne!(r.status, StatusCode::NO_CONTENT, "{origin}");
        let r = with_origin(&app, "/api/auth/me", &u.key, origin).await;
        assert!(r.headers.get("access-control-allow-origin").is_none(), "{origin}");
    }
    // Pages are not CORS resources.
    let r = preflight(&app, "/login", "https://notes.example").await;
    assert!(r.headers.get("access-control-allow-origin").is_none());
    // Removing the client removes its origin (at once on this server).
    let id = c["id"].as_str().unwrap();
    assert_eq!(app.delete(&format!("/api/oauth/clients/{id}"), &u.key).await.status, StatusCode::NO_CONTENT);
    let r = preflight(&app, "/api/agents", "https://notes.example").await;
    assert!(r.headers.get("access-control-allow-origin").is_none());
}

async fn failed_exchanges_spend_the_failed_authentication_allowance(b: Backend) {
    let app =
        spawn_with(b, &[("limits.failed_auth_per_address", json!(3)), ("limits.window_seconds", json!(3600))]).await;
    let u = app.user().await;
    let c = client(&app, &u, "App", &[APP_REDIRECT]).await;
    let id = c["client_id"].as_str().unwrap();
    let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    let code = code_for(&app, &u, id, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM").await;
    let fields = |verifier: &'static str, client: &'static str| {
        [
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", APP_REDIRECT),
            ("client_id", if client.is_empty() { id } else { client }),
            ("code_verifier", verifier),
        ]
    };
    // Three failures (a wrong verifier, an unknown client) spend an allowance of three...
    let wrong = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXj";
    assert_oauth_error(&exchange(&app, &fields(wrong, "")).await, "invalid_grant");
    assert_oauth_error(&exchange(&app, &fields(wrong, "")).await, "invalid_grant");
    assert_oauth_error(
        &exchange(&app, &fields(verifier, "00000000-0000-0000-0000-000000000000")).await,
        "invalid_client",
    );
    // ...after which even the right verifier is refused, with a time to come back.
    let r = exchange(&app, &fields(verifier, "")).await;
    assert_error(&r, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    assert!(r.headers.get("retry-after").is_some());
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM oauth_codes WHERE used_at IS NULL")
        .fetch_one(&app.state().db.pool)
        .await
        .unwrap();
    assert_eq!(n, 1, "the refused exchange did not spend the code");
}

async fn a_replica_learns_new_origins_within_its_reload_period(b: Backend) {
    let app = spawn(b).await;
    let replica = app.replica().await;
    let other = format!("http://{}", replica.addr);
    let u = app.user().await;
    let origin = "https://late.example";
    let on_replica = || async {
        let r = app
            .http
            .request(reqwest::Method::OPTIONS, format!("{other}/api/agents"))
            .header("origin", origin)
            .header("access-control-request-method", "GET")
            .send()
            .await
            .unwrap();
        (r.status(), r.headers().get("access-control-allow-origin").cloned())
    };
    // The replica has read the origins (none) and keeps its copy...
    assert_eq!(on_replica().await.1, None);
    client(&app, &u, "Late app", &["https://late.example/cb"]).await;
    // ...for at most its reload period (5 s), then admits the new origin.
    let start = std::time::Instant::now();
    loop {
        let (status, allowed) = on_replica().await;
        if status == StatusCode::NO_CONTENT {
            assert_eq!(allowed.unwrap(), origin);
            break;
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(8), "the replica never reloaded");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    // The server where the client was made knew at once.
    assert_eq!(preflight(&app, "/api/agents", origin).await.status, StatusCode::NO_CONTENT);
    replica.shutdown().await.unwrap();
}
