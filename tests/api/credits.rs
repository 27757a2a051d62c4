//! Credits and the inference resolution they depend on: the balance and its
//! ledger (`GET /api/account/credits`), the operator's grant and comp (the
//! CLI), 402 at launch, wake and turn, hosted time charged in whole seconds
//! exactly once across replicas, platform turns spending while own
//! credentials do not, the credential reaching the agent as its variable,
//! and the create-time checks of a credential selection.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::Row;
use uuid::Uuid;

use crate::both;
use crate::common::{Backend, Resp, TestApp, User, assert_error, finished_turns, sh, spawn, spawn_with};

both!(
    credits_are_off_by_default_and_nothing_is_refused,
    the_ledger_pages_newest_first_and_the_cli_grants_and_comps,
    a_spent_balance_is_refused_at_launch_wake_and_turn,
    hosted_time_is_charged_in_whole_seconds_once_across_replicas,
    platform_turns_spend_and_own_credentials_reach_the_agent,
    a_turn_without_any_credential_fails_before_its_prompt,
    a_key_in_the_machines_environment_is_the_accounts_own,
    create_checks_the_credential_selection,
);

const AGENT: &str = "/opt/acs/bin/scripted-agent";
const PLATFORM_KEY: &str = "sk-platform-4f1c9a";
const OWN_KEY: &str = "sk-own-77d0e2";

/// Configuration with the scripted agent bound into machines, plus `overrides`.
fn with_agent(overrides: &[(&'static str, Value)]) -> Vec<(&'static str, Value)> {
    let bind = format!("{}:{AGENT}", crate::common::scripted_agent().display());
    let mut all = vec![("sandbox.ro_binds", json!([bind]))];
    all.extend(overrides.iter().cloned());
    all
}

fn enabled(extra: &[(&'static str, Value)]) -> Vec<(&'static str, Value)> {
    let mut all = vec![("credits.enabled", json!(true))];
    all.extend(extra.iter().cloned());
    all
}

async fn credits(app: &TestApp, u: &User, query: &str) -> Resp {
    let r = app.get(&format!("/api/account/credits{query}"), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r
}

async fn balance(app: &TestApp, u: &User) -> i64 {
    credits(app, u, "").await.body["data"]["balance"].as_i64().unwrap()
}

/// Ledger rows as stored, oldest first (read from the store, not the rate-limited API).
async fn ledger(app: &TestApp, u: &User) -> Vec<(i64, i64, String)> {
    let rows = sqlx::query("SELECT amount, balance_after, reason FROM credit_ledger WHERE account_id = $1 ORDER BY id")
        .bind(u.id.clone())
        .fetch_all(&app.state().db.pool)
        .await
        .unwrap();
    rows.iter().map(|r| (r.get("amount"), r.get("balance_after"), r.get("reason"))).collect()
}

async fn grant(app: &TestApp, u: &User, amount: i64) -> i64 {
    acs::core::credits::operator::grant(&app.state().db, &u.email, amount).await.unwrap()
}

async fn comp(app: &TestApp, u: &User, on: bool) {
    acs::core::credits::operator::set_comped(&app.state().db, &u.email, on).await.unwrap();
}

async fn true_agent(app: &TestApp, u: &User, extra: Value) -> Uuid {
    crate::common::acp_agent(app, u, "true", extra).await
}

/// A `claude` agent whose program is the scripted agent.
async fn claude_agent(app: &TestApp, u: &User, extra: Value) -> Uuid {
    let mut body = json!({"name": format!("c-{}", &Uuid::new_v4().simple().to_string()[..8]), "runtime": "claude",
        "command": [AGENT]});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    let r = app.post("/api/agents", &u.key, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"]["id"].as_str().unwrap().parse().unwrap()
}

fn id_of(r: &Resp) -> Uuid {
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"]["id"].as_str().unwrap().parse().unwrap()
}

async fn start(app: &TestApp, u: &User, body: Value) -> Resp {
    app.post("/api/conversations", &u.key, body).await
}

async fn prompt(app: &TestApp, u: &User, conv: Uuid, text: &str) -> Resp {
    app.post(&format!("/api/conversations/{conv}/prompts"), &u.key, json!({"prompt": text})).await
}

async fn sandbox_of(app: &TestApp, conv: Uuid) -> Uuid {
    acs::core::conversations::store::get(&app.state().db, conv).await.unwrap().unwrap().sandbox_id.unwrap()
}

async fn wait_status(app: &TestApp, id: Uuid, want: &str) {
    for _ in 0..1200 {
        let row = acs::core::sandboxes::store::get(&app.state().db, id).await.unwrap().expect("sandbox row");
        if row.status.as_str() == want {
            return;
        }
        assert_ne!(row.status.as_str(), "failed", "sandbox {id} failed: {:?}", row.error);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("sandbox {id} never became {want}");
}

/// (stage, state, data) of the conversation's stage events, and its whole stdout.
async fn log(app: &TestApp, conv: Uuid) -> (Vec<(String, String, String)>, String) {
    let rows =
        sqlx::query("SELECT kind, stream, stage, state, data FROM events WHERE conversation_id = $1 ORDER BY id")
            .bind(conv.to_string())
            .fetch_all(&app.state().db.pool)
            .await
            .unwrap();
    let mut stages = Vec::new();
    let mut stdout = String::new();
    for r in &rows {
        let (kind, stream, data): (String, String, String) = (r.get("kind"), r.get("stream"), r.get("data"));
        if kind == "stage" {
            stages.push((
                r.get::<Option<String>, _>("stage").unwrap(),
                r.get::<Option<String>, _>("state").unwrap(),
                data,
            ));
        } else if stream == "stdout" {
            stdout.push_str(&data);
        }
    }
    (stages, stdout)
}

/// The model-credential variables of the processes running in a machine
/// (read from inside: only the agent process holds them).
async fn agent_vars(app: &TestApp, sandbox: Uuid) -> BTreeMap<String, String> {
    let script = "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; echo; done 2>/dev/null \
                  | grep -E '^(ANTHROPIC_API_KEY|CLAUDE_CODE_OAUTH_TOKEN|OPENAI_API_KEY|GEMINI_API_KEY)=' | sort -u";
    let (_, out, _) = sh(app, sandbox, script).await;
    out.lines().filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned()))).collect()
}

async fn credentials_set(app: &TestApp, u: &User, name: &str, provider: &str, value: &str) -> Uuid {
    let r = app.post("/api/account/inference-credential-sets", &u.key, json!({"name": name})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let id: Uuid = r.body["data"]["id"].as_str().unwrap().parse().unwrap();
    if !provider.is_empty() {
        let path = format!("/api/account/inference-credential-sets/{id}/credentials/{provider}");
        let r = app.request(Method::PUT, &path, Some(&u.key), Some(json!({"value": value}))).await;
        assert!(r.status.is_success(), "{}", r.text);
    }
    id
}

async fn credits_are_off_by_default_and_nothing_is_refused(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let r = credits(&app, &u, "").await;
    let d = &r.body["data"];
    assert_eq!(
        (d["enabled"].clone(), d["balance"].clone(), d["comped"].clone()),
        (json!(false), json!(0), json!(false))
    );
    assert_eq!(d["ledger"], json!([]));
    assert!(d["upgrade_url"].is_null());
    assert_eq!(d["rates"], json!({"sandbox_per_second": 1, "platform_turn": 100}));
    // A zero balance refuses nothing on an instance without credits.
    let a = true_agent(&app, &u, json!({})).await;
    let conv = id_of(&start(&app, &u, json!({"agent_id": a})).await);
    wait_status(&app, sandbox_of(&app, conv).await, "ready").await;
    let r = app.post(&format!("/api/conversations/{conv}/prompts"), &u.key, json!({"prompt": "hi"})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert!(ledger(&app, &u).await.is_empty(), "nothing is metered or spent");
}

fn acs_cli(app: &TestApp, args: &[&str]) -> (bool, String) {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_acs"));
    for (k, _) in std::env::vars() {
        if k.starts_with("ACS_") {
            c.env_remove(k);
        }
    }
    let out = c.current_dir(&app.dir).env("ACS_DATABASE__URL", &app.db_url).args(args).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

async fn the_ledger_pages_newest_first_and_the_cli_grants_and_comps(b: Backend) {
    let app = spawn_with(b, &enabled(&[("credits.initial_grant", json!(500))])).await;
    let u = app.user().await;
    let d = credits(&app, &u, "").await.body["data"].clone();
    assert_eq!((d["enabled"].clone(), d["balance"].clone()), (json!(true), json!(500)));
    assert_eq!(d["ledger"][0]["reason"], "initial_grant");
    assert_eq!((d["ledger"][0]["amount"].clone(), d["ledger"][0]["balance_after"].clone()), (json!(500), json!(500)));

    // The operator's CLI, on the configured database.
    let (ok, out) = acs_cli(&app, &["credits", "grant", &u.email, "25"]);
    assert!(ok, "{out}");
    assert!(out.contains("balance 525"), "{out}");
    let (ok, out) = acs_cli(&app, &["credits", "grant", &u.email, "-5"]);
    assert!(ok, "{out}");
    let (ok, out) = acs_cli(&app, &["credits", "grant", "nobody@example.com", "5"]);
    assert!(!ok && out.contains("nobody@example.com"), "{out}");
    let (ok, out) = acs_cli(&app, &["credits", "grant", &u.email, "0"]);
    assert!(!ok, "{out}");
    let (ok, out) = acs_cli(&app, &["credits", "comp", &u.email, "on"]);
    assert!(ok, "{out}");
    assert!(credits(&app, &u, "").await.body["data"]["comped"].as_bool().unwrap());
    let (ok, _) = acs_cli(&app, &["credits", "comp", &u.email, "maybe"]);
    assert!(!ok);
    assert_eq!(grant(&app, &u, 1).await, 521, "a comped account still receives grants");

    // Newest first, paged with `limit` and `before`.
    let page = credits(&app, &u, "?limit=2").await;
    let amounts: Vec<i64> =
        page.body["data"]["ledger"].as_array().unwrap().iter().map(|e| e["amount"].as_i64().unwrap()).collect();
    assert_eq!(amounts, [1, -5]);
    assert_eq!(page.body["meta"]["has_more"], true);
    let cursor = page.body["meta"]["next_cursor"].as_i64().unwrap();
    let page = credits(&app, &u, &format!("?limit=2&before={cursor}")).await;
    let rows = page.body["data"]["ledger"].as_array().unwrap();
    assert_eq!(rows.iter().map(|e| e["reason"].as_str().unwrap()).collect::<Vec<_>>(), ["grant", "initial_grant"]);
    assert_eq!(rows[0]["balance_after"], 525);
    assert_eq!(page.body["meta"]["has_more"], false);
    assert_eq!(credits(&app, &u, "?limit=500").await.body["data"]["ledger"].as_array().unwrap().len(), 4);
    for bad in ["?limit=0", "?limit=501", "?before=x"] {
        let r = app.get(&format!("/api/account/credits{bad}"), &u.key).await;
        assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    }
    // Another account sees only its own.
    let v = app.user().await;
    assert_eq!(credits(&app, &v, "").await.body["data"]["ledger"].as_array().unwrap().len(), 1);
}

async fn a_spent_balance_is_refused_at_launch_wake_and_turn(b: Backend) {
    let cfg = enabled(&[
        ("credits.initial_grant", json!(0)),
        ("credits.sandbox_per_second", json!(0)),
        ("credits.upgrade_url", json!("https://billing.example.com/upgrade")),
    ]);
    let app = spawn_with(b, &cfg).await;
    let u = app.user().await;
    let a = true_agent(&app, &u, json!({"sandbox_mode": "persistent"})).await;
    let r = start(&app, &u, json!({"agent_id": a})).await;
    assert_error(&r, StatusCode::PAYMENT_REQUIRED, "insufficient_credits");
    assert_eq!(r.body["upgrade_url"], "https://billing.example.com/upgrade");
    assert_eq!(app.get("/api/conversations", &u.key).await.body["data"], json!([]), "a refused start stores nothing");

    // One credit is enough to start; the balance refuses at exactly zero.
    grant(&app, &u, 1).await;
    let conv = id_of(&start(&app, &u, json!({"agent_id": a})).await);
    let machine = sandbox_of(&app, conv).await;
    wait_status(&app, machine, "ready").await;
    grant(&app, &u, -1).await;
    let r = prompt(&app, &u, conv, "say: no").await;
    assert_error(&r, StatusCode::PAYMENT_REQUIRED, "insufficient_credits");
    assert!(acs::core::conversations::store::turns(&app.state().db, conv).await.unwrap().is_empty(), "no turn opened");

    // A comped account is never refused.
    comp(&app, &u, true).await;
    assert_eq!(prompt(&app, &u, conv, "say: yes").await.status, StatusCode::ACCEPTED);
    finished_turns(&app, conv, 1).await;
    comp(&app, &u, false).await;

    // A parked home's wake is a launch.
    acs::core::sandboxes::park(app.state(), machine).await.unwrap();
    wait_status(&app, machine, "suspended").await;
    let r = app.post(&format!("/api/conversations/{conv}/wake"), &u.key, json!({})).await;
    assert_error(&r, StatusCode::PAYMENT_REQUIRED, "insufficient_credits");
    let r = prompt(&app, &u, conv, "say: parked").await;
    assert_error(&r, StatusCode::PAYMENT_REQUIRED, "insufficient_credits");
    let row = acs::core::sandboxes::store::get(&app.state().db, machine).await.unwrap().unwrap();
    assert_eq!(row.status.as_str(), "suspended");
    grant(&app, &u, 10).await;
    let r = app.post(&format!("/api/conversations/{conv}/wake"), &u.key, json!({})).await;
    assert_eq!(r.body["data"]["status"], "waking", "{}", r.text);
    assert!(
        ledger(&app, &u).await.iter().all(|(_, _, reason)| reason == "grant"),
        "comped turns and rate 0 spend nothing"
    );
}

/// Seconds charged for hosted time so far, and the rows' running balance checked.
async fn time_charged(app: &TestApp, u: &User, rate: i64) -> i64 {
    let rows = ledger(app, u).await;
    let mut previous = None;
    let mut seconds = 0;
    for (amount, after, reason) in rows {
        if let Some(p) = previous {
            assert_eq!(after, p + amount, "every row carries the balance after it");
        }
        previous = Some(after);
        if reason == "sandbox_time" {
            assert!(amount < 0 && amount % rate == 0, "whole seconds at the rate: {amount}");
            seconds += -amount / rate;
        }
    }
    seconds
}

async fn hosted_time_is_charged_in_whole_seconds_once_across_replicas(b: Backend) {
    let cfg = enabled(&[
        ("credits.initial_grant", json!(100_000)),
        ("credits.sandbox_per_second", json!(3)),
        ("credits.meter_interval_seconds", json!(1)),
    ]);
    let app = spawn_with(b, &cfg).await;
    let replica = app.replica().await;
    let u = app.user().await;
    let a = true_agent(&app, &u, json!({})).await;
    let began = Instant::now();
    let conv = id_of(&start(&app, &u, json!({"agent_id": a})).await);
    let machine = sandbox_of(&app, conv).await;
    // Both replicas' meters run every second; extra passes race them.
    for _ in 0..10 {
        let (x, y) =
            tokio::join!(acs::core::credits::meter::pass(app.state()), acs::core::credits::meter::pass(&replica.state));
        x.unwrap();
        y.unwrap();
        tokio::time::sleep(Duration::from_millis(350)).await;
    }
    let row = sqlx::query("SELECT metered_at, created_at FROM sandboxes WHERE id = $1")
        .bind(machine.to_string())
        .fetch_one(&app.state().db.pool)
        .await
        .unwrap();
    let (metered_at, created_at): (i64, i64) = (row.get("metered_at"), row.get("created_at"));
    let charged = time_charged(&app, &u, 3).await;
    assert!(charged >= 2, "a running machine is charged as it runs: {charged}");
    // The meter advanced by exactly what was charged, from the start.
    let metered_from = metered_at - charged * 1_000_000;
    assert!((0..1_000_000).contains(&(metered_from - created_at)), "metered from {metered_from}, created {created_at}");

    let r = app.post(&format!("/api/conversations/{conv}/terminate"), &u.key, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let elapsed = began.elapsed().as_secs_f64();
    let total = time_charged(&app, &u, 3).await;
    assert!(total as f64 <= elapsed, "charged {total} s in {elapsed:.1} s: an interval was charged twice");
    assert!(total as f64 >= elapsed - 2.0, "charged {total} s in {elapsed:.1} s");
    let row = sqlx::query("SELECT metered_at FROM sandboxes WHERE id = $1")
        .bind(machine.to_string())
        .fetch_one(&app.state().db.pool)
        .await
        .unwrap();
    assert_eq!(row.get::<Option<i64>, _>("metered_at"), None, "an ended machine's meter is closed");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(time_charged(&app, &u, 3).await, total, "nothing after the final charge");
    assert_eq!(balance(&app, &u).await, 100_000 - 3 * total);

    // A comped account's machine runs without ledger rows.
    let v = app.user().await;
    comp(&app, &v, true).await;
    let av = true_agent(&app, &v, json!({})).await;
    let cv = id_of(&start(&app, &v, json!({"agent_id": av})).await);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    app.post(&format!("/api/conversations/{cv}/terminate"), &v.key, json!({})).await;
    assert_eq!(ledger(&app, &v).await.len(), 1, "only the initial grant");
    replica.shutdown().await.unwrap();
}

async fn platform_turns_spend_and_own_credentials_reach_the_agent(b: Backend) {
    let cfg = with_agent(&[
        ("credits.enabled", json!(true)),
        ("credits.initial_grant", json!(1000)),
        ("credits.sandbox_per_second", json!(0)),
        ("credits.platform_turn", json!(7)),
        ("inference.platform.anthropic_api_key", json!(PLATFORM_KEY)),
    ]);
    let app = spawn_with(b, &cfg).await;
    let u = app.user().await;
    let a = claude_agent(&app, &u, json!({})).await;
    let echo = "echo-env: ANTHROPIC_API_KEY";
    let conv = id_of(&start(&app, &u, json!({"agent_id": a, "prompt": echo})).await);
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(t[0].status, "done", "{t:?}");
    assert_eq!(t[0].inference, Some(json!({"origin": "platform", "scope": "platform", "openai_grant_id": null})));
    let machine = sandbox_of(&app, conv).await;
    assert_eq!(agent_vars(&app, machine).await.get("ANTHROPIC_API_KEY").map(String::as_str), Some(PLATFORM_KEY));
    let (_, stdout) = log(&app, conv).await;
    assert_eq!(stdout, "[REDACTED]", "the key arrived and was redacted");
    let row = sqlx::query(
        "SELECT amount, reason, turn_id, conversation_id FROM credit_ledger WHERE account_id = $1 ORDER BY id DESC",
    )
    .bind(u.id.clone())
    .fetch_one(&app.state().db.pool)
    .await
    .unwrap();
    assert_eq!((row.get::<i64, _>("amount"), row.get::<String, _>("reason")), (-7, "platform_turn".to_owned()));
    assert_eq!(row.get::<Option<String>, _>("turn_id"), Some(t[0].id.to_string()));
    assert_eq!(row.get::<Option<String>, _>("conversation_id"), Some(conv.to_string()));
    assert_eq!(balance(&app, &u).await, 993);

    // The account's own key: no spending, and the agent is restarted with it.
    let r = app
        .request(
            Method::PUT,
            "/api/account/inference-credentials/anthropic_api_key",
            Some(&u.key),
            Some(json!({"value": OWN_KEY})),
        )
        .await;
    assert!(r.status.is_success(), "{}", r.text);
    let r = prompt(&app, &u, conv, echo).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let t = finished_turns(&app, conv, 2).await;
    assert_eq!(t[1].inference, Some(json!({"origin": "own", "scope": "credential", "openai_grant_id": null})));
    assert_eq!(agent_vars(&app, machine).await.get("ANTHROPIC_API_KEY").map(String::as_str), Some(OWN_KEY));
    assert_eq!(balance(&app, &u).await, 993, "own credentials spend nothing");
    let (_, stdout) = log(&app, conv).await;
    assert_eq!(stdout, "[REDACTED][REDACTED]");
    let turns = app.get(&format!("/api/conversations/{conv}/turns"), &u.key).await;
    assert_eq!(turns.body["data"][1]["inference"]["scope"], "credential", "{}", turns.text);

    // A launch selection comes before the account default, with the kind its set holds.
    let set = credentials_set(&app, &u, "oauth", "claude_code_oauth_token", "oauth-tok-51ab").await;
    let body = json!({"agent_id": a, "inference_credential_id": set, "prompt": "echo-env: CLAUDE_CODE_OAUTH_TOKEN"});
    let r = start(&app, &u, body).await;
    assert_eq!(r.body["data"]["inference_credential_id"], json!(set), "{}", r.text);
    let other = id_of(&r);
    let t = finished_turns(&app, other, 1).await;
    assert_eq!(t[0].inference.as_ref().unwrap()["scope"], "credential");
    let vars = agent_vars(&app, sandbox_of(&app, other).await).await;
    assert_eq!(vars.get("CLAUDE_CODE_OAUTH_TOKEN").map(String::as_str), Some("oauth-tok-51ab"));
    assert_eq!(vars.get("ANTHROPIC_API_KEY"), None, "only the resolved credential is given");
    assert_eq!(log(&app, other).await.1, "[REDACTED]");
    assert_eq!(balance(&app, &u).await, 993);

    // A comped account's platform turn leaves no ledger row.
    let v = app.user().await;
    comp(&app, &v, true).await;
    let av = claude_agent(&app, &v, json!({})).await;
    let cv = id_of(&start(&app, &v, json!({"agent_id": av, "prompt": "say: free"})).await);
    assert_eq!(finished_turns(&app, cv, 1).await[0].inference.as_ref().unwrap()["origin"], "platform");
    assert_eq!(ledger(&app, &v).await.len(), 1, "only the initial grant");
}

async fn a_turn_without_any_credential_fails_before_its_prompt(b: Backend) {
    let app = spawn_with(b, &with_agent(&[])).await;
    let u = app.user().await;
    let a = claude_agent(&app, &u, json!({})).await;
    let conv = id_of(&start(&app, &u, json!({"agent_id": a, "prompt": "say: never"})).await);
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(t[0].status, "failed");
    assert_eq!(t[0].inference, Some(json!({"origin": "own", "scope": "missing", "openai_grant_id": null})));
    assert!(t[0].error.as_deref().unwrap().contains("claude"), "{:?}", t[0].error);
    // The turn row moves first, its `turn` stage event last.
    let mut read = log(&app, conv).await;
    for _ in 0..100 {
        if read.0.iter().any(|(s, st, _)| s == "turn" && st == "failed") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        read = log(&app, conv).await;
    }
    let (stages, stdout) = read;
    assert_eq!(stdout, "", "the prompt never reached an agent");
    let model: Vec<_> = stages.iter().filter(|(s, _, _)| s == "model").collect();
    assert_eq!(model.len(), 1, "{stages:?}");
    assert_eq!(model[0].1, "failed");
    assert!(model[0].2.contains("anthropic_api_key"), "the reason names what is missing: {}", model[0].2);
    assert!(!stages.iter().any(|(s, _, _)| s == "session"), "no agent started: {stages:?}");
    let turn_states: Vec<_> = stages.iter().filter(|(s, _, _)| s == "turn").map(|(_, st, _)| st.as_str()).collect();
    assert_eq!(turn_states, ["started", "failed"]);
    let c = acs::core::conversations::store::get(&app.state().db, conv).await.unwrap().unwrap();
    assert_eq!(
        acs::core::conversations::store::status_str(c.status),
        "idle",
        "the next prompt may run once a key is added"
    );

    // `acp` agents run their own command: no resolution, nothing spent.
    let acp = crate::common::acp_agent(&app, &u, AGENT, json!({})).await;
    let conv = id_of(&start(&app, &u, json!({"agent_id": acp, "prompt": "say: ok"})).await);
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(t[0].status, "done");
    assert_eq!(t[0].inference, Some(json!({"origin": "own", "scope": "none", "openai_grant_id": null})));
}

async fn a_key_in_the_machines_environment_is_the_accounts_own(b: Backend) {
    let cfg = with_agent(&[
        ("credits.enabled", json!(true)),
        ("credits.sandbox_per_second", json!(0)),
        ("inference.platform.anthropic_api_key", json!(PLATFORM_KEY)),
    ]);
    let app = spawn_with(b, &cfg).await;
    let u = app.user().await;
    let r = app.post("/api/environments", &u.key, json!({"name": "keyed"})).await;
    let env = r.body["data"]["id"].as_str().unwrap().to_owned();
    let path = format!("/api/environments/{env}/secrets/ANTHROPIC_API_KEY");
    let r = app.request(Method::PUT, &path, Some(&u.key), Some(json!({"value": OWN_KEY}))).await;
    assert!(r.status.is_success(), "{}", r.text);
    let a = claude_agent(&app, &u, json!({"environment_id": env})).await;
    let before = balance(&app, &u).await;
    let conv = id_of(&start(&app, &u, json!({"agent_id": a, "prompt": "echo-env: ANTHROPIC_API_KEY"})).await);
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(t[0].inference, Some(json!({"origin": "own", "scope": "tenant_secret", "openai_grant_id": null})));
    assert_eq!(
        agent_vars(&app, sandbox_of(&app, conv).await).await.get("ANTHROPIC_API_KEY").map(String::as_str),
        Some(OWN_KEY)
    );
    assert_eq!(log(&app, conv).await.1, "[REDACTED]");
    assert_eq!(balance(&app, &u).await, before, "the account's own key spends nothing");
}

async fn create_checks_the_credential_selection(b: Backend) {
    let app = spawn_with(b, &with_agent(&[])).await;
    let u = app.user().await;
    let keyed = credentials_set(&app, &u, "keyed", "anthropic_api_key", OWN_KEY).await;
    let empty = credentials_set(&app, &u, "empty", "", "").await;
    let other = credentials_set(&app, &u, "other", "anthropic_api_key", OWN_KEY).await;
    let v = app.user().await;
    let foreign = credentials_set(&app, &v, "theirs", "anthropic_api_key", OWN_KEY).await;

    let open = claude_agent(&app, &u, json!({})).await;
    for missing in [foreign, Uuid::new_v4()] {
        let r = start(&app, &u, json!({"agent_id": open, "inference_credential_id": missing})).await;
        assert_error(&r, StatusCode::NOT_FOUND, "inference_credential_not_found");
    }
    let r = start(&app, &u, json!({"agent_id": open, "inference_credential_id": empty})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "inference_credential_unusable");
    let pinned =
        claude_agent(&app, &u, json!({"inference_credential_id": keyed, "allowed_inference_credential_ids": []})).await;
    let r = start(&app, &u, json!({"agent_id": pinned, "inference_credential_id": other})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "inference_credential_not_allowed");
    assert_eq!(app.get("/api/conversations", &u.key).await.body["data"], json!([]), "refusals store nothing");

    // The agent's own set stays allowed; an `acp` agent may pick an empty set.
    let r = start(&app, &u, json!({"agent_id": pinned, "inference_credential_id": keyed})).await;
    assert_eq!(r.body["data"]["inference_credential_id"], json!(keyed), "{}", r.text);
    let acp = crate::common::acp_agent(&app, &u, AGENT, json!({})).await;
    id_of(&start(&app, &u, json!({"agent_id": acp, "inference_credential_id": empty})).await);
    let plain = id_of(&start(&app, &u, json!({"agent_id": open})).await);
    let r = app.get(&format!("/api/conversations/{plain}"), &u.key).await;
    assert!(r.body["data"]["inference_credential_id"].is_null(), "{}", r.text);
}
