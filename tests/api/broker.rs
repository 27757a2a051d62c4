//! The egress broker from outside (DESIGN 9.5): secret bindings over the
//! API, gated by `features.brokerage`; a turn in a brokered machine whose
//! agent runs curl, git over HTTPS, Node and Python against a real HTTPS upstream
//! with its own CA; the upstream sees the credential, the machine, its
//! events and the API never do.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::upstream::HttpsUpstream;
use crate::common::{
    Backend, TestApp, User, create_conversation, finished_turns_within, said, scripted_app, scripted_runtime_agent, sh,
    spawn_with,
};

crate::both!(bindings_are_gated_validated_and_scoped, a_brokered_turn_attaches_credentials_it_never_sees);

const API: &str = "api.upstream.test";
const GIT: &str = "git.upstream.test";
const OUTSIDE: &str = "outside.upstream.test";

async fn vault_with(app: &TestApp, u: &User, secrets: &[(&str, &str)]) -> Uuid {
    let r = app.post("/api/vaults", &u.key, json!({"name": format!("v-{}", Uuid::new_v4().simple())})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let id: Uuid = r.body["data"]["id"].as_str().unwrap().parse().unwrap();
    for (key, value) in secrets {
        let path = format!("/api/vaults/{id}/secrets/{key}");
        let r = app.request(Method::PUT, &path, Some(&u.key), Some(json!({"value": value}))).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    }
    id
}

async fn patch(app: &TestApp, u: &User, id: &str, body: Value) -> crate::common::Resp {
    app.request(Method::PATCH, &format!("/api/secret-bindings/{id}"), Some(&u.key), Some(body)).await
}

fn binding(name: &str, host: &str, vault: Uuid, key: &str) -> Value {
    json!({"name": name, "host": host, "header": "authorization", "template": "Bearer {value}",
        "source": {"vault_id": vault, "key": key}})
}

async fn bindings_are_gated_validated_and_scoped(b: Backend) {
    let app = spawn_with(b, &[]).await;
    let u = app.user().await;
    let me = app.get("/api/auth/me", &u.key).await;
    assert_eq!(me.body["data"]["brokered"], false, "{}", me.text);
    let vault = vault_with(&app, &u, &[("TOKEN", "v")]).await;

    // Off: creating, retargeting and enabling answer 404 brokerage_not_enabled.
    let r = app.post("/api/secret-bindings", &u.key, binding("gh", "api.github.com", vault, "TOKEN")).await;
    assert_eq!(
        (r.status, r.body["error"].as_str()),
        (StatusCode::NOT_FOUND, Some("brokerage_not_enabled")),
        "{}",
        r.text
    );

    app.state().features.set("brokerage", true);
    let me = app.get("/api/auth/me", &u.key).await;
    assert_eq!(me.body["data"]["brokered"], true);
    let r = app.post("/api/secret-bindings", &u.key, binding("gh", "api.github.com", vault, "TOKEN")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let created = r.body["data"].clone();
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["enabled"], true);
    assert_eq!(created["source"], json!({"vault_id": vault, "key": "TOKEN"}));
    assert!(!r.text.contains("\"v\""), "no value in the answer: {}", r.text);
    let r = app.post("/api/secret-bindings", &u.key, binding("gh", "api.example.com", vault, "TOKEN")).await;
    assert_eq!((r.status, r.body["error"].as_str()), (StatusCode::CONFLICT, Some("secret_binding_name_taken")));

    for (bad, field) in [
        (json!({"host": "https://api.github.com"}), "host"),
        (json!({"host": "*"}), "host"),
        (json!({"header": "host"}), "header"),
        (json!({"template": "Bearer"}), "template"),
        (json!({"source": {"vault_id": vault}}), "source"),
        (json!({"source": {"vault_id": Uuid::new_v4(), "key": "K"}}), "source.vault_id"),
        (json!({"source": {"environment_id": Uuid::new_v4(), "key": "K"}}), "source.environment_id"),
        (json!({"source": {"connection_id": Uuid::new_v4()}}), "source.connection_id"),
    ] {
        let mut body = binding("other", "api.example.com", vault, "TOKEN");
        body.as_object_mut().unwrap().extend(bad.as_object().unwrap().clone());
        let r = app.post("/api/secret-bindings", &u.key, body.clone()).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {}", r.text);
        assert!(r.body["errors"][field].is_array(), "{field}: {}", r.text);
    }

    // Another account sees none of it, and cannot bind this account's vault.
    let other = app.user().await;
    assert_eq!(app.get(&format!("/api/secret-bindings/{id}"), &other.key).await.status, StatusCode::NOT_FOUND);
    assert_eq!(app.get("/api/secret-bindings", &other.key).await.body["data"], json!([]));
    let r = app.post("/api/secret-bindings", &other.key, binding("steal", "evil.example.com", vault, "TOKEN")).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert_eq!(patch(&app, &other, &id, json!({"enabled": false})).await.status, StatusCode::NOT_FOUND);

    // Off again: disabling, reading and deleting stay open; retargeting and enabling do not.
    app.state().features.set("brokerage", false);
    let r = patch(&app, &u, &id, json!({"enabled": false})).await;
    assert_eq!((r.status, &r.body["data"]["enabled"]), (StatusCode::OK, &json!(false)), "{}", r.text);
    for body in [json!({"enabled": true}), json!({"host": "api.example.com"}), json!({"template": "token {value}"})] {
        let r = patch(&app, &u, &id, body).await;
        assert_eq!(r.body["error"], "brokerage_not_enabled", "{}", r.text);
    }
    assert_eq!(app.get("/api/secret-bindings", &u.key).await.body["data"].as_array().unwrap().len(), 1);
    let r = app.get("/api/audit", &u.key).await;
    let actions: Vec<&str> = r.body["data"].as_array().unwrap().iter().filter_map(|e| e["action"].as_str()).collect();
    assert!(actions.contains(&"secret_binding.created") && actions.contains(&"secret_binding.updated"), "{actions:?}");
    assert_eq!(app.delete(&format!("/api/secret-bindings/{id}"), &u.key).await.status, StatusCode::NO_CONTENT);
    assert_eq!(app.get(&format!("/api/secret-bindings/{id}"), &u.key).await.status, StatusCode::NOT_FOUND);
}

/// The conversation's whole event log as the API gives it.
async fn event_log(app: &TestApp, u: &User, conv: &str) -> String {
    app.get(&format!("/api/conversations/{conv}/events?limit=1000"), &u.key).await.text
}

async fn egress(app: &TestApp, u: &User, sandbox: &str) -> Vec<Value> {
    let r = app.get(&format!("/api/sandboxes/{sandbox}/egress?limit=100"), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body["data"].as_array().unwrap().clone()
}

async fn a_brokered_turn_attaches_credentials_it_never_sees(b: Backend) {
    let dir = std::env::temp_dir().join(format!("acs-upstream-{}", Uuid::new_v4().simple()));
    let upstream = HttpsUpstream::start(&[API, GIT, OUTSIDE], &dir).await;
    upstream.git_repository("repo", "brokered clone\n");
    let overrides: Vec<String> = [API, GIT, OUTSIDE].iter().map(|h| format!("{h}=127.0.0.1")).collect();
    let app = scripted_app(
        b,
        &[
            // The host stands in for the internet: loopback is not blocked here.
            ("sandbox.blocked_cidrs", json!([])),
            ("sandbox.host_overrides", json!(overrides)),
            ("broker.upstream_ca_file", json!(upstream.ca_file.display().to_string())),
            ("features.brokerage", json!(true)),
        ],
    )
    .await;
    let u = app.user().await;
    let token = format!("tok-{}", Uuid::new_v4().simple());
    let next = format!("next-{}", Uuid::new_v4().simple());
    let vault = vault_with(&app, &u, &[("UPSTREAM_TOKEN", &token)]).await;
    // Not the agent's vault: a binding may draw on any of the account's.
    let other_vault = vault_with(&app, &u, &[("NEXT_TOKEN", &next)]).await;
    let r =
        app.post("/api/secret-bindings", &u.key, binding("upstream", "*.upstream.test", vault, "UPSTREAM_TOKEN")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let bound = r.body["data"]["id"].as_str().unwrap().to_owned();
    let r = app.post("/api/secret-bindings", &u.key, binding("outside", OUTSIDE, vault, "MISSING")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    // No allowed host at all: bound hosts need no entry, everything else is refused.
    let r = app
        .post(
            "/api/environments",
            &u.key,
            json!({"name": "locked", "networking_type": "limited", "networking_config": {"allowed_hosts": []}}),
        )
        .await;
    let env = r.body["data"]["id"].as_str().unwrap().to_owned();
    let a = scripted_runtime_agent(&app, &u, "acp", json!({"environment_id": env, "vault_id": vault})).await;
    let port = upstream.port;
    let node = format!(
        "const http=require('http'),https=require('https'),tls=require('tls');\
         const p=new URL(process.env.HTTPS_PROXY);\
         http.request({{host:p.hostname,port:p.port,method:'CONNECT',path:'{API}:{port}'}}).on('connect',(res,socket)=>{{\
         https.get({{host:'{API}',port:{port},path:'/echo',createConnection:()=>tls.connect({{socket,servername:'{API}'}})}},r=>{{\
         let b='';r.on('data',d=>b+=d);r.on('end',()=>console.log('node '+r.statusCode+' '+b))}})}}).end();"
    );
    let prompt = format!(
        "run: curl -sS https://{API}:{port}/echo -H 'authorization: Bearer machine-made'\n\
         run: git clone -q https://{GIT}:{port}/repo.git /tmp/repo && cat /tmp/repo/README\n\
         write: /tmp/fetch.js {node}\n\
         run: node /tmp/fetch.js\n\
         run: python3 -c \"import urllib.request as u; print('python', u.urlopen('https://{API}:{port}/echo').read().decode())\"\n\
         run: curl -s -o /dev/null -w 'outside %{{http_code}}' https://{OUTSIDE}:{port}/echo\n\
         run: curl -s -o /dev/null -w 'elsewhere %{{http_connect}}' https://example.com/\n\
         run: echo env=$UPSTREAM_TOKEN; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c UPSTREAM_TOKEN"
    );
    let conv = create_conversation(&app, &u, json!({"agent_id": a, "prompt": prompt})).await;
    let conv_id: Uuid = conv["id"].as_str().unwrap().parse().unwrap();
    let sandbox = conv["sandbox_id"].as_str().unwrap().to_owned();
    let turns = finished_turns_within(&app, conv_id, 1, 120).await;
    assert_eq!(turns[0].status, "done", "{turns:?}");
    let text = said(&app, conv_id).await;
    for want in [
        "hello from upstream[exit 0]",
        "brokered clone",
        "node 200 hello from upstream",
        "python hello from upstream",
        "outside 502",
        "elsewhere 403",
        "env=\n0\n",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }

    // The upstream saw the credential on every brokered request, never the machine's own.
    let seen = upstream.seen();
    let on_api: Vec<_> = seen.iter().filter(|s| s.path == "/echo").collect();
    assert_eq!(on_api.len(), 3, "curl, Node and Python: {seen:?}");
    assert!(seen.iter().filter(|s| s.path.starts_with("/repo.git")).count() >= 2, "{seen:?}");
    let want = format!("Bearer {token}");
    assert!(seen.iter().all(|s| s.authorization.as_deref() == Some(want.as_str())), "{seen:?}");

    // Egress records name the binding and the key, never the value.
    let records = egress(&app, &u, &sandbox).await;
    let brokered: Vec<&Value> = records.iter().filter(|e| e["service"] == "upstream").collect();
    assert!(brokered.len() >= 4, "{records:?}");
    assert!(brokered.iter().all(|e| e["credential_keys"] == json!(["UPSTREAM_TOKEN"]) && e["path"] == "/[REDACTED]"));
    let missing =
        records.iter().find(|e| e["host"] == format!("{OUTSIDE}:{port}")).expect("the missing value's record");
    assert_eq!(
        (&missing["status"], &missing["error"], &missing["service"]),
        (&json!(502), &json!("credential_missing"), &json!("outside"))
    );
    assert!(records.iter().any(|e| e["host"] == "example.com:443" && e["status"] == 403), "{records:?}");

    // A binding retargeted while a turn runs applies to that turn's next request.
    let before = upstream.seen().len();
    let prompt =
        format!("run: curl -sS https://{API}:{port}/echo\nrun: sleep 3\nrun: curl -sS https://{API}:{port}/echo");
    let r = app.post(&format!("/api/conversations/{conv_id}/prompts"), &u.key, json!({"prompt": prompt})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    upstream.wait_for(30, |s| s.len() > before).await;
    let r = patch(&app, &u, &bound, json!({"source": {"vault_id": other_vault, "key": "NEXT_TOKEN"}})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    finished_turns_within(&app, conv_id, 2, 60).await;
    let seen = upstream.seen();
    let auth: Vec<_> = seen[before..].iter().map(|s| s.authorization.clone().unwrap_or_default()).collect();
    assert_eq!(auth, [format!("Bearer {token}"), format!("Bearer {next}")]);

    // Disabled: the host is a plain tunnel again, and the machine does not trust the upstream.
    let r = patch(&app, &u, &bound, json!({"enabled": false})).await;
    assert_eq!(r.status, StatusCode::OK);
    let before = upstream.seen().len();
    let (_, out, _) = sh(
        &app,
        sandbox.parse().unwrap(),
        &format!("curl -s -o /dev/null -w '%{{http_code}}' https://{API}:{port}/echo; echo \" $?\""),
    )
    .await;
    assert!(out.ends_with(" 60\n") || out.contains("000"), "untrusted upstream certificate: {out}");
    assert_eq!(upstream.seen().len(), before, "no request reached the upstream");

    // No value anywhere it should not be: the machine (files, environment,
    // processes), the event log, the egress log, the bindings.
    use base64::Engine;
    for value in [&token, &next] {
        // The value is searched for without being written anywhere in the machine, not even in
        // this command's own arguments.
        let encoded = base64::engine::general_purpose::STANDARD.encode(value);
        let (_, out, err) = sh(
            &app,
            sandbox.parse().unwrap(),
            &format!(
                "p() {{ echo {encoded} | base64 -d; }}; \
                 grep -rlF -f <(p) /home /workspace /tmp /etc /run /opt /var 2>/dev/null | head -3; \
                 cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n' | grep -cF -f <(p); \
                 ps auxe | grep -cF -f <(p)"
            ),
        )
        .await;
        assert_eq!(out, "0\n0\n", "the machine holds the value: {out} {err}");
        let disk = app.dir.join("sandboxes");
        let found = std::process::Command::new("grep").args(["-rl", value.as_str()]).arg(&disk).output().unwrap();
        assert!(found.stdout.is_empty(), "on the machine's disk: {}", String::from_utf8_lossy(&found.stdout));
        let log = event_log(&app, &u, conv["id"].as_str().unwrap()).await;
        assert!(!log.contains(value.as_str()), "in the event log");
        let records = serde_json::to_string(&egress(&app, &u, &sandbox).await).unwrap();
        assert!(!records.contains(value.as_str()), "in the egress log");
        assert!(!app.get("/api/secret-bindings", &u.key).await.text.contains(value.as_str()));
    }
    std::fs::remove_dir_all(&dir).ok();
}

crate::both!(a_broker_that_does_not_answer_refuses_the_start, a_broker_on_its_own_host_survives_being_killed);

/// A port nothing listens on.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

async fn start_refused(app: &TestApp) -> crate::common::Resp {
    let u = app.user().await;
    let a = scripted_runtime_agent(app, &u, "acp", json!({})).await;
    app.post("/api/conversations", &u.key, json!({"agent_id": a, "prompt": "say: hi"})).await
}

async fn a_broker_that_does_not_answer_refuses_the_start(b: Backend) {
    let refused = format!("http://127.0.0.1:{}", closed_port());
    let app = scripted_app(b, &[("broker.url", json!(refused)), ("features.brokerage", json!(true))]).await;
    let r = start_refused(&app).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.text);
    assert_eq!(
        (r.body["error"].as_str(), r.body["reason"].as_str()),
        (Some("broker_unavailable"), Some("econnrefused"))
    );
    let machines = sqlx::query("SELECT id FROM sandboxes").fetch_all(&app.state().db.pool).await.unwrap();
    assert!(machines.is_empty(), "no machine was made");

    // Accepts the connection, never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let app = scripted_app(b, &[("broker.url", json!(url)), ("features.brokerage", json!(true))]).await;
    let r = start_refused(&app).await;
    assert_eq!((r.body["error"].as_str(), r.body["reason"].as_str()), (Some("broker_unavailable"), Some("timeout")));
    drop(silent);
}

/// `acs broker` as a process of its own, its log kept in `log`.
fn broker_process(config: &std::path::Path, log: &std::path::Path) -> std::process::Child {
    let log = std::fs::File::create(log).unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_acs"))
        .args(["--config", config.to_str().unwrap(), "broker"])
        .env("RUST_LOG", "debug")
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap()
}

async fn wait_healthy(port: u16) {
    for _ in 0..200 {
        if let Ok(r) = reqwest::get(format!("http://127.0.0.1:{port}/health")).await
            && r.status() == StatusCode::OK
        {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("acs broker did not come up");
}

async fn a_broker_on_its_own_host_survives_being_killed(b: Backend) {
    let dir = std::env::temp_dir().join(format!("acs-upstream-{}", Uuid::new_v4().simple()));
    let upstream = HttpsUpstream::start(&[API], &dir).await;
    let broker_port = closed_port();
    let ca_file = upstream.ca_file.display().to_string();
    let overrides = json!([format!("{API}=127.0.0.1")]);
    let app = scripted_app(
        b,
        &[
            ("sandbox.blocked_cidrs", json!([])),
            ("sandbox.host_overrides", overrides.clone()),
            ("broker.url", json!(format!("http://127.0.0.1:{broker_port}"))),
            ("features.brokerage", json!(true)),
        ],
    )
    .await;
    // The broker's own configuration: the same database and master key, its own listener.
    let env: std::collections::BTreeMap<String, String> = app.config_env().into_iter().collect();
    let config = app.dir.join("broker.toml");
    let toml = format!(
        "[database]\nurl = {:?}\n[secrets]\nmaster_key_file = {:?}\n[sandbox]\nblocked_cidrs = []\nhost_overrides = {overrides}\n\
         [broker]\nlisten = \"127.0.0.1:{broker_port}\"\nupstream_ca_file = {ca_file:?}\n[features]\nbrokerage = true\n",
        env["ACS_DATABASE__URL"], env["ACS_SECRETS__MASTER_KEY_FILE"],
    );
    std::fs::write(&config, toml).unwrap();
    let log = app.dir.join("broker.log");
    let mut broker = broker_process(&config, &log);
    wait_healthy(broker_port).await;

    let u = app.user().await;
    let token = format!("tok-{}", Uuid::new_v4().simple());
    let vault = vault_with(&app, &u, &[("UPSTREAM_TOKEN", &token)]).await;
    let r = app.post("/api/secret-bindings", &u.key, binding("upstream", API, vault, "UPSTREAM_TOKEN")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let a = scripted_runtime_agent(&app, &u, "acp", json!({})).await;
    let port = upstream.port;
    let prompt = format!(
        "run: curl -sS https://{API}:{port}/echo\n\
         run: curl -s -m 60 -o /dev/null https://{API}:{port}/hang; echo \"hang exit=$?\""
    );
    let conv = create_conversation(&app, &u, json!({"agent_id": a, "prompt": prompt})).await;
    let conv_id: Uuid = conv["id"].as_str().unwrap().parse().unwrap();
    let sandbox = conv["sandbox_id"].as_str().unwrap().to_owned();
    upstream.wait_for(60, |s| s.iter().any(|s| s.path == "/hang")).await;
    // Killed mid-request: the request fails at once, the turn goes on.
    broker.kill().unwrap();
    broker.wait().unwrap();
    let turns = finished_turns_within(&app, conv_id, 1, 30).await;
    assert_eq!(turns[0].status, "done", "{turns:?}");
    let text = said(&app, conv_id).await;
    assert!(text.contains("hello from upstream[exit 0]"), "{text}");
    let hang = text.split("hang exit=").nth(1).unwrap_or_default();
    assert!(!hang.starts_with('0'), "the cut request failed: {text}");

    // While it is down the machine's bound requests are refused, and nothing else changes.
    let (_, out, _) = sh(
        &app,
        sandbox.parse().unwrap(),
        &format!("curl -s -o /dev/null -w '%{{http_connect}}' https://{API}:{port}/echo"),
    )
    .await;
    assert_eq!(out, "503", "{out}");

    // Back up: the next request works, with the credential.
    let mut broker = broker_process(&config, &log);
    wait_healthy(broker_port).await;
    let before = upstream.seen().len();
    let r = app
        .post(
            &format!("/api/conversations/{conv_id}/prompts"),
            &u.key,
            json!({"prompt": format!("run: curl -sS https://{API}:{port}/echo")}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    finished_turns_within(&app, conv_id, 2, 30).await;
    let seen = upstream.seen();
    assert_eq!(seen.len(), before + 1, "{seen:?}");
    let want = format!("Bearer {token}");
    assert!(seen.iter().all(|s| s.authorization.as_deref() == Some(want.as_str())), "{seen:?}");

    // The records name the binding; the cut one says how it ended. No value in a log line.
    let records = egress(&app, &u, &sandbox).await;
    assert!(records.iter().filter(|e| e["service"] == "upstream" && e["status"] == 200).count() >= 2, "{records:?}");
    assert!(records.iter().any(|e| e["error"] == "broker_closed"), "{records:?}");
    assert!(records.iter().any(|e| e["error"] == "broker_unavailable" && e["status"] == 503), "{records:?}");
    broker.kill().unwrap();
    broker.wait().unwrap();
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("acs broker is ready"), "{logged}");
    assert!(!logged.contains(&token), "the broker logged the value");
    std::fs::remove_dir_all(&dir).ok();
}
