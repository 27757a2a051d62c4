//! The extension contract, tested through the example extension: the real
//! server with only this extension linked, on 127.0.0.1:0, each test once on
//! SQLite and once on a fresh PostgreSQL database.

use std::collections::BTreeMap;

use acs_core::extension::{self, config};
use acs_core::features;
use acs_testkit::{
    Backend, TestApp, assert_error, both, create_conversation, finished_turns, said, scripted_app,
    scripted_runtime_agent, sh, spawn,
};
use figment::providers::Serialized;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

// Linked for its `inventory` registration.
use acs_ext_example as _;

both!(
    flag_off_keeps_tables_fields_and_open_routes,
    flag_on_serves_its_state_and_routes,
    hooks_reach_machines,
    a_grant_runs_codex_through_the_broker,
    naming_a_subscription_ends_the_sets_running_codex_turns
);

const ON: (&str, Value) = ("features.example", Value::Bool(true));

async fn flag_off_keeps_tables_fields_and_open_routes(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    // Gated routes answer 404 <name>_not_enabled; the ungated public one is served.
    assert_error(&app.get("/api/example/notes", &u.key).await, StatusCode::NOT_FOUND, "example_not_enabled");
    let hello = app.request(Method::GET, "/api/example/hello", None, None).await;
    assert_eq!(hello.status, StatusCode::OK, "{}", hello.text);
    assert_eq!(hello.body["data"]["greeting"], "hello", "the section's default");
    // Answer fields are present with the flag off too.
    let me = app.get("/api/auth/me", &u.key).await;
    assert_eq!(me.body["data"]["example_enabled"], false, "{}", me.text);
    let catalog = app.get("/api/catalog", &u.key).await;
    assert_eq!(catalog.body["data"]["example_greeting"], "hello", "{}", catalog.text);
    // Its migrations ran in their own history, flag off or not.
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations_example")
        .fetch_one(&app.state().db.pool)
        .await
        .unwrap();
    assert_eq!(n, 1);
    let n: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM example_notes").fetch_one(&app.state().db.pool).await.unwrap();
    assert_eq!(n, 0);
    // The document: each group as its access says, the added fields in the answers' schemas.
    let doc = app.request(Method::GET, "/api/docs", None, None).await.body;
    assert_eq!(doc["paths"]["/api/example/hello"]["get"]["security"], json!([]));
    let notes = &doc["paths"]["/api/example/notes"]["get"];
    assert!(notes["security"].is_null() && notes["responses"]["401"].is_object(), "{notes}");
    let me_schema = &doc["components"]["schemas"]["Me"];
    assert_eq!(me_schema["properties"]["example_enabled"]["type"], "boolean", "{me_schema}");
    assert!(me_schema["required"].as_array().unwrap().contains(&json!("example_enabled")));
    assert_eq!(doc["components"]["schemas"]["Catalog"]["properties"]["example_greeting"]["type"], "string");
}

async fn flag_on_serves_its_state_and_routes(b: Backend) {
    let app = acs_testkit::spawn_with(b, &[ON, ("example.greeting", json!("hi"))]).await;
    let u = app.user().await;
    let other = app.user().await;
    assert_eq!(app.request(Method::GET, "/api/example/hello", None, None).await.body["data"]["greeting"], "hi");
    assert_eq!(app.get("/api/auth/me", &u.key).await.body["data"]["example_enabled"], true);
    // Account routes: authenticated, validated, scoped to the account.
    let r = app.request(Method::GET, "/api/example/notes", None, None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.text);
    let r = app.post("/api/example/notes", &u.key, json!({"body": ""})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    let r = app.post("/api/example/notes", &u.key, json!({"body": "first"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(app.get("/api/example/notes", &u.key).await.body["data"][0]["body"], "first");
    assert_eq!(app.get("/api/example/notes", &other.key).await.body["data"], json!([]));
    let whoami = app.get("/api/example/whoami", &u.key).await;
    assert_eq!(whoami.body["data"]["account_id"], u.id.as_str(), "{}", whoami.text);
    assert_eq!(whoami.body["data"]["sandbox_id"], Value::Null);
    // The account-deleted hook removes the account's rows.
    extension::account_deleted(app.state(), u.id.parse().unwrap()).await.unwrap();
    assert_eq!(app.get("/api/example/notes", &u.key).await.body["data"], json!([]));
}

/// The egress hook, the credential source and the sandbox-key group, seen from inside a machine.
async fn hooks_reach_machines(b: Backend) {
    let app = scripted_app(
        b,
        &[ON, ("example.blocked_host", json!("blocked.test")), ("example.anthropic_api_key", json!("sk-ant-example"))],
    )
    .await;
    let u = app.user().await;
    // An empty default set: the key comes from the extension's source, not the platform.
    let r = app.post("/api/account/inference-credential-sets", &u.key, json!({"name": "mine"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let agent = scripted_runtime_agent(&app, &u, "claude", json!({})).await;
    let c = create_conversation(&app, &u, json!({"agent_id": agent, "prompt": "say: hi"})).await;
    let conv: Uuid = c["id"].as_str().unwrap().parse().unwrap();
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(t[0].status, "done", "{t:?}");
    let machine: Uuid = c["sandbox_id"].as_str().unwrap().parse().unwrap();
    assert_eq!(agent_vars(&app, machine).await.get("ANTHROPIC_API_KEY").map(String::as_str), Some("sk-ant-example"));

    let through_proxy = |host: &str| {
        format!("curl -s -o /dev/null --noproxy '' -x \"$http_proxy\" -m 5 -w '%{{http_code}}' http://{host}/")
    };
    assert_eq!(sh(&app, machine, &through_proxy("blocked.test")).await.1, "403", "the hook refuses its host");
    let other = sh(&app, machine, &through_proxy("other.test")).await.1;
    assert_ne!(other, "403", "other hosts pass the hook (and fail to resolve)");

    // The flag turned off while the server runs: the hook and the gated routes stop at once, and come back.
    let state = app.state().clone();
    let set = |on: bool| {
        let state = state.clone();
        async move {
            let by = features::Changer { actor: "cli".into(), ip: None };
            features::store(&state.db, "example", Some(on), &by).await.unwrap();
            features::refresh(&state).await.unwrap();
        }
    };
    set(false).await;
    assert_ne!(sh(&app, machine, &through_proxy("blocked.test")).await.1, "403", "no hook while off");
    assert_error(&app.get("/api/example/notes", &u.key).await, StatusCode::NOT_FOUND, "example_not_enabled");
    assert_eq!(app.get("/api/auth/me", &u.key).await.body["data"]["example_enabled"], false);
    set(true).await;
    assert_eq!(sh(&app, machine, &through_proxy("blocked.test")).await.1, "403", "the hook again");
    assert_eq!(app.get("/api/example/notes", &u.key).await.status, StatusCode::OK);

    let call = |path: &str| {
        format!(
            "curl -s -o /dev/null -m 5 -w '%{{http_code}}' -H \"authorization: Bearer $ACS_API_KEY\" \"$ACS_API_URL{path}\""
        )
    };
    assert_eq!(sh(&app, machine, &call("/api/example/whoami")).await.1, "200", "a sandbox group admits its key");
    assert_eq!(sh(&app, machine, &call("/api/example/notes")).await.1, "403", "an account group refuses it");
}

const GRANT_HOST: &str = "api.grant.test";

/// A set naming the example's subscription: codex on it runs with a placeholder key that the
/// broker swaps for the subscription's token at the vendor's hosts; without the broker, or on an
/// unusable subscription, a start answers 409 `openai_grant_unusable` and nothing falls back.
async fn a_grant_runs_codex_through_the_broker(b: Backend) {
    let dir = std::env::temp_dir().join(format!("acs-upstream-{}", Uuid::new_v4().simple()));
    let upstream = acs_testkit::upstream::HttpsUpstream::start(&[GRANT_HOST], &dir).await;
    let grant_id = Uuid::new_v4();
    let token = format!("grant-token-{}", Uuid::new_v4().simple());
    let grant = |unusable: Option<&str>| json!({"id": grant_id, "name": "work", "token": token, "hosts": [GRANT_HOST], "unusable": unusable});
    let app = scripted_app(
        b,
        &[
            ON,
            ("example.grant", grant(None)),
            ("features.brokerage", json!(true)),
            ("sandbox.blocked_cidrs", json!([])),
            ("sandbox.host_overrides", json!([format!("{GRANT_HOST}=127.0.0.1")])),
            ("broker.upstream_ca_file", json!(upstream.ca_file.display().to_string())),
        ],
    )
    .await;
    let u = app.user().await;
    let r = app.post("/api/account/inference-credential-sets", &u.key, json!({"name": "sub"})).await;
    let set = r.body["data"]["id"].as_str().unwrap().to_owned();
    let path = format!("/api/account/inference-credential-sets/{set}");
    let r = app.request(Method::PATCH, &path, Some(&u.key), Some(json!({"openai_grant_id": Uuid::new_v4()}))).await;
    assert_error(&r, StatusCode::NOT_FOUND, "not_found");
    let r = app.request(Method::PATCH, &path, Some(&u.key), Some(json!({"openai_grant_id": grant_id}))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["openai_grant"], json!({"id": grant_id, "name": "work", "status": "active"}));

    let agent = scripted_runtime_agent(&app, &u, "codex", json!({"inference_credential_id": set})).await;
    let port = upstream.port;
    let prompt = format!(
        "echo-env: OPENAI_API_KEY\nrun: curl -sS https://{GRANT_HOST}:{port}/echo -H 'authorization: Bearer machine-made'"
    );
    let c = create_conversation(&app, &u, json!({"agent_id": agent, "prompt": prompt})).await;
    let conv: Uuid = c["id"].as_str().unwrap().parse().unwrap();
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(t[0].status, "done", "{t:?}");
    let inference = t[0].inference.clone().unwrap_or_default();
    assert_eq!(
        (&inference["scope"], &inference["openai_grant_id"]),
        (&json!("grant"), &json!(grant_id)),
        "{inference}"
    );
    let text = said(&app, conv).await;
    // The agent's key is a credential, so its output reads redacted; what the machine holds is the placeholder.
    assert!(text.starts_with("[REDACTED]") && !text.contains(&token), "{text}");
    let machine: Uuid = c["sandbox_id"].as_str().unwrap().parse().unwrap();
    let (_, env, _) =
        sh(&app, machine, "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep '^OPENAI_API_KEY=' | sort -u")
            .await;
    assert_eq!(env.trim(), format!("OPENAI_API_KEY={}", acs_core::inference::GRANT_PLACEHOLDER));
    assert!(text.contains("hello from upstream[exit 0]"), "{text}");
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].authorization.as_deref(), Some(format!("Bearer {token}").as_str()));
    let sandbox = c["sandbox_id"].as_str().unwrap();
    let log = app.get(&format!("/api/sandboxes/{sandbox}/egress"), &u.key).await;
    let record = &log.body["data"][0];
    assert_eq!(
        (&record["service"], &record["credential_keys"]),
        (&json!("openai_subscription"), &json!(["example_subscription"]))
    );

    // Without the broker the subscription cannot be used, and nothing falls back.
    app.state().features.set("brokerage", false);
    let r = app.post("/api/conversations", &u.key, json!({"agent_id": agent, "prompt": "say: hi"})).await;
    assert_error(&r, StatusCode::CONFLICT, "openai_grant_unusable");
    assert_eq!((&r.body["reason"], &r.body["grant_id"]), (&json!("broker_required"), &json!(grant_id)), "{}", r.text);
    // A turn on the running conversation is refused the same way, and the stream says so.
    let r = app.post(&format!("/api/conversations/{conv}/prompts"), &u.key, json!({"prompt": "say: hi"})).await;
    assert_error(&r, StatusCode::CONFLICT, "openai_grant_unusable");
    let events = app.get(&format!("/api/conversations/{conv}/events?limit=1000"), &u.key).await;
    let refused = events.body["data"].as_array().unwrap().iter().find(|e| e["stage"] == "admission_refused").cloned();
    let refused = refused.unwrap_or_else(|| panic!("no admission_refused: {}", events.text));
    let data: Value = serde_json::from_str(refused["data"].as_str().unwrap_or("{}")).unwrap();
    assert_eq!(
        (&data["error"], &data["reason"]),
        (&json!("openai_grant_unusable"), &json!("broker_required")),
        "{refused}"
    );
    std::fs::remove_dir_all(&dir).ok();

    // A spent subscription says until when.
    let app =
        scripted_app(b, &[ON, ("example.grant", grant(Some("exhausted"))), ("features.brokerage", json!(true))]).await;
    let u = app.user().await;
    let r = app.post("/api/account/inference-credential-sets", &u.key, json!({"name": "sub"})).await;
    let set = r.body["data"]["id"].as_str().unwrap().to_owned();
    let path = format!("/api/account/inference-credential-sets/{set}");
    app.request(Method::PATCH, &path, Some(&u.key), Some(json!({"openai_grant_id": grant_id}))).await;
    let agent = scripted_runtime_agent(&app, &u, "codex", json!({"inference_credential_id": set})).await;
    let r = app.post("/api/conversations", &u.key, json!({"agent_id": agent, "prompt": "say: hi"})).await;
    assert_error(&r, StatusCode::CONFLICT, "openai_grant_unusable");
    assert_eq!(r.body["reason"], "exhausted", "{}", r.text);
    assert!(r.body["until"].as_str().is_some_and(|u| u.starts_with("2052")), "{}", r.text);
    assert_eq!(r.body["grant"]["name"], "work");
}

/// A set whose codex turn runs starts naming a subscription: that turn stops (its source
/// changed under it), and the conversation's next turn runs on the subscription.
async fn naming_a_subscription_ends_the_sets_running_codex_turns(b: Backend) {
    let grant_id = Uuid::new_v4();
    let grant = json!({"id": grant_id, "name": "work", "token": "t", "hosts": [GRANT_HOST]});
    let app = scripted_app(b, &[ON, ("example.grant", grant), ("features.brokerage", json!(true))]).await;
    let u = app.user().await;
    let r = app.post("/api/account/inference-credential-sets", &u.key, json!({"name": "keyed"})).await;
    let set = r.body["data"]["id"].as_str().unwrap().to_owned();
    let path = format!("/api/account/inference-credential-sets/{set}");
    let r = app
        .request(
            Method::PUT,
            &format!("{path}/credentials/openai_api_key"),
            Some(&u.key),
            Some(json!({"value": "sk-own"})),
        )
        .await;
    assert!(r.status.is_success(), "{}", r.text);
    let agent = scripted_runtime_agent(&app, &u, "codex", json!({"inference_credential_id": set})).await;
    let c = create_conversation(&app, &u, json!({"agent_id": agent, "prompt": "say: working\nsleep: 60000"})).await;
    let conv: Uuid = c["id"].as_str().unwrap().parse().unwrap();
    for _ in 0..400 {
        if said(&app, conv).await.contains("working") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let r = app.request(Method::PATCH, &path, Some(&u.key), Some(json!({"openai_grant_id": grant_id}))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let t = finished_turns(&app, conv, 1).await;
    assert_eq!(t[0].status, "interrupted", "{t:?}");
    let r = app.post(&format!("/api/conversations/{conv}/prompts"), &u.key, json!({"prompt": "say: again"})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let t = finished_turns(&app, conv, 2).await;
    let next = t.iter().find(|t| t.status == "done").expect("the next turn ran");
    assert_eq!(next.inference.clone().unwrap_or_default()["scope"], "grant", "{t:?}");

    // A codex conversation on a subscription may join a machine whose codex runs on a key
    // (spec 4.1 rule 3's exemption); another key may not.
    let keyed = |name: &'static str| {
        let app = &app;
        let key = &u.key;
        async move {
            let r = app.post("/api/account/inference-credential-sets", key, json!({"name": name})).await;
            let id = r.body["data"]["id"].as_str().unwrap().to_owned();
            let path = format!("/api/account/inference-credential-sets/{id}/credentials/openai_api_key");
            app.request(Method::PUT, &path, Some(key), Some(json!({"value": format!("sk-{name}")}))).await;
            id
        }
    };
    let (first, second) = (keyed("first").await, keyed("second").await);
    let home_agent = scripted_runtime_agent(&app, &u, "codex", json!({"sandbox_mode": "persistent"})).await;
    let home = create_conversation(&app, &u, json!({"agent_id": home_agent, "inference_credential_id": first})).await;
    let machine = home["sandbox_id"].clone();
    for _ in 0..600 {
        let r = app.get(&format!("/api/sandboxes/{}", machine.as_str().unwrap()), &u.key).await;
        if r.body["data"]["status"] == "ready" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let join = |set: String| json!({"agent_id": home_agent, "sandbox_id": machine, "inference_credential_id": set});
    let r = app.post("/api/conversations", &u.key, join(second)).await;
    assert_error(&r, StatusCode::CONFLICT, "codex_inference_conflict");
    let r = app.post("/api/conversations", &u.key, join(set)).await;
    assert_eq!(r.status, StatusCode::CREATED, "the subscription is exempt: {}", r.text);
}

/// The model-credential variables of the processes running in a machine.
async fn agent_vars(app: &TestApp, sandbox: Uuid) -> BTreeMap<String, String> {
    let script = "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; echo; done 2>/dev/null \
                  | grep -E '^ANTHROPIC_API_KEY=' | sort -u";
    let (_, out, _) = sh(app, sandbox, script).await;
    out.lines().filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned()))).collect()
}

#[test]
fn its_section_is_checked_with_the_flag_off() {
    let with =
        |key: &str, value: Value| config::from_figment(config::figment(None).merge(Serialized::default(key, value)));
    let blank = with("example.greeting", json!(" ")).unwrap_err().to_string();
    assert!(blank.contains("example.greeting"), "{blank}");
    let unknown = with("example.greting", json!("hi")).unwrap_err().to_string();
    assert!(unknown.contains("greting"), "{unknown}");
    assert!(with("example.greeting", json!("hi")).is_ok());
}

#[tokio::test]
async fn its_command_joins_the_cli() {
    let cli = extension::with_commands(clap_command());
    let matches = cli.try_get_matches_from(["acs", "example", "count"]).unwrap();
    let (command, sub) = extension::command_of(&matches).expect("an extension command");
    let dir = std::env::temp_dir().join(format!("acs-example-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}", dir.join("acs.db").display());
    let loaded = config::from_figment(config::figment(None).merge(Serialized::default("database.url", url))).unwrap();
    (command.run)(&loaded, sub).await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let core_only = extension::with_commands(clap_command()).try_get_matches_from(["acs", "serve"]).unwrap();
    assert!(extension::command_of(&core_only).is_none(), "core's commands are not the extension's");
}

/// A stand-in for the `acs` command with one core subcommand.
fn clap_command() -> clap::Command {
    clap::Command::new("acs").subcommand(clap::Command::new("serve"))
}
