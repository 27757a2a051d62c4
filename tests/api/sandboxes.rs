//! Sandboxes on the `local` provider: provisioning stages, isolation,
//! egress, park/checkpoint/wake, rollback, reset, reads with redaction,
//! the callback key, and reattach after a server restart. Machines are
//! launched in-process (the conversations API that launches them comes
//! later); everything else is HTTP.

use std::collections::BTreeMap;
use std::time::Duration;

use acs::core::sandboxes::model::ApiAccess;
use acs::core::sandboxes::{self, LaunchRequest};
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::{Backend, TestApp, User, sh, spawn, spawn_with};

pub(crate) async fn agent(app: &TestApp, u: &User, body: Value) -> Uuid {
    let mut body = body;
    body["name"] = json!(format!("agent-{}", &Uuid::new_v4().simple().to_string()[..8]));
    body["runtime"] = json!("acp");
    body["command"] = json!(["true"]);
    let r = app.post("/api/agents", &u.key, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"]["id"].as_str().unwrap().parse().unwrap()
}

pub(crate) async fn environment(app: &TestApp, u: &User, body: Value) -> Uuid {
    let mut body = body;
    body["name"] = json!("env");
    let r = app.post("/api/environments", &u.key, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"]["id"].as_str().unwrap().parse().unwrap()
}

pub(crate) async fn put_secret(app: &TestApp, u: &User, env: Uuid, key: &str, value: &str) {
    let r = app
        .request(
            reqwest::Method::PUT,
            &format!("/api/environments/{env}/secrets/{key}"),
            Some(&u.key),
            Some(json!({"value": value})),
        )
        .await;
    assert!(r.status.is_success(), "{}", r.text);
}

pub(crate) async fn launch_with(app: &TestApp, u: &User, agent_id: Uuid, f: impl FnOnce(&mut LaunchRequest)) -> Uuid {
    let account_id: Uuid = u.id.parse().unwrap();
    let agent = acs::core::agents::get_agent(app.state(), account_id, agent_id).await.unwrap();
    let mut req = LaunchRequest {
        account_id,
        agent,
        environment_id: None,
        vault_id: None,
        mode: None,
        machine_name: None,
        api_access: ApiAccess::Owner,
        conversation_id: None,
    };
    f(&mut req);
    sandboxes::launch(app.state(), req).await.expect("launch").id
}

pub(crate) async fn launch(app: &TestApp, u: &User, agent_id: Uuid) -> Uuid {
    launch_with(app, u, agent_id, |_| {}).await
}

/// Polls until the sandbox reaches `want` (or a final state), then returns it.
pub(crate) async fn wait_status(app: &TestApp, u: &User, id: Uuid, want: &str) -> Value {
    // Polled in the store: HTTP polling would spend the key's rate limit.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let row = sandboxes::store::get(&app.state().db, id).await.unwrap().expect("sandbox row");
        if row.status.as_str() == want {
            break;
        }
        let failed = row.status.as_str() == "failed";
        if failed || std::time::Instant::now() >= deadline {
            panic!(
                "sandbox {id} is {:?} ({:?}), wanted {want}; stages {:?}",
                row.status,
                row.error,
                stages(app, id).await
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = app.get(&format!("/api/sandboxes/{id}"), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["status"], want);
    r.body["data"].clone()
}

/// The (stage, state) pairs written for a sandbox, in order.
async fn stages(app: &TestApp, id: Uuid) -> Vec<(String, String)> {
    let events = acs::core::events::for_sandbox(&app.state().db, id).await.unwrap();
    events.into_iter().filter(|e| e.kind == "stage").map(|e| (e.stage.unwrap(), e.state.unwrap())).collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

async fn provisions_through_its_stages_and_redacts_reads(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let env = environment(
        &app,
        &u,
        json!({"env_vars": {"GREETING": "hello"}, "setup_script": "echo \"setup sees $GREETING\"; echo \"token=$API_TOKEN\" > notes.txt; echo \"pin=$PIN\" > pin.txt",
               "networking_type": "limited", "networking_config": {"allowed_hosts": []}}),
    )
    .await;
    put_secret(&app, &u, env, "API_TOKEN", "tok-9f8e7d6c5b").await;
    put_secret(&app, &u, env, "PIN", "4321").await;
    let a = agent(&app, &u, json!({"environment_id": env})).await;
    let id = launch(&app, &u, a).await;
    let sb = wait_status(&app, &u, id, "ready").await;
    assert_eq!(sb["mode"], "ephemeral");
    assert_eq!(sb["provider"], crate::common::test_provider().unwrap_or("local".into()));
    assert_eq!(sb["environment_id"], env.to_string());
    assert!(sb["machine_name"].as_str().unwrap().starts_with(&format!("acs-{}-", &u.id.replace('-', "")[..8])));
    assert!(sb["url"].as_str().unwrap().starts_with("http://10."));
    assert_eq!(sb["checkpoint"], Value::Null);
    assert_eq!(sb["conversations"], json!([]));
    assert_eq!(
        stages(&app, id).await,
        pairs(&[
            ("provision", "started"),
            ("network", "started"),
            ("network", "done"),
            ("setup", "started"),
            ("setup", "done"),
            ("provision", "done")
        ])
    );
    // Setup output reached the log; the secret never does.
    let events = acs::core::events::for_sandbox(&app.state().db, id).await.unwrap();
    let out: String = events.iter().filter(|e| e.kind == "output").map(|e| e.data.as_str()).collect();
    assert!(out.contains("setup sees hello"), "{out}");

    let f = app.get(&format!("/api/sandboxes/{id}/files?path=/workspace/notes.txt"), &u.key).await;
    assert_eq!(f.status, StatusCode::OK, "{}", f.text);
    assert_eq!(f.body["data"]["content"], "token=[REDACTED]\n");
    assert_eq!(f.body["data"]["size"], 21);
    assert_eq!(f.body["data"]["encoding"], "utf-8");
    assert_eq!(f.body["data"]["truncated"], false);
    assert!(f.body["data"].get("snapshot_at").is_none());
    // A cut inside the secret shows none of it, and says it was cut.
    let f = app.get(&format!("/api/sandboxes/{id}/files?path=/workspace/notes.txt&max_bytes=10"), &u.key).await;
    assert_eq!(f.body["data"]["truncated"], true);
    assert!(!f.body["data"]["content"].as_str().unwrap().contains("tok-"), "{}", f.text);
    // Redaction that grows the text past max_bytes is truncation too.
    let f = app.get(&format!("/api/sandboxes/{id}/files?path=/workspace/pin.txt&max_bytes=12"), &u.key).await;
    assert_eq!(f.body["data"]["size"], 9);
    assert_eq!(f.body["data"]["truncated"], true, "{}", f.text);
    assert!(!f.body["data"]["content"].as_str().unwrap().contains("4321"));
    // Binary content is base64.
    sh(&app, id, "printf '\\xff\\xfe\\x00' > /workspace/bin").await;
    let f = app.get(&format!("/api/sandboxes/{id}/files?path=/workspace/bin"), &u.key).await;
    assert_eq!(f.body["data"]["encoding"], "base64");
    assert_eq!(f.body["data"]["content"], "//4A");
    for (q, status) in [
        ("path=/workspace/missing", StatusCode::NOT_FOUND),
        ("path=relative", StatusCode::UNPROCESSABLE_ENTITY),
        ("path=/workspace", StatusCode::UNPROCESSABLE_ENTITY),
        ("path=/etc/hostname&max_bytes=0", StatusCode::UNPROCESSABLE_ENTITY),
        ("path=/etc/hostname&max_bytes=16777217", StatusCode::UNPROCESSABLE_ENTITY),
    ] {
        let r = app.get(&format!("/api/sandboxes/{id}/files?{q}"), &u.key).await;
        assert_eq!(r.status, status, "{q}: {}", r.text);
    }
    // The machine's environment is the environment's, with the secret.
    let (_, env_out, _) = sh(&app, id, "echo $GREETING $HOME $(pwd) $(id -u)").await;
    assert_eq!(env_out.trim(), format!("hello /home/agent /workspace {}", app.agent_uid(id)));
    // Another account sees nothing of it.
    let other = app.user().await;
    let r = app.get(&format!("/api/sandboxes/{id}"), &other.key).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.body["error"], "sandbox_not_found");
    assert_eq!(app.get("/api/sandboxes", &other.key).await.body["data"], json!([]));
    let list = app.get("/api/sandboxes", &u.key).await;
    assert_eq!(list.body["data"][0]["id"], id.to_string());

    // Every conversation opened on the machine, newest first (the
    // conversations API writes these rows; here they are written directly).
    let (older, newer) = (Uuid::now_v7(), Uuid::now_v7());
    for (conv, status, mid, at, title) in
        [(older, "terminated", 0, 1_000_000i64, None), (newer, "running", 1, 2_000_000, Some("fix the build"))]
    {
        sqlx::query(
            "INSERT INTO conversations (id, account_id, agent_id, sandbox_id, runtime, status, title, mid_turn, \
             created_at, updated_at) VALUES ($1, $2, $3, $4, 'acp', $5, $6, $7, $8, $8)",
        )
        .bind(conv.to_string())
        .bind(u.id.clone())
        .bind(a.to_string())
        .bind(id.to_string())
        .bind(status)
        .bind(title)
        .bind(mid)
        .bind(at)
        .execute(&app.state().db.pool)
        .await
        .unwrap();
    }
    let detail = app.get(&format!("/api/sandboxes/{id}"), &u.key).await.body["data"].clone();
    let convs = detail["conversations"].as_array().unwrap();
    assert_eq!(convs.len(), 2);
    assert_eq!(convs[0]["id"], newer.to_string());
    assert_eq!(convs[0]["status"], "running");
    assert_eq!(convs[0]["mid_turn"], true);
    assert_eq!(convs[0]["runtime"], "acp");
    assert_eq!(convs[0]["title"], "fix the build");
    assert_eq!(convs[1]["id"], older.to_string());
    assert_eq!(convs[1]["mid_turn"], false);
    assert_eq!(convs[1]["title"], Value::Null);
    assert!(detail["inserted_at"].is_string() && detail["last_resumed_at"].is_string());
}

async fn failing_setup_fails_the_build_and_a_slow_one_times_out(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let env = environment(&app, &u, json!({"setup_script": "echo before; exit 3; echo after"})).await;
    let a = agent(&app, &u, json!({"environment_id": env})).await;
    let id = launch(&app, &u, a).await;
    wait_status(&app, &u, id, "failed").await;
    let st = stages(&app, id).await;
    assert_eq!(st[st.len() - 2..], pairs(&[("setup", "failed"), ("provision", "failed")]));
    let status = app.get(&format!("/api/sandboxes/{id}/status"), &u.key).await;
    assert!(status.body["data"]["error"].as_str().unwrap().contains("exited with status 3"), "{}", status.text);
    assert_eq!(status.body["data"]["machine"], "missing");

    let env = environment(&app, &u, json!({"setup_script": "sleep 30", "setup_timeout_seconds": 1})).await;
    let a = agent(&app, &u, json!({"environment_id": env})).await;
    let started = std::time::Instant::now();
    let id = launch(&app, &u, a).await;
    wait_status(&app, &u, id, "failed").await;
    assert!(started.elapsed() < Duration::from_secs(20));
    let events = acs::core::events::for_sandbox(&app.state().db, id).await.unwrap();
    let setup_failed =
        events.iter().find(|e| e.stage.as_deref() == Some("setup") && e.state.as_deref() == Some("failed"));
    assert!(setup_failed.unwrap().data.contains("timed out"));
}

async fn provisioning_deadline_fails_the_stage_it_cuts(b: Backend) {
    let app = spawn_with(b, &[("sandbox.provision_timeout_seconds", json!(1))]).await;
    let u = app.user().await;
    let env = environment(&app, &u, json!({"setup_script": "sleep 30", "setup_timeout_seconds": 900})).await;
    let a = agent(&app, &u, json!({"environment_id": env})).await;
    let id = launch(&app, &u, a).await;
    wait_status(&app, &u, id, "failed").await;
    let st = stages(&app, id).await;
    assert_eq!(st[st.len() - 2..], pairs(&[("setup", "failed"), ("provision", "failed")]));
}

/// A machine whose supervisor never listens fails as soon as it exits, with
/// its exit, not after the wait for an answer (15 s).
async fn a_machine_whose_supervisor_exits_at_start_fails_at_once(b: Backend) {
    let app = spawn_with(b, &[("sandbox.sandboxd_path", json!("/bin/false"))]).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let started = std::time::Instant::now();
    let id = launch(&app, &u, a).await;
    wait_status(&app, &u, id, "failed").await;
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    let status = app.get(&format!("/api/sandboxes/{id}/status"), &u.key).await;
    assert!(status.body["data"]["error"].as_str().unwrap().contains("exited at start"), "{}", status.text);
}

async fn machines_cannot_see_each_other_or_the_host(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let one = launch(&app, &u, a).await;
    let two = launch(&app, &u, a).await;
    wait_status(&app, &u, one, "ready").await;
    wait_status(&app, &u, two, "ready").await;
    sh(&app, two, "echo private > /home/agent/secret.txt; sleep 1000 &").await;
    let two_url =
        app.get(&format!("/api/sandboxes/{two}"), &u.key).await.body["data"]["url"].as_str().unwrap().to_owned();
    let two_ip = two_url.trim_start_matches("http://");
    let host_dir = app.dir.display().to_string();
    let api_port = app.base.rsplit(':').next().unwrap().to_owned();
    let script = format!(
        r#"
        echo "procs=$(ls /proc | grep -c '^[0-9]')"
        test -e /home/agent/secret.txt && echo "sees-home-of-two"
        test -e {host_dir} && echo "sees-host-dir"
        test -e /root && ls /root >/dev/null 2>&1 && echo "sees-root"
        pgrep -f 'slee[p] 1000' >/dev/null && echo "sees-two-processes"
        touch /usr/x 2>/dev/null && echo "writes-usr"
        cat /etc/shadow 2>/dev/null && echo "reads-shadow"
        timeout 2 bash -c 'echo > /dev/tcp/127.0.0.1/{api_port}' 2>/dev/null && echo "reaches-host-loopback"
        timeout 2 bash -c 'echo > /dev/tcp/{two_ip}/22' 2>/dev/null; echo "two-port=$?"
        gw=$(/usr/sbin/ip route 2>/dev/null | awk '/default/ {{print $3}}')
        timeout 2 bash -c "echo > /dev/tcp/$gw/{api_port}" 2>/dev/null && echo "reaches-host-port"
        /usr/sbin/ip route del default 2>/dev/null && echo "changed-route"
        echo done
        "#
    );
    let (code, out, err) = sh(&app, one, &script).await;
    assert_eq!(code, Some(0), "{out} {err}");
    assert!(out.contains("done"), "{out} {err}");
    for leak in [
        "sees-home-of-two",
        "sees-host-dir",
        "sees-root",
        "sees-two-processes",
        "writes-usr",
        "reads-shadow",
        "reaches-host-loopback",
        "reaches-host-port",
        "changed-route",
    ] {
        assert!(!out.contains(leak), "{leak}: {out}");
    }
    let procs: usize = out.lines().find_map(|l| l.strip_prefix("procs=")).unwrap().parse().unwrap();
    assert!(procs < 10, "a machine sees only its own processes: {out}");
    assert!(!out.contains("two-port=0"), "{out}");
}

async fn egress_follows_the_policy_and_is_logged(b: Backend) {
    // The host stands in for "the internet": loopback is not blocked here.
    let app = spawn_with(b, &[("sandbox.blocked_cidrs", json!([]))]).await;
    let u = app.user().await;
    let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = upstream.local_addr().unwrap().port();
    let router = axum::Router::new().route("/hello", axum::routing::get(|| async { "hi from upstream" }));
    tokio::spawn(async move { axum::serve(upstream, router).await.unwrap() });
    let env = environment(
        &app,
        &u,
        json!({"networking_type": "limited", "networking_config": {"allowed_hosts": ["localhost"]}}),
    )
    .await;
    let a = agent(&app, &u, json!({"environment_id": env})).await;
    let id = launch(&app, &u, a).await;
    wait_status(&app, &u, id, "ready").await;
    let (_, out, err) = sh(
        &app,
        id,
        &format!(
            "curl -sS -m 5 --noproxy '' http://localhost:{port}/hello; echo; curl -s -m 5 --noproxy '' -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{port}/hello; echo; \
             curl -s -m 5 --noproxy '*' http://127.0.0.1:{port}/hello; echo direct=$?"
        ),
    )
    .await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "hi from upstream", "{out} {err}");
    assert_eq!(lines[1], "403", "{out}");
    assert_ne!(lines[2], "direct=0", "{out}");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let log = loop {
        let r = app.get(&format!("/api/sandboxes/{id}/egress"), &u.key).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        if r.body["data"].as_array().unwrap().len() >= 2 || std::time::Instant::now() > deadline {
            break r.body["data"].clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let log = log.as_array().unwrap();
    assert_eq!(log.len(), 2, "{log:?}");
    // Newest first: the refusal, then the allowed request.
    assert_eq!(log[0]["status"], 403);
    assert_eq!(log[0]["host"], format!("127.0.0.1:{port}"));
    assert_eq!(log[1]["status"], 200);
    assert_eq!(log[1]["host"], format!("localhost:{port}"));
    assert_eq!(log[1]["method"], "GET");
    assert!(log.iter().all(|e| e["path"] == "/[REDACTED]" && e["credential_keys"] == json!([])));
    let older = app.get(&format!("/api/sandboxes/{id}/egress?before={}&limit=1", log[0]["id"]), &u.key).await;
    assert_eq!(older.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(older.body["data"][0]["id"], log[1]["id"]);
}

async fn the_callback_key_acts_only_for_its_machine(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let id = launch(&app, &u, a).await;
    let other = launch(&app, &u, a).await;
    wait_status(&app, &u, id, "ready").await;
    wait_status(&app, &u, other, "ready").await;
    // From inside, through the egress proxy, to the API.
    let (_, out, err) =
        sh(&app, id, "curl -s -m 5 -H \"authorization: Bearer $ACS_API_KEY\" \"$ACS_API_URL/api/sandboxes\"").await;
    let listed: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out} {err}"));
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
    assert_eq!(listed["data"][0]["id"], id.to_string());
    let (_, key, _) = sh(&app, id, "printf %s \"$ACS_API_KEY\"").await;
    assert_eq!(app.get(&format!("/api/sandboxes/{other}"), &key).await.status, StatusCode::NOT_FOUND);
    let refused = app.get("/api/agents", &key).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert_eq!(refused.body["reason"], "insufficient_scope");
    assert_eq!(app.delete(&format!("/api/sandboxes/{id}"), &key).await.status, StatusCode::FORBIDDEN);
    // No key at all with sandbox_api_access: none.
    let bare = launch_with(&app, &u, a, |r| r.api_access = ApiAccess::None).await;
    wait_status(&app, &u, bare, "ready").await;
    let (_, out, _) = sh(&app, bare, "echo \"[${ACS_API_KEY-unset}] [${ACS_API_URL-unset}]\"").await;
    assert_eq!(out.trim(), "[unset] [unset]");
    // A reset machine's key stops working.
    assert_eq!(app.delete(&format!("/api/sandboxes/{id}"), &u.key).await.status, StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let gone = app.get("/api/sandboxes", &key).await;
    assert_eq!(gone.status, StatusCode::UNAUTHORIZED, "{}", gone.text);
}

async fn machine_names_follow_the_rules(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let slug = &u.id.replace('-', "")[..8];
    let id = launch_with(&app, &u, a, |r| r.machine_name = Some("box_1".into())).await;
    let sb = wait_status(&app, &u, id, "ready").await;
    assert_eq!(sb["machine_name"], format!("acs-{slug}-box_1"));
    let (_, host, _) = sh(&app, id, "hostname").await;
    assert_eq!(host.trim(), format!("acs-{slug}-box_1"));
    // Taken while live; a name already carrying the prefix is taken as is.
    let account_id: Uuid = u.id.parse().unwrap();
    let agent_row = acs::core::agents::get_agent(app.state(), account_id, a).await.unwrap();
    let req = |name: &str| LaunchRequest {
        account_id,
        agent: agent_row.clone(),
        environment_id: None,
        vault_id: None,
        mode: None,
        machine_name: Some(name.to_owned()),
        api_access: ApiAccess::Owner,
        conversation_id: None,
    };
    let taken = sandboxes::launch(app.state(), req(&format!("acs-{slug}-box_1"))).await.unwrap_err();
    assert_eq!(taken.error, "invalid_machine_name");
    for bad in ["", "-lead", &"x".repeat(41), "sp ace", "ünï"] {
        let e = sandboxes::launch(app.state(), req(bad)).await.unwrap_err();
        assert_eq!(e.error, "invalid_machine_name", "{bad:?}");
    }
    let forty = "y".repeat(40);
    let ok = sandboxes::launch(app.state(), req(&forty)).await.unwrap();
    assert_eq!(ok.machine_name, format!("acs-{slug}-{forty}"));
    let mut none = req("named");
    none.api_access = ApiAccess::None;
    assert_eq!(sandboxes::launch(app.state(), none).await.unwrap_err().error, "invalid_machine_name");
    // After a reset the name is free again.
    wait_status(&app, &u, ok.id, "ready").await;
    assert_eq!(app.delete(&format!("/api/sandboxes/{id}"), &u.key).await.status, StatusCode::OK);
    let again = sandboxes::launch(app.state(), req("box_1")).await.unwrap();
    assert_eq!(again.machine_name, format!("acs-{slug}-box_1"));
    wait_status(&app, &u, again.id, "ready").await;
}

async fn a_persistent_home_parks_with_a_checkpoint_and_wakes_with_its_files(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({"sandbox_mode": "persistent"})).await;
    let id = launch(&app, &u, a).await;
    wait_status(&app, &u, id, "ready").await;
    assert_eq!(launch(&app, &u, a).await, id, "the home is shared");
    sh(&app, id, "echo kept > /home/agent/memo; mkdir -p /workspace/p && echo w > /workspace/p/f").await;
    sandboxes::park(app.state(), id).await.unwrap();
    let sb = wait_status(&app, &u, id, "suspended").await;
    let ck = sb["checkpoint"]["id"].as_str().unwrap().to_owned();
    assert!(sb["checkpoint"]["at"].is_string());
    let st = stages(&app, id).await;
    assert_eq!(st.last().unwrap(), &("checkpoint".to_owned(), "done".to_owned()));
    // A parked machine answers reads from its snapshot.
    let f = app.get(&format!("/api/sandboxes/{id}/files?path=/home/agent/memo"), &u.key).await;
    assert_eq!(f.status, StatusCode::OK, "{}", f.text);
    assert_eq!(f.body["data"]["content"], "kept\n");
    assert_eq!(f.body["data"]["snapshot_at"], sb["checkpoint"]["at"]);
    assert_eq!(app.get(&format!("/api/sandboxes/{id}/status"), &u.key).await.body["data"]["machine"], "stopped");
    // A launch wakes it, with its files.
    assert_eq!(launch(&app, &u, a).await, id);
    wait_status(&app, &u, id, "ready").await;
    let (_, out, _) = sh(&app, id, "cat /home/agent/memo /workspace/p/f").await;
    assert_eq!(out, "kept\nw\n");
    // A crash after the wake: the next wake rolls the home back to the checkpoint.
    sh(&app, id, "echo changed > /home/agent/memo; touch /home/agent/new").await;
    let mut app = app;
    let svc = sandboxes::service::service(app.state()).unwrap();
    svc.serving(id).stop(id).await;
    app.restart().await;
    let sb = wait_status(&app, &u, id, "failed").await;
    assert_eq!(sb["checkpoint"]["id"], ck);
    assert_eq!(stages(&app, id).await.last().unwrap(), &("reattach".to_owned(), "failed".to_owned()));
    assert!(sandboxes::wake(app.state(), id).await.unwrap());
    wait_status(&app, &u, id, "ready").await;
    let (_, out, _) = sh(&app, id, "cat /home/agent/memo; ls /home/agent").await;
    assert_eq!(out, "kept\nmemo\n");
    let st = stages(&app, id).await;
    let tail: Vec<_> = st.iter().rev().take(4).rev().cloned().collect();
    assert_eq!(
        tail,
        pairs(&[
            ("provision", "started"),
            ("checkpoint_restore", "started"),
            ("checkpoint_restore", "done"),
            ("provision", "done")
        ])
    );
}

async fn an_idle_ephemeral_machine_is_reclaimed_and_a_home_parks(b: Backend) {
    let app = spawn_with(b, &[("sandbox.idle_seconds", json!(1))]).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let p = agent(&app, &u, json!({"sandbox_mode": "persistent"})).await;
    let eph = launch(&app, &u, a).await;
    let home = launch(&app, &u, p).await;
    wait_status(&app, &u, eph, "terminated").await;
    wait_status(&app, &u, home, "suspended").await;
    // The stage follows the status change.
    let mut waited = 0;
    while stages(&app, eph).await.last().unwrap() != &("sandbox".to_owned(), "done".to_owned()) {
        assert!(waited < 250, "{:?}", stages(&app, eph).await);
        waited += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let status = app.get(&format!("/api/sandboxes/{eph}/status"), &u.key).await;
    assert_eq!(status.body["data"]["machine"], "missing");
}

async fn reset_throws_the_machine_away(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({"sandbox_mode": "persistent"})).await;
    let id = launch(&app, &u, a).await;
    wait_status(&app, &u, id, "ready").await;
    sh(&app, id, "echo x > /home/agent/f").await;
    let r = app.delete(&format!("/api/sandboxes/{id}"), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["data"]["status"], "terminated");
    let again = app.delete(&format!("/api/sandboxes/{id}"), &u.key).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(again.body["error"], "sandbox_not_resettable");
    assert_eq!(again.body["reason"], "terminated");
    // During a turn: refused.
    let fresh = launch(&app, &u, a).await;
    assert_ne!(fresh, id, "a new home is built");
    wait_status(&app, &u, fresh, "ready").await;
    let (_, out, _) = sh(&app, fresh, "ls /home/agent").await;
    assert_eq!(out, "");
    sqlx::query("UPDATE sandboxes SET busy = 1 WHERE id = $1")
        .bind(fresh.to_string())
        .execute(&app.state().db.pool)
        .await
        .unwrap();
    let busy = app.delete(&format!("/api/sandboxes/{fresh}"), &u.key).await;
    assert_eq!(busy.status, StatusCode::CONFLICT);
    assert_eq!(busy.body["reason"], "turn_running");
    // While it is being built: refused at once, not after the build.
    let env = environment(&app, &u, json!({"setup_script": "sleep 30"})).await;
    let slow = agent(&app, &u, json!({"environment_id": env})).await;
    let building = launch(&app, &u, slow).await;
    let r = app.delete(&format!("/api/sandboxes/{building}"), &u.key).await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert_eq!(r.body["reason"], "provisioning");
    let audit = app.get("/api/audit", &u.key).await;
    assert!(audit.text.contains("sandbox.reset"));
}

async fn git_diff_and_status_read_the_repository(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let env = environment(
        &app,
        &u,
        json!({"setup_script": "git init -q -b main /workspace/repo && cd /workspace/repo && \
            git -c user.email=a@b -c user.name=a commit -q --allow-empty -m init && \
            printf 'one\\ntwo\\n' > a.txt && echo old > gone.txt && echo r > r.txt && git add -A && \
            git -c user.email=a@b -c user.name=a commit -q -m files && \
            printf \"one\\nTWO $TOKEN\\n\" > a.txt && rm gone.txt && git mv r.txt moved.txt && \
            echo staged > s.txt && git add s.txt && mkdir -p sub && echo u > sub/untracked.txt"}),
    )
    .await;
    put_secret(&app, &u, env, "TOKEN", "sekrit-123456").await;
    let a = agent(&app, &u, json!({"environment_id": env})).await;
    let id = launch(&app, &u, a).await;
    wait_status(&app, &u, id, "ready").await;
    let d = app.get(&format!("/api/sandboxes/{id}/diff?path=/workspace/repo"), &u.key).await;
    assert_eq!(d.status, StatusCode::OK, "{}", d.text);
    let diff = d.body["data"]["diff"].as_str().unwrap();
    assert!(diff.contains("+TWO [REDACTED]"), "{diff}");
    assert!(!diff.contains("sekrit"));
    assert!(!diff.contains("untracked"), "tracked content only");
    assert!(!diff.contains("\u{1b}["), "no colour");
    assert_eq!(d.body["data"]["repo_root"], "/workspace/repo");
    assert_eq!(d.body["data"]["staged"], false);
    assert_eq!(d.body["data"]["ref"], Value::Null);
    let staged = app.get(&format!("/api/sandboxes/{id}/diff?path=/workspace/repo&staged=true"), &u.key).await;
    let sdiff = staged.body["data"]["diff"].as_str().unwrap();
    assert!(sdiff.contains("+staged") && !sdiff.contains("TWO"), "{sdiff}");
    let vs = app.get(&format!("/api/sandboxes/{id}/diff?path=/workspace/repo&ref=HEAD~1"), &u.key).await;
    assert!(vs.body["data"]["diff"].as_str().unwrap().contains("+one"), "{}", vs.text);
    assert_eq!(vs.body["data"]["ref"], "HEAD~1");
    let cut = app.get(&format!("/api/sandboxes/{id}/diff?path=/workspace/repo&max_bytes=20"), &u.key).await;
    assert_eq!(cut.body["data"]["truncated"], true);
    for q in ["path=/workspace/repo&ref=--output=/tmp/x", "path=/tmp", "path=/workspace/repo&ref=nope"] {
        let r = app.get(&format!("/api/sandboxes/{id}/diff?{q}"), &u.key).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{q}: {}", r.text);
    }
    let c = app.get(&format!("/api/sandboxes/{id}/changes?path=/workspace/repo/sub"), &u.key).await;
    assert_eq!(c.status, StatusCode::OK, "{}", c.text);
    assert_eq!(c.body["repo_root"], "/workspace/repo");
    let by_path: BTreeMap<String, Value> = c.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["path"].as_str().unwrap().to_owned(), e.clone()))
        .collect();
    assert_eq!(by_path["a.txt"]["index"], "unchanged");
    assert_eq!(by_path["a.txt"]["worktree"], "modified");
    assert_eq!(by_path["gone.txt"]["worktree"], "deleted");
    assert_eq!(by_path["moved.txt"]["index"], "renamed");
    assert_eq!(by_path["moved.txt"]["renamed_from"], "r.txt");
    assert_eq!(by_path["s.txt"]["index"], "added");
    assert_eq!(by_path["sub/untracked.txt"]["index"], "untracked");
    assert_eq!(by_path["sub/untracked.txt"]["worktree"], "untracked");
    assert_eq!(by_path["a.txt"]["renamed_from"], Value::Null);
}

async fn a_restarted_server_reattaches_to_running_machines(b: Backend) {
    let mut app = spawn(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let id = launch(&app, &u, a).await;
    wait_status(&app, &u, id, "ready").await;
    sh(&app, id, "nohup sleep 1000 >/dev/null 2>&1 & echo $! > /tmp/pid").await;
    app.restart().await;
    wait_status(&app, &u, id, "ready").await;
    assert_eq!(
        stages(&app, id).await[stages(&app, id).await.len() - 2..],
        pairs(&[("reattach", "started"), ("reattach", "done")])
    );
    let (_, out, _) = sh(&app, id, "kill -0 $(cat /tmp/pid) && echo alive").await;
    assert_eq!(out.trim(), "alive", "processes survived the restart");
    // Its egress proxy is back too.
    let (_, out, _) = sh(&app, id, "curl -s -m 5 -o /dev/null -w '%{http_code}' -H \"authorization: Bearer $ACS_API_KEY\" \"$ACS_API_URL/api/auth/me\"").await;
    assert_eq!(out, "200");
}

/// An agent naming the `container` provider gets a container while the
/// default stays `local`; each machine's row says which it runs on.
async fn an_agent_naming_the_container_provider_gets_a_container(b: Backend) {
    if !crate::common::container_engine() {
        return;
    }
    let overrides = [("sandbox.provider", json!("local")), ("sandbox.providers", json!(["local", "container"]))];
    let app = spawn_with(b, &overrides).await;
    let u = app.user().await;
    let in_container = agent(&app, &u, json!({"provider": "container"})).await;
    let on_default = agent(&app, &u, json!({})).await;
    let (c, l) = (launch(&app, &u, in_container).await, launch(&app, &u, on_default).await);
    assert_eq!(wait_status(&app, &u, c, "ready").await["provider"], "container");
    assert_eq!(wait_status(&app, &u, l, "ready").await["provider"], "local");
    // A container runs as the machine's host uid (named agent); bwrap maps that uid to 1000.
    let probe = "id -u; id -un; pwd";
    let (_, out, _) = sh(&app, c, probe).await;
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].parse::<u32>().unwrap() >= 1_000_000_000, "{out}");
    assert_eq!(lines[1..], ["agent", "/workspace"], "{out}");
    let (_, out, _) = sh(&app, l, probe).await;
    assert_eq!(out.lines().collect::<Vec<_>>(), ["1000", "agent", "/workspace"], "{out}");
}

/// A host name other than `localhost` that resolves to this host's loopback
/// (machines send `localhost` to themselves, never to the proxy).
fn loopback_name() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_owned();
    let resolved: Vec<std::net::SocketAddr> =
        std::net::ToSocketAddrs::to_socket_addrs(&(name.as_str(), 80)).map(|a| a.collect()).unwrap_or_default();
    assert!(
        resolved.iter().any(|a| a.ip().is_loopback()),
        "this test needs the host name {name} to resolve to loopback"
    );
    name
}

/// A bare repository served over HTTPS (git's dumb protocol: static files)
/// by a small Python server that records the Authorization headers it gets.
struct GitServer {
    child: std::process::Child,
    port: u16,
    dir: std::path::PathBuf,
}

impl Drop for GitServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(ok.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&ok.stderr));
}

fn git_server(host: &str) -> GitServer {
    let dir = std::env::temp_dir().join(format!("acs-git-{}", Uuid::new_v4().simple()));
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&dir, &["init", "-q", "--bare", "repo.git"]);
    git(&work, &["init", "-q"]);
    std::fs::write(work.join("README.md"), "main branch\n").unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "main"]);
    git(&work, &["checkout", "-qb", "dev"]);
    std::fs::write(work.join("DEV.md"), "dev branch\n").unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "dev"]);
    git(&work, &["push", "-q", "../repo.git", "main", "dev"]);
    git(&dir.join("repo.git"), &["update-server-info"]);
    let cert = std::process::Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-keyout", "key.pem", "-out", "cert.pem"])
        .args(["-subj", &format!("/CN={host}")])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(cert.status.success(), "{}", String::from_utf8_lossy(&cert.stderr));
    let script = r#"
import http.server, ssl, sys, functools
class H(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        with open("auth.log", "a") as f:
            f.write((self.headers.get("Authorization") or "-") + "\n")
        super().do_GET()
    def log_message(self, *a):
        pass
httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(H, directory="."))
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain("cert.pem", "key.pem")
httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
print(httpd.server_address[1], flush=True)
httpd.serve_forever()
"#;
    std::fs::write(dir.join("serve.py"), script).unwrap();
    let mut child = std::process::Command::new("python3")
        .arg("serve.py")
        .current_dir(&dir)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
    GitServer { child, port: line.trim().parse().unwrap(), dir }
}

async fn repositories_are_cloned_with_the_token_kept_out_of_disk_and_log(b: Backend) {
    // The git server is on the host's loopback: not blocked in this test. Small
    // disks, so that the search of their whole images below stays quick.
    let app = spawn_with(b, &[("sandbox.blocked_cidrs", json!([])), ("sandbox.disk_mb", json!(256))]).await;
    let u = app.user().await;
    let host = loopback_name();
    let server = git_server(&host);
    let url = format!("https://{host}:{}/repo.git", server.port);
    let token = "ghp_clone0token0value";
    let env = environment(&app, &u, json!({"env_vars": {"GIT_SSL_NO_VERIFY": "1"}})).await;
    put_secret(&app, &u, env, "GIT_TOKEN", token).await;
    let repos = json!({"repositories": [{"url": url, "mount_path": "/src", "ref": "dev", "secret_key": "GIT_TOKEN"},
                                        {"url": url, "mount_path": "/workspace/main"}]});
    let r = app.request(reqwest::Method::PATCH, &format!("/api/environments/{env}"), Some(&u.key), Some(repos)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let a = agent(&app, &u, json!({"environment_id": env})).await;
    let id = launch(&app, &u, a).await;
    wait_status(&app, &u, id, "ready").await;
    assert_eq!(
        stages(&app, id).await[..3],
        pairs(&[("provision", "started"), ("clone", "started"), ("clone", "done")])
    );
    let (_, out, _) =
        sh(&app, id, "cat /workspace/src/DEV.md; cd /workspace/src && git branch --show-current; ls /workspace/main")
            .await;
    assert_eq!(out, "dev branch\ndev\nREADME.md\n");
    // The token went to the server as basic auth, on the first repository only...
    let auth = std::fs::read_to_string(server.dir.join("auth.log")).unwrap();
    let basic = format!(
        "Basic {}",
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, format!("x-access-token:{token}"))
    );
    assert!(auth.lines().any(|l| l == basic), "{auth}");
    assert!(auth.lines().any(|l| l == "-"), "{auth}");
    // ...and was written nowhere: not on the machine's disk, not in the log.
    let layout = app.machine_layout(id);
    for place in [layout.mount(), layout.root.clone()] {
        // 1: searched and not found (2 would be an error, such as a missing path).
        let grep = std::process::Command::new("grep").args(["-rqaF", token]).arg(&place).status().unwrap();
        assert_eq!(grep.code(), Some(1), "the token is on the machine's disk ({})", place.display());
    }
    let events = acs::core::events::for_sandbox(&app.state().db, id).await.unwrap();
    assert!(events.iter().all(|e| !e.data.contains(token)));

    // A repository that cannot be reached fails the clone, then the build.
    let gone = format!("https://{host}:1/repo.git");
    let env = environment(&app, &u, json!({"repositories": [{"url": gone, "mount_path": "/src"}]})).await;
    let a = agent(&app, &u, json!({"environment_id": env})).await;
    let id = launch(&app, &u, a).await;
    wait_status(&app, &u, id, "failed").await;
    let st = stages(&app, id).await;
    assert_eq!(st[st.len() - 2..], pairs(&[("clone", "failed"), ("provision", "failed")]));
}

async fn packages_are_checked_and_limits_hold(b: Backend) {
    let app = spawn_with(b, &[("sandbox.memory_mb", json!(64))]).await;
    let u = app.user().await;
    let env = environment(&app, &u, json!({"packages": {"apt": ["bash", "coreutils"]}})).await;
    let a = agent(&app, &u, json!({"environment_id": env})).await;
    let id = launch(&app, &u, a).await;
    wait_status(&app, &u, id, "ready").await;
    assert!(stages(&app, id).await.contains(&("packages".to_owned(), "done".to_owned())));
    // 200 MB under a 64 MB ceiling: killed.
    let (code, _, _) = sh(&app, id, "head -c 200000000 /dev/zero | tail > /dev/null").await;
    assert_ne!(code, Some(0));
    let (code, _, _) = sh(&app, id, "head -c 20000000 /dev/zero | tail > /dev/null").await;
    assert_eq!(code, Some(0));

    let env = environment(&app, &u, json!({"packages": {"apt": ["bash", "no-such-package-acs"]}})).await;
    let a = agent(&app, &u, json!({"environment_id": env})).await;
    let id = launch(&app, &u, a).await;
    wait_status(&app, &u, id, "failed").await;
    let events = acs::core::events::for_sandbox(&app.state().db, id).await.unwrap();
    let failed = events.iter().find(|e| e.stage.as_deref() == Some("packages") && e.state.as_deref() == Some("failed"));
    assert!(failed.unwrap().data.contains("no-such-package-acs"));
}

/// Reads attachment output until a stdout line contains `needle`; returns that line.
async fn read_until(reader: &mut sandboxd::client::AttachReader, buf: &mut String, needle: &str) -> String {
    loop {
        if let Some(line) = buf.lines().find(|l| l.contains(needle)) {
            let line = line.to_owned();
            let end = buf.find(&line).unwrap() + line.len();
            buf.drain(..end);
            return line;
        }
        let event = tokio::time::timeout(Duration::from_secs(10), reader.next()).await.expect("agent answers");
        match event.unwrap() {
            Some(sandboxd::client::AttachEvent::Output { stream: sandboxd::proto::Stream::Stdout, data, .. }) => {
                buf.push_str(&String::from_utf8_lossy(&data))
            }
            Some(sandboxd::client::AttachEvent::Output { .. }) => {}
            other => panic!("agent ended: {other:?} (waiting for {needle})"),
        }
    }
}

async fn an_acp_agent_runs_in_the_machine_under_the_supervisor(b: Backend) {
    let bind = format!("{}:/opt/acs/bin/scripted-agent", crate::common::scripted_agent().display());
    let app = spawn_with(b, &[("sandbox.ro_binds", json!([bind]))]).await;
    let u = app.user().await;
    let env = environment(&app, &u, json!({})).await;
    put_secret(&app, &u, env, "SECRET_TOKEN", "s3cr3t-value").await;
    let a = agent(&app, &u, json!({"environment_id": env})).await;
    let id = launch(&app, &u, a).await;
    wait_status(&app, &u, id, "ready").await;
    let sup = sandboxes::service::service(app.state()).unwrap().serving(id).supervisor(id);
    let req = sandboxd::proto::SpawnRequest {
        name: "agent".into(),
        argv: vec!["/opt/acs/bin/scripted-agent".into()],
        cwd: Some("/workspace".into()),
        env: BTreeMap::new(),
    };
    sup.spawn(&req).await.expect("spawn");
    let mut att = sup.attach("agent", 0, 0).await.expect("attach");
    let mut buf = String::new();
    let send = |v: Value| format!("{v}\n").into_bytes();
    att.writer
        .send_stdin(&send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})))
        .await
        .unwrap();
    let line = read_until(&mut att.reader, &mut buf, "\"id\":1").await;
    assert!(line.contains("protocolVersion"), "{line}");
    att.writer.send_stdin(&send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/workspace", "mcpServers": []}}))).await.unwrap();
    read_until(&mut att.reader, &mut buf, "\"id\":2").await;
    let prompt = json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": "sess-1", "prompt": [{"type": "text", "text": "echo-env: SECRET_TOKEN\nwrite: /workspace/out.txt done"}]}});
    att.writer.send_stdin(&send(prompt)).await.unwrap();
    let end = read_until(&mut att.reader, &mut buf, "\"id\":3").await;
    assert!(end.contains("end_turn"), "{end}");
    // The agent saw the machine's environment, and its file is in the machine.
    let (_, out, _) = sh(&app, id, "cat /workspace/out.txt").await;
    assert_eq!(out.trim(), "done");
    // A second attach from offset 0 replays everything the agent printed.
    drop(att);
    let mut again = sup.attach("agent", 0, 0).await.expect("re-attach");
    let mut replay = String::new();
    let echoed = read_until(&mut again.reader, &mut replay, "s3cr3t").await;
    assert!(echoed.contains("agent_message_chunk"), "{echoed}");
}

crate::both!(
    provisions_through_its_stages_and_redacts_reads,
    failing_setup_fails_the_build_and_a_slow_one_times_out,
    provisioning_deadline_fails_the_stage_it_cuts,
    a_machine_whose_supervisor_exits_at_start_fails_at_once,
    machines_cannot_see_each_other_or_the_host,
    egress_follows_the_policy_and_is_logged,
    the_callback_key_acts_only_for_its_machine,
    machine_names_follow_the_rules,
    a_persistent_home_parks_with_a_checkpoint_and_wakes_with_its_files,
    an_idle_ephemeral_machine_is_reclaimed_and_a_home_parks,
    reset_throws_the_machine_away,
    git_diff_and_status_read_the_repository,
    a_restarted_server_reattaches_to_running_machines,
    repositories_are_cloned_with_the_token_kept_out_of_disk_and_log,
    packages_are_checked_and_limits_hold,
    an_acp_agent_runs_in_the_machine_under_the_supervisor,
    an_agent_naming_the_container_provider_gets_a_container,
);
