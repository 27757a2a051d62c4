//! Benchmark of OAuth (docs/oauth.md): token exchanges per second, and the
//! latency of the consent page `GET /oauth/authorize` under load, on SQLite
//! and PostgreSQL. Run through `bench/run`, or alone:
//!
//!     cargo run --release --example bench_oauth [-- --postgres postgres://postgres@127.0.0.1:5432]
//!
//! Knobs: BENCH_OAUTH_CODES (2000 exchanges), BENCH_OAUTH_CLIENTS (16
//! concurrent clients), BENCH_OAUTH_SECONDS (10 s of consent-page load),
//! BENCH_OAUTH_DB (`sqlite` or `postgres`; both when unset).

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::json;
use sha2::{Digest, Sha256};
use uuid::Uuid;

#[path = "util/mod.rs"]
mod util;
use util::{account, env_or, fan_out, on_each_database, percentile, pg_base, start_server};

const REDIRECT: &str = "http://127.0.0.1:9/cb";
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";

struct Run {
    exchanges: usize,
    exchange_s: f64,
    exchange_p99_ms: f64,
    page_requests: usize,
    page_rps: f64,
    page_p50_ms: f64,
    page_p99_ms: f64,
}

fn challenge() -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(VERIFIER.as_bytes()))
}

fn form(fields: &[(&str, &str)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in fields {
        s.append_pair(k, v);
    }
    s.finish()
}

/// A code, approved through a bearer key (programmatic consent).
async fn code(http: &reqwest::Client, base: &str, key: &str, client_id: &str) -> String {
    let res = http
        .post(format!("{base}/oauth/authorize"))
        .bearer_auth(key)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[
            ("response_type", "code"),
            ("client_id", client_id),
            ("redirect_uri", REDIRECT),
            ("code_challenge", &challenge()),
            ("code_challenge_method", "S256"),
            ("decision", "approve"),
        ]))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 303, "consent");
    let to = res.headers()["location"].to_str().unwrap().to_owned();
    reqwest::Url::parse(&to).unwrap().query_pairs().find(|(k, _)| k == "code").unwrap().1.into_owned()
}

/// A browser session cookie, from the sign-in form.
async fn session_cookie(http: &reqwest::Client, base: &str, email: &str) -> String {
    let page = http.get(format!("{base}/login")).send().await.unwrap();
    let csrf_cookie = page
        .headers()
        .get_all("set-cookie")
        .iter()
        .find_map(|v| v.to_str().unwrap().strip_prefix("acs_csrf=").map(|r| r.split(';').next().unwrap().to_owned()))
        .unwrap();
    let res = http
        .post(format!("{base}/login"))
        .header("cookie", format!("acs_csrf={csrf_cookie}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("email", email), ("password", "benchmark password"), ("csrf", &csrf_cookie)]))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 303, "sign-in");
    res.headers()
        .get_all("set-cookie")
        .iter()
        .find_map(|v| v.to_str().unwrap().strip_prefix("acs_session=").map(|r| r.split(';').next().unwrap().to_owned()))
        .unwrap()
}

async fn run_on(db_url: &str) -> Run {
    let dir = std::env::temp_dir().join(format!("acs-bench-oauth-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let running = start_server(db_url, &dir, &[]).await;
    let base = format!("http://{}", running.addr);
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let email = "oauth-bench@example.com";
    let (_, key) = account(&http, &base, email).await;
    let client: serde_json::Value = http
        .post(format!("{base}/api/oauth/clients"))
        .bearer_auth(&key)
        .json(&json!({"name": "bench app", "redirect_uris": [REDIRECT]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let client_id = client["data"]["client_id"].as_str().unwrap().to_owned();
    let clients = env_or("BENCH_OAUTH_CLIENTS", 16);

    // Exchanges: the codes are made first (not timed), then spent by
    // `clients` concurrent apps.
    let n = env_or("BENCH_OAUTH_CODES", 2000);
    let shared = Arc::new((http.clone(), base.clone(), key.clone(), client_id.clone()));
    let s = shared.clone();
    let codes: Vec<String> = fan_out(clients, n, move |_| {
        let s = s.clone();
        async move { code(&s.0, &s.1, &s.2, &s.3).await }
    })
    .await;
    let codes = Arc::new(codes);
    let s = shared.clone();
    let c = codes.clone();
    let t = Instant::now();
    let mut latencies: Vec<f64> = fan_out(clients, n, move |i| {
        let (s, c) = (s.clone(), c.clone());
        async move {
            let started = Instant::now();
            let res =
                s.0.post(format!("{}/api/oauth/token", s.1))
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(form(&[
                        ("grant_type", "authorization_code"),
                        ("code", &c[i]),
                        ("redirect_uri", REDIRECT),
                        ("client_id", &s.3),
                        ("code_verifier", VERIFIER),
                    ]))
                    .send()
                    .await
                    .unwrap();
            assert_eq!(res.status(), 200, "exchange");
            started.elapsed().as_secs_f64() * 1000.0
        }
    })
    .await;
    let exchange_s = t.elapsed().as_secs_f64();

    // The consent page under load, as a signed-in browser asks for it.
    let cookie = session_cookie(&http, &base, email).await;
    let path = format!(
        "/oauth/authorize?{}",
        form(&[
            ("response_type", "code"),
            ("client_id", &client_id),
            ("redirect_uri", REDIRECT),
            ("state", "bench"),
            ("code_challenge", &challenge()),
            ("code_challenge_method", "S256"),
        ])
    );
    let seconds = env_or("BENCH_OAUTH_SECONDS", 10) as u64;
    let until = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let (http, url, cookie) = (http.clone(), format!("{base}{path}"), cookie.clone());
        tasks.spawn(async move {
            let mut samples = Vec::new();
            while Instant::now() < until {
                let started = Instant::now();
                let res = http.get(&url).header("cookie", format!("acs_session={cookie}")).send().await.unwrap();
                assert_eq!(res.status(), 200, "consent page");
                let _ = res.bytes().await.unwrap();
                samples.push(started.elapsed().as_secs_f64() * 1000.0);
            }
            samples
        });
    }
    let mut page: Vec<f64> = Vec::new();
    while let Some(s) = tasks.join_next().await {
        page.extend(s.unwrap());
    }
    running.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    Run {
        exchanges: n,
        exchange_s,
        exchange_p99_ms: percentile(&mut latencies, 0.99),
        page_requests: page.len(),
        page_rps: page.len() as f64 / seconds as f64,
        page_p50_ms: percentile(&mut page, 0.5),
        page_p99_ms: percentile(&mut page, 0.99),
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let only = std::env::var("BENCH_OAUTH_DB").unwrap_or_default();
    let results = on_each_database(&only, &pg_base(), |_, url| async move { run_on(&url).await }).await;
    let clients = env_or("BENCH_OAUTH_CLIENTS", 16);
    println!(
        "| OAuth ({clients} concurrent clients) | token exchanges | exchanges/s | exchange p99 | consent page requests | \
         consent pages/s | consent p50 | consent p99 | goal: consent p99 under 50 ms |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
    for (label, run) in &results {
        match run {
            Ok(r) => {
                let verdict = if r.page_p99_ms < 50.0 { "met" } else { "**missed**" };
                println!(
                    "| {label} | {} | {:.0} | {:.1} ms | {} | {:.0} | {:.1} ms | {:.1} ms | {verdict} |",
                    r.exchanges,
                    r.exchanges as f64 / r.exchange_s,
                    r.exchange_p99_ms,
                    r.page_requests,
                    r.page_rps,
                    r.page_p50_ms,
                    r.page_p99_ms,
                );
            }
            Err(e) => println!("| {label} | {e} | | | | | | | |"),
        }
    }
}
