//! Secrets of a machine never leave the server in any form an agent prints
//! them by accident (spec 2.2, 2.3, 6.1): as stored, JSON-escaped (the way
//! serde, Python, PHP write them inside a string), and for a multi-line
//! secret line by line, in labels the agent stamps, in the event log, SSE,
//! history, files, diffs, egress records, webhook payloads and the delivery
//! log. Each surface is read through the API after a real turn.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::{
    Backend, TestApp, User, create_conversation, finished_turns, scripted_app, scripted_runtime_agent, sh,
};
use crate::events::Sse;
use crate::receiver::Receiver;

/// Has a quote, a backslash, a slash and a non-ASCII char: each escapes in JSON.
const JSON_SECRET: &str = "p@ss\"w\\rd/é!";
const PEM_SECRET: &str =
    "-----BEGIN TEST KEY-----\nMIIBOgIBAAJBAKj34GkxFhD9abc\n0s+Tn/Q6bwIDAQABAkEAhz09\nxyz\n-----END TEST KEY-----\n";
const LABEL_SECRET: &str = "label-s3cret-42";
const ENV_SECRET: &str = "env-s3cret-value-9";

/// Every form of every secret that must not be seen, and pieces of them.
fn leaks() -> Vec<String> {
    let mut out: Vec<String> = vec![
        JSON_SECRET.into(),
        r#"p@ss\"w\\rd/é!"#.into(),
        r#"p@ss\"w\\rd/\u00e9!"#.into(),
        r#"p@ss\"w\\rd\/\u00e9!"#.into(),
        "p@ss".into(),
        LABEL_SECRET.into(),
        ENV_SECRET.into(),
        "s3cret".into(),
    ];
    out.extend(PEM_SECRET.lines().filter(|l| l.len() >= 8).map(str::to_owned));
    out
}

/// Fails when any string (or key) in `v` holds a form of a secret.
#[track_caller]
fn assert_clean(surface: &str, v: &Value) {
    let check = |s: &str| {
        for leak in leaks() {
            assert!(!s.contains(&leak), "{surface}: {leak:?} leaked in {s:?}");
        }
    };
    match v {
        Value::String(s) => check(s),
        Value::Array(a) => a.iter().for_each(|x| assert_clean(surface, x)),
        Value::Object(o) => o.iter().for_each(|(k, x)| {
            check(k);
            assert_clean(surface, x);
        }),
        _ => {}
    }
}

async fn put(app: &TestApp, u: &User, path: &str, value: &str) {
    let r = app.request(Method::PUT, path, Some(&u.key), Some(json!({"value": value}))).await;
    assert!(r.status.is_success(), "{}", r.text);
}

async fn ok_data(app: &TestApp, key: &str, path: &str) -> Value {
    let r = app.get(path, key).await;
    assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.text);
    r.body.clone()
}

async fn secrets_never_leave_in_any_printed_form(b: Backend) {
    let app = scripted_app(
        b,
        &[("webhooks.allow_http", json!(true)), ("webhooks.allowed_private_cidrs", json!(["127.0.0.1/32"]))],
    )
    .await;
    let u = app.user().await;
    let receiver = Receiver::start().await;
    let r = app.post("/api/webhooks", &u.key, json!({"url": receiver.url("/hook"), "event_types": ["*"]})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let hook = r.body["data"]["id"].as_str().unwrap().to_owned();

    // The setup prints a secret as Python's json.dumps does, and the key line by line, indented.
    let setup = r#"python3 -c 'import json, os; print(json.dumps({"pw": os.environ["JSON_SECRET"]}))'
printf '%s\n' "$PEM_SECRET" | sed 's/^/  key> /'
git init -q -b main /workspace/repo && cd /workspace/repo && echo start > key.txt && git add key.txt && \
git -c user.email=a@b -c user.name=a commit -q -m init"#;
    let r = app.post("/api/environments", &u.key, json!({"name": "e", "setup_script": setup})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let env: Uuid = r.body["data"]["id"].as_str().unwrap().parse().unwrap();
    put(&app, &u, &format!("/api/environments/{env}/secrets/ENV_SECRET"), ENV_SECRET).await;
    let r = app.post("/api/vaults", &u.key, json!({"name": "v"})).await;
    let vault = r.body["data"]["id"].as_str().unwrap().to_owned();
    for (k, v) in [("JSON_SECRET", JSON_SECRET), ("PEM_SECRET", PEM_SECRET), ("LABEL_SECRET", LABEL_SECRET)] {
        put(&app, &u, &format!("/api/vaults/{vault}/secrets/{k}"), v).await;
    }
    let agent = scripted_runtime_agent(&app, &u, "acp", json!({"environment_id": env, "vault_id": vault})).await;

    // The agent prints the secret JSON-escaped (PHP's slash, Python's \u), a line of the key on its
    // own, the whole key, stamps labels holding secrets, writes a file, names a tool after one.
    let script = [
        r#"say: cfg {"pw": "p@ss\"w\\rd\/\u00e9!"} end"#,
        "say: key line MIIBOgIBAAJBAKj34GkxFhD9abc then",
        "echo-env: PEM_SECRET",
        r#"labels: {"leak": "p@ss\"w\\rd/é!", "label-s3cret-42": "k", "ok": "plain"}"#,
        r#"write: /workspace/out.json {"pw":"p@ss\"w\\rd/\u00e9!","go":"\u003c"}"#,
        r#"tool: t1 read Read p@ss"w\rd/é!"#,
        "say: done",
    ]
    .join("\n");
    let c = create_conversation(&app, &u, json!({"agent_id": agent, "prompt": script})).await;
    let conv: Uuid = c["id"].as_str().unwrap().parse().unwrap();
    let machine: Uuid = c["sandbox_id"].as_str().unwrap().parse().unwrap();
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(t[0].status, "done", "{t:?}");

    // Labels: redacted in keys and values, in the conversation and the list.
    let labels = json!({"leak": "[REDACTED]", "[REDACTED]": "k", "ok": "plain"});
    let got = ok_data(&app, &u.key, &format!("/api/conversations/{conv}")).await;
    assert_eq!(got["data"]["labels"], labels, "{got}");
    assert_clean("conversation", &got);
    assert_clean("list", &ok_data(&app, &u.key, "/api/conversations").await);

    // The event log (prompts and blocks included) and the transcript.
    let feed =
        ok_data(&app, &u.key, &format!("/api/conversations/{conv}/events?limit=5000&prompts=true&blocks=true")).await;
    assert_clean("events", &feed);
    let stdout: String = feed["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["stream"] == "stdout")
        .map(|e| e["data"].as_str().unwrap())
        .collect();
    for shown in [r#"cfg {"pw": "[REDACTED]"} end"#, "key line [REDACTED] then", "[REDACTED]done"] {
        assert!(stdout.contains(shown), "{shown:?} in {stdout:?}");
    }
    let setup_out: String = feed["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "output" && e["turn_id"].is_null())
        .map(|e| e["data"].as_str().unwrap())
        .collect();
    assert!(setup_out.contains(r#"{"pw": "[REDACTED]"}"#), "{setup_out}");
    assert!(setup_out.contains("  key> [REDACTED]\n  key> [REDACTED]\n  key> xyz\n"), "{setup_out}");
    assert_clean("history", &ok_data(&app, &u.key, &format!("/api/conversations/{conv}/history")).await);

    // SSE, from the start.
    let mut sse =
        Sse::at(&app.http, &app.base, &format!("/api/conversations/{conv}/stream?blocks=true"), &u.key, None).await;
    loop {
        let f = sse.frame_within(Duration::from_secs(10)).await.expect("the log replays");
        assert_clean("stream", &f.data);
        if f.data["stage"] == "turn" && f.data["state"] == "done" {
            break;
        }
    }

    // Files and diffs: the file the agent wrote, and the key appended line by line to a tracked file.
    let file = ok_data(&app, &u.key, &format!("/api/sandboxes/{machine}/files?path=/workspace/out.json")).await;
    assert_eq!(file["data"]["content"], r#"{"pw":"[REDACTED]","go":"\u003c"}"#, "{file}");
    sh(&app, machine, "printf '%s' \"$PEM_SECRET\" >> /workspace/repo/key.txt").await;
    let diff = ok_data(&app, &u.key, &format!("/api/sandboxes/{machine}/diff?path=/workspace/repo")).await;
    assert_clean("diff", &diff);
    let text = diff["data"]["diff"].as_str().unwrap();
    assert!(text.contains("+[REDACTED]\n+[REDACTED]\n+[REDACTED]\n+xyz\n+[REDACTED]"), "{text}");
    let whole = ok_data(&app, &u.key, &format!("/api/sandboxes/{machine}/files?path=/workspace/repo/key.txt")).await;
    assert_clean("file", &whole);

    // An egress record of a request to a host named after a secret.
    sh(&app, machine, &format!("curl -s -m 5 -o /dev/null http://{ENV_SECRET}.invalid/; true")).await;
    let mut egress = Value::Null;
    for _ in 0..100 {
        egress = ok_data(&app, &u.key, &format!("/api/sandboxes/{machine}/egress")).await;
        if egress["data"].as_array().unwrap().iter().any(|e| e["host"].as_str().unwrap().contains(".invalid")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_clean("egress", &egress);
    let hosts: Vec<&str> = egress["data"].as_array().unwrap().iter().map(|e| e["host"].as_str().unwrap()).collect();
    assert!(hosts.contains(&"[REDACTED].invalid:80"), "{hosts:?}");

    // Webhook payloads as received, and the delivery log.
    let done = receiver.wait_for_one("the turn's end", |q| q.event_type() == "conversation.turn.done").await;
    assert_eq!(done.json()["data"]["labels"], labels);
    let deliveries = receiver.requests();
    for q in &deliveries {
        for leak in leaks() {
            assert!(!q.text().contains(&leak), "{leak:?} leaked in a webhook: {}", q.text());
        }
    }
    let log = ok_data(&app, &u.key, &format!("/api/webhooks/{hook}/deliveries?limit=200")).await;
    assert!(!log["data"].as_array().unwrap().is_empty());
    assert_clean("delivery log", &log);
}

/// What a machine sends with its callback key (a prompt, a team message to another teammate) is
/// redacted with its secrets before it is stored: the other conversation's log does not know them.
async fn what_a_machine_sends_with_its_key_is_redacted(b: Backend) {
    let app = scripted_app(b, &[]).await;
    let u = app.user().await;
    let r = app.post("/api/vaults", &u.key, json!({"name": "v"})).await;
    let vault = r.body["data"]["id"].as_str().unwrap().to_owned();
    put(&app, &u, &format!("/api/vaults/{vault}/secrets/JSON_SECRET"), JSON_SECRET).await;
    put(&app, &u, &format!("/api/vaults/{vault}/secrets/LABEL_SECRET"), LABEL_SECRET).await;
    let sender = scripted_runtime_agent(&app, &u, "acp", json!({"vault_id": vault})).await;
    let teammate = scripted_runtime_agent(&app, &u, "acp", json!({})).await;
    let r = app.request(Method::PUT, &format!("/api/team/{teammate}"), Some(&u.key), Some(json!({}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let c = create_conversation(&app, &u, json!({"agent_id": sender, "prompt": "say: up"})).await;
    let conv: Uuid = c["id"].as_str().unwrap().parse().unwrap();
    let machine: Uuid = c["sandbox_id"].as_str().unwrap().parse().unwrap();
    finished_turns(&app, conv, 1).await;
    let key = sh(&app, machine, "printf %s \"$ACS_API_KEY\"").await.1;

    let r = app
        .post(
            &format!("/api/conversations/{conv}/prompts"),
            &key,
            json!({"prompt": format!("say: self {JSON_SECRET}"), "client_request_id": format!("id-{LABEL_SECRET}")}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(r.body["data"]["client_request_id"], "id-[REDACTED]");
    let t = finished_turns(&app, conv, 2).await;
    assert_eq!(
        (t[1].prompt.as_str(), t[1].client_request_id.as_deref()),
        ("say: self [REDACTED]", Some("id-[REDACTED]"))
    );

    let r = app
        .post(
            &format!("/api/team/{teammate}/messages"),
            &key,
            json!({"prompt": format!("say: relay {JSON_SECRET}"), "client_request_id": LABEL_SECRET}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(r.body["data"]["client_request_id"], "[REDACTED]");
    let other: Uuid = r.body["data"]["conversation_id"].as_str().unwrap().parse().unwrap();
    let t = finished_turns(&app, other, 1).await;
    assert_eq!(t[0].prompt, "say: relay [REDACTED]");
    let turns = ok_data(&app, &u.key, &format!("/api/conversations/{other}/turns")).await;
    assert_clean("teammate's turns", &turns);
    let feed = ok_data(&app, &u.key, &format!("/api/conversations/{other}/events?prompts=true&blocks=true")).await;
    assert_clean("teammate's events", &feed);
    assert_clean("teammate's history", &ok_data(&app, &u.key, &format!("/api/conversations/{other}/history")).await);
}

crate::both!(secrets_never_leave_in_any_printed_form, what_a_machine_sends_with_its_key_is_redacted);
