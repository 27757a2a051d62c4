//! Benchmark of OAuth for browser apps (docs/oauth.md): how many PKCE token
//! exchanges a server makes per second (each needs a fresh code, so codes are
//! issued first through the consent form's Approve, `POST /oauth/authorize`,
//! as a bearer-key viewer, and timed as approvals), and the latency of the
//! consent page `GET /oauth/authorize` as a signed-in browser asks for it
//! (session cookie from the sign-in form): at a fixed request rate beside
//! `GET /api/auth/me` at the same rate, and at saturation. Run through
//! `bench/run`, or alone:
//!
//!     cargo build --release --example bench_oauth --example fixed_rate
//!     target/release/examples/bench_oauth [--postgres postgres://postgres@127.0.0.1:5432]
//!
//! The fixed-rate load is examples/fixed_rate.rs (open loop, latency from each
//! request's scheduled time), run as a child process: the `fixed_rate` beside
//! this binary, or BENCH_FIXED_RATE. Knobs: BENCH_OAUTH_CODES (2000 codes
//! issued and exchanged), BENCH_OAUTH_CLIENTS (16 concurrent clients),
//! BENCH_OAUTH_RATE (500 req/s), BENCH_OAUTH_SECONDS (10 s per load run),
//! BENCH_OAUTH_DB (`sqlite` or `postgres`; both when unset).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "util/mod.rs"]
mod util;
use util::{account, env_or, fan_out, on_each_database, percentile, pg_base, start_server};

const REDIRECT: &str = "http://127.0.0.1:9/callback";
/// RFC 7636 appendix B: every code shares this pair (codes differ, and the
/// verifier check costs the same whatever the verifier).
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

#[derive(Clone)]
struct Opts {
    exchanges: usize,
    concurrency: usize,
    rate: usize,
    duration: usize,
    fixed_rate: PathBuf,
}

struct Run {
    approvals_per_s: f64,
    exchanges_per_s: f64,
    exchange_p50_ms: f64,
    exchange_p99_ms: f64,
    consent: Value,
    me: Value,
    saturated_per_s: f64,
    saturated_p50_ms: f64,
    saturated_p99_ms: f64,
}

fn form(fields: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish()
}

/// Runs examples/fixed_rate against `url` with `header`; its JSON summary.
fn fixed_rate(o: &Opts, url: &str, header: &str) -> Value {
    let out = std::process::Command::new(&o.fixed_rate)
        .args(["--url", url, "--rate", &o.rate.to_string(), "--duration", &o.duration.to_string()])
        .args(["--warmup", "1", "--connections", "16", "--header", header])
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", o.fixed_rate.display()));
    assert!(out.status.success(), "fixed_rate failed: {}", String::from_utf8_lossy(&out.stderr));
    let summary: Value = serde_json::from_slice(&out.stdout).expect("fixed_rate prints JSON");
    let failed = summary["errors"].as_u64().unwrap_or(1) + summary["non_2xx"].as_u64().unwrap_or(1);
    assert_eq!(failed, 0, "fixed_rate against {url}: {}", String::from_utf8_lossy(&out.stderr));
    summary
}

/// The value of cookie `name` among a response's `Set-Cookie` headers.
fn cookie(res: &reqwest::Response, name: &str) -> String {
    let prefix = format!("{name}=");
    res.headers()
        .get_all("set-cookie")
        .iter()
        .find_map(|v| v.to_str().ok()?.strip_prefix(prefix.as_str()).map(|r| r.split(';').next().unwrap().to_owned()))
        .unwrap_or_else(|| panic!("no {name} cookie"))
}

/// A browser session (the `acs_session` cookie) from the sign-in form.
async fn session_cookie(http: &reqwest::Client, base: &str, email: &str) -> String {
    let csrf = cookie(&http.get(format!("{base}/login")).send().await.unwrap(), "acs_csrf");
    let res = http
        .post(format!("{base}/login"))
        .header("cookie", format!("acs_csrf={csrf}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[("email", email), ("password", "benchmark password"), ("csrf", &csrf)]))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), reqwest::StatusCode::SEE_OTHER, "sign-in");
    cookie(&res, "acs_session")
}

/// `GET url` with `header` from `clients` tasks as fast as they go for
/// `seconds`: requests per second, p50 and p99 in ms.
async fn saturate(
    http: &reqwest::Client,
    url: String,
    header: (&'static str, String),
    clients: usize,
    seconds: usize,
) -> (f64, f64, f64) {
    let until = Instant::now() + Duration::from_secs(seconds as u64);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let (http, url, header) = (http.clone(), url.clone(), header.clone());
        tasks.spawn(async move {
            let mut samples = Vec::new();
            while Instant::now() < until {
                let t = Instant::now();
                let res = http.get(&url).header(header.0, &header.1).send().await.unwrap();
                assert_eq!(res.status(), reqwest::StatusCode::OK, "consent page");
                res.bytes().await.unwrap();
                samples.push(t.elapsed().as_secs_f64() * 1e3);
            }
            samples
        });
    }
    let mut all = Vec::new();
    while let Some(s) = tasks.join_next().await {
        all.extend(s.unwrap());
    }
    let rate = all.len() as f64 / seconds as f64;
    (rate, percentile(&mut all, 0.50), percentile(&mut all, 0.99))
}

async fn run_on(o: &Opts, db_url: &str) -> Run {
    let dir = std::env::temp_dir().join(format!("acs-bench-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let running = start_server(db_url, &dir, &[("limits.failed_auth_per_address", json!(100_000_000))]).await;
    let base = format!("http://{}", running.addr);
    // The consent answer is a 303 to the app, which is not there: not followed.
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let email = "oauth-bench@example.com";
    let (_, key) = account(&http, &base, email).await;
    let client: Value = http
        .post(format!("{base}/api/oauth/clients"))
        .bearer_auth(&key)
        .json(&json!({"name": "Bench app", "redirect_uris": [REDIRECT]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let client_id = client["data"]["client_id"].as_str().expect("client registered").to_owned();
    let request = [
        ("response_type", "code"),
        ("client_id", client_id.as_str()),
        ("redirect_uri", REDIRECT),
        ("state", "bench"),
        ("code_challenge", CHALLENGE),
        ("code_challenge_method", "S256"),
    ];

    // Approvals: each one a code, read from the redirect.
    let approve = {
        let mut fields = request.to_vec();
        fields.push(("decision", "approve"));
        form(&fields)
    };
    let start = Instant::now();
    let (h, b, k) = (http.clone(), base.clone(), key.clone());
    let codes: Vec<String> = fan_out(o.concurrency, o.exchanges, move |_| {
        let req = h
            .post(format!("{b}/oauth/authorize"))
            .bearer_auth(&k)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(approve.clone());
        async move {
            let res = req.send().await.expect("approve");
            assert_eq!(res.status(), reqwest::StatusCode::SEE_OTHER);
            let to = reqwest::Url::parse(res.headers()["location"].to_str().unwrap()).unwrap();
            to.query_pairs().find(|(k, _)| k == "code").expect("a code").1.into_owned()
        }
    })
    .await;
    let approvals_per_s = o.exchanges as f64 / start.elapsed().as_secs_f64();

    // Exchanges: one per code, each timed.
    let codes = std::sync::Arc::new(codes);
    let start = Instant::now();
    let (h, b, c) = (http.clone(), base.clone(), client_id.clone());
    let mut latencies: Vec<f64> = fan_out(o.concurrency, o.exchanges, move |i| {
        let body = form(&[
            ("grant_type", "authorization_code"),
            ("code", &codes[i]),
            ("redirect_uri", REDIRECT),
            ("client_id", &c),
            ("code_verifier", VERIFIER),
        ]);
        let req = h
            .post(format!("{b}/api/oauth/token"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        async move {
            let t = Instant::now();
            let res = req.send().await.expect("exchange");
            let status = res.status();
            let token: Value = res.json().await.unwrap();
            assert_eq!(status, reqwest::StatusCode::OK, "{token}");
            assert!(token["access_token"].as_str().is_some_and(|k| k.starts_with("acs_")));
            t.elapsed().as_secs_f64() * 1e3
        }
    })
    .await;
    let exchanges_per_s = o.exchanges as f64 / start.elapsed().as_secs_f64();
    let exchange_p50_ms = percentile(&mut latencies, 0.50);
    let exchange_p99_ms = percentile(&mut latencies, 0.99);

    // The consent page as a signed-in browser asks for it: at a fixed rate
    // (with /api/auth/me at the same rate beside it), then at saturation.
    let session = format!("acs_session={}", session_cookie(&http, &base, email).await);
    let page = format!("{base}/oauth/authorize?{}", form(&request));
    let (o2, page2, header) = (o.clone(), page.clone(), format!("Cookie: {session}"));
    let consent = tokio::task::spawn_blocking(move || fixed_rate(&o2, &page2, &header)).await.unwrap();
    let (o2, me_url, header) = (o.clone(), format!("{base}/api/auth/me"), format!("Authorization: Bearer {key}"));
    let me = tokio::task::spawn_blocking(move || fixed_rate(&o2, &me_url, &header)).await.unwrap();
    let (saturated_per_s, saturated_p50_ms, saturated_p99_ms) =
        saturate(&http, page, ("cookie", session), o.concurrency, o.duration).await;

    running.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    Run {
        approvals_per_s,
        exchanges_per_s,
        exchange_p50_ms,
        exchange_p99_ms,
        consent,
        me,
        saturated_per_s,
        saturated_p50_ms,
        saturated_p99_ms,
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let pg_base = pg_base();
    let only = std::env::var("BENCH_OAUTH_DB").unwrap_or_default();
    let fixed_rate = std::env::var_os("BENCH_FIXED_RATE").map(PathBuf::from).unwrap_or_else(|| {
        std::env::current_exe().unwrap().with_file_name(format!("fixed_rate{}", std::env::consts::EXE_SUFFIX))
    });
    let o = Opts {
        exchanges: env_or("BENCH_OAUTH_CODES", 2000),
        concurrency: env_or("BENCH_OAUTH_CLIENTS", 16),
        rate: env_or("BENCH_OAUTH_RATE", 500),
        duration: env_or("BENCH_OAUTH_SECONDS", 10),
        fixed_rate,
    };
    let results = on_each_database(&only, &pg_base, |_, url| {
        let o = o.clone();
        async move { run_on(&o, &url).await }
    })
    .await;
    println!(
        "| OAuth, {} codes, {} concurrent clients | approvals/s (`POST /oauth/authorize`) | token exchanges/s | \
         exchange p50 | exchange p99 |",
        o.exchanges, o.concurrency
    );
    println!("| --- | ---: | ---: | ---: | ---: |");
    for (label, run) in &results {
        match run {
            Ok(r) => println!(
                "| {label} | {:.0} | {:.0} | {:.2} ms | {:.2} ms |",
                r.approvals_per_s, r.exchanges_per_s, r.exchange_p50_ms, r.exchange_p99_ms
            ),
            Err(e) => println!("| {label} | {e} | | | |"),
        }
    }
    println!();
    println!(
        "| at a fixed {} req/s for {} s, 16 connections | p50 | p99 | p99.9 | max | achieved req/s |",
        o.rate, o.duration
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    let ms = |v: &Value, f: &str| format!("{:.2} ms", v[f].as_f64().unwrap_or(f64::NAN));
    for (label, run) in &results {
        let Ok(r) = run else { continue };
        for (what, v) in [("consent page `GET /oauth/authorize`, signed in", &r.consent), ("`GET /api/auth/me`", &r.me)]
        {
            println!(
                "| {label}, {what} | {} | {} | {} | {} | {:.0} |",
                ms(v, "p50_ms"),
                ms(v, "p99_ms"),
                ms(v, "p999_ms"),
                ms(v, "max_ms"),
                v["achieved_rate"].as_f64().unwrap_or(f64::NAN)
            );
        }
    }
    println!();
    println!(
        "| consent page at saturation, {} clients for {} s | pages/s | p50 | p99 | goal: p99 under 50 ms |",
        o.concurrency, o.duration
    );
    println!("| --- | ---: | ---: | ---: | --- |");
    for (label, run) in &results {
        let Ok(r) = run else { continue };
        let verdict = if r.saturated_p99_ms < 50.0 { "met" } else { "**missed**" };
        println!(
            "| {label} | {:.0} | {:.2} ms | {:.2} ms | {verdict} |",
            r.saturated_per_s, r.saturated_p50_ms, r.saturated_p99_ms
        );
    }
}
