//! Warm pools (docs/scale.md, "Warm pools"): machines an account's pool keeps
//! built with its agent started; a new conversation of that selection takes
//! one, its agent adopted only when it is the very program the conversation
//! would start; nothing crosses accounts; pools refill, give way at the fleet
//! ceiling, and empty when idle. And a burst of creates.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::{
    Backend, SCRIPTED_AGENT_LOG, TestApp, User, create_conversation, created, finished_turns, id, said, scripted_app,
    scripted_runtime_agent, sh,
};

/// A vault holding one secret.
async fn vault(app: &TestApp, u: &User, key: &str, value: &str) -> Uuid {
    let v = created(app, u, "/api/vaults", json!({"name": format!("v-{}", Uuid::new_v4().simple())})).await;
    let path = format!("/api/vaults/{v}/secrets/{key}");
    let r = app.request(Method::PUT, &path, Some(&u.key), Some(json!({"value": value}))).await;
    assert!(r.status.is_success(), "{}", r.text);
    v
}

fn pool(name: &str, u: &User, agent: Uuid, size: u32, idle_seconds: u64) -> Value {
    json!({"name": name, "account_id": u.id, "agent_id": agent, "size": size, "idle_seconds": idle_seconds})
}

/// Restarts the server with these pools (their accounts and agents exist only now).
async fn with_pools(app: &mut TestApp, pools: Value) {
    app.restart_with(&[("sandbox.warm_pools", pools), ("metrics.enabled", json!(true))]).await;
}

/// The pool's machines on `/metrics`: (warm, building).
async fn gauge(app: &TestApp, pool: &str) -> (u64, u64) {
    let text = app.http.get(format!("{}/metrics", app.base)).send().await.unwrap().text().await.unwrap();
    let read = |state: &str| {
        let prefix = format!("acs_warm_pool_machines{{pool=\"{pool}\",state=\"{state}\"}} ");
        text.lines().find_map(|l| l.strip_prefix(&prefix)).and_then(|n| n.parse().ok()).unwrap_or(0)
    };
    (read("warm"), read("building"))
}

async fn wait_warm(app: &TestApp, pool: &str, n: u64) {
    for _ in 0..600 {
        if gauge(app, pool).await == (n, 0) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("pool {pool} never held {n} warm machines: {:?}", gauge(app, pool).await);
}

/// The unclaimed machines of this server's pools.
async fn pooled(app: &TestApp) -> Vec<Uuid> {
    let server = app.state().events.server();
    let rows = acs::core::sandboxes::store::pooled_here(&app.state().db, server).await.unwrap();
    rows.into_iter().map(|m| m.id).collect()
}

/// The kept processes of a machine: (name, pid, running).
async fn processes(app: &TestApp, machine: Uuid) -> Vec<(String, u32, bool)> {
    let svc = acs::core::sandboxes::service::service(app.state()).unwrap();
    let list = svc.serving(machine).supervisor(machine).list().await.unwrap();
    list.into_iter().map(|p| (p.name, p.pid, p.running)).collect()
}

fn warm_name(machine: Uuid) -> String {
    format!("warm-{}", machine.simple())
}

fn conv_name(conv: Uuid) -> String {
    format!("conv-{}", conv.simple())
}

/// The `session/new` requests a machine's scripted agents received.
async fn sessions_opened(app: &TestApp, machine: Uuid) -> Vec<Value> {
    let (code, out, err) = sh(app, machine, &format!("cat {SCRIPTED_AGENT_LOG}")).await;
    assert_eq!(code, Some(0), "{err}");
    out.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["method"] == "session/new")
        .map(|m| m["params"].clone())
        .collect()
}

async fn provision_events(app: &TestApp, conv: Uuid) -> Vec<(String, Value)> {
    use sqlx::Row;
    let rows =
        sqlx::query("SELECT state, data FROM events WHERE conversation_id = $1 AND stage = 'provision' ORDER BY id")
            .bind(conv.to_string())
            .fetch_all(&app.state().db.pool)
            .await
            .unwrap();
    rows.iter().map(|r| (r.get("state"), serde_json::from_str(&r.get::<String, _>("data")).unwrap())).collect()
}

async fn a_claim_gets_a_warm_machine_with_its_agent_running_and_the_pool_refills(b: Backend) {
    let mut app = scripted_app(b, &[]).await;
    let u = app.user().await;
    let env = created(&app, &u, "/api/environments", json!({"name": "e", "env_vars": {"GREETING": "from-a"}})).await;
    let v = vault(&app, &u, "TOKEN", "tok-of-a").await;
    let agent = scripted_runtime_agent(
        &app,
        &u,
        "claude",
        json!({"environment_id": env, "vault_id": v, "system_prompt": "Answer briefly."}),
    )
    .await;
    with_pools(&mut app, json!([pool("p", &u, agent, 1, 600)])).await;
    wait_warm(&app, "p", 1).await;
    let machine = pooled(&app).await[0];
    // The pooled machine is the account's, yet not one of its sandboxes until claimed.
    let listed = app.get("/api/sandboxes", &u.key).await;
    assert_eq!(listed.body["data"], json!([]), "{}", listed.text);
    let (_, warm_pid, running) =
        processes(&app, machine).await.into_iter().find(|p| p.0 == warm_name(machine)).expect("the agent waits");
    assert!(running);

    let conv = create_conversation(&app, &u, json!({"agent_id": agent})).await;
    assert_eq!(conv["status"], "idle", "claimed machines are up: {conv}");
    let conv_id = id(&conv);
    let r = app.get(&format!("/api/conversations/{conv_id}"), &u.key).await;
    assert_eq!(r.body["data"]["sandbox_id"], json!(machine), "{}", r.text);
    let provision = provision_events(&app, conv_id).await;
    assert_eq!(provision.len(), 1, "{provision:?}");
    assert_eq!((provision[0].0.as_str(), &provision[0].1["warm_pool"]), ("done", &json!("p")));

    let r = app
        .post(
            &format!("/api/conversations/{conv_id}/prompts"),
            &u.key,
            json!({"prompt": "echo-env: GREETING\nsay: |\necho-env: TOKEN"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let t = finished_turns(&app, conv_id, 1).await;
    assert_eq!(t[0].status, "done");
    assert_eq!(said(&app, conv_id).await, "from-a|[REDACTED]");
    // The agent started ahead is the conversation's now: the same process, one session opened.
    let procs = processes(&app, machine).await;
    assert_eq!(procs, vec![(conv_name(conv_id), warm_pid, true)], "{procs:?}");
    let opened = sessions_opened(&app, machine).await;
    assert_eq!(opened.len(), 1, "{opened:?}");
    assert_eq!(opened[0]["_meta"], json!({"systemPrompt": {"append": "Answer briefly."}}));
    let r = app.get("/api/sandboxes", &u.key).await;
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1, "claimed, it is listed: {}", r.text);

    // The pool builds another.
    wait_warm(&app, "p", 1).await;
    let next = pooled(&app).await;
    assert_eq!(next.len(), 1);
    assert_ne!(next[0], machine);
}

async fn another_agent_or_account_never_runs_what_the_pool_started(b: Backend) {
    let mut app = scripted_app(b, &[]).await;
    let (u, other) = (app.user().await, app.user().await);
    let body = json!({"name": "same-build", "env_vars": {"GREETING": "hello"}});
    let env = created(&app, &u, "/api/environments", body.clone()).await;
    let their_env = created(&app, &other, "/api/environments", body).await;
    let pooled_agent =
        scripted_runtime_agent(&app, &u, "claude", json!({"environment_id": env, "system_prompt": "Pool."})).await;
    let mine =
        scripted_runtime_agent(&app, &u, "claude", json!({"environment_id": env, "system_prompt": "Mine."})).await;
    let theirs =
        scripted_runtime_agent(&app, &other, "claude", json!({"environment_id": their_env, "system_prompt": "Pool."}))
            .await;
    with_pools(&mut app, json!([pool("p", &u, pooled_agent, 1, 600)])).await;
    wait_warm(&app, "p", 1).await;
    let machine = pooled(&app).await[0];
    let (_, warm_pid, _) = processes(&app, machine).await.into_iter().find(|p| p.0 == warm_name(machine)).unwrap();

    // Another account with an environment of the same build gets a machine of its own.
    let conv = create_conversation(&app, &other, json!({"agent_id": theirs, "prompt": "say: theirs"})).await;
    assert_eq!(conv["status"], "pending", "{conv}");
    assert_ne!(conv["sandbox_id"], json!(machine));
    finished_turns(&app, id(&conv), 1).await;
    assert_eq!(pooled(&app).await, vec![machine], "the pool kept its machine");

    // Another agent of the account on the same selection takes the machine, not the agent.
    let conv = create_conversation(&app, &u, json!({"agent_id": mine})).await;
    assert_eq!(conv["sandbox_id"], json!(machine), "{conv}");
    let conv_id = id(&conv);
    let r = app.post(&format!("/api/conversations/{conv_id}/prompts"), &u.key, json!({"prompt": "say: mine"})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(finished_turns(&app, conv_id, 1).await[0].status, "done");
    let procs = processes(&app, machine).await;
    assert!(procs.iter().all(|p| p.0 != warm_name(machine) || !p.2), "the pool's agent was stopped: {procs:?}");
    let (_, pid, running) = procs.iter().find(|p| p.0 == conv_name(conv_id)).unwrap().clone();
    assert!(running && pid != warm_pid, "{procs:?}");
    let opened = sessions_opened(&app, machine).await;
    assert_eq!(opened.last().unwrap()["_meta"], json!({"systemPrompt": {"append": "Mine."}}), "{opened:?}");

    // A conversation that asks for another selection (a vault) is not given a pooled machine.
    let v = vault(&app, &u, "TOKEN", "t").await;
    wait_warm(&app, "p", 1).await;
    let before = pooled(&app).await;
    let conv = create_conversation(&app, &u, json!({"agent_id": mine, "vault_id": v})).await;
    assert_eq!(conv["status"], "pending", "{conv}");
    assert_eq!(pooled(&app).await, before);
}

/// Two pools of the same selection: each agent's conversation takes its own pool's machine.
async fn a_claim_prefers_its_own_agents_pool(b: Backend) {
    let mut app = scripted_app(b, &[]).await;
    let u = app.user().await;
    let first = scripted_runtime_agent(&app, &u, "claude", json!({"system_prompt": "First."})).await;
    let second = scripted_runtime_agent(&app, &u, "claude", json!({"system_prompt": "Second."})).await;
    with_pools(&mut app, json!([pool("first", &u, first, 1, 600), pool("second", &u, second, 1, 600)])).await;
    wait_warm(&app, "first", 1).await;
    wait_warm(&app, "second", 1).await;
    let server = app.state().events.server();
    let here = acs::core::sandboxes::store::pooled_here(&app.state().db, server).await.unwrap();
    let machine_of = |pool: &str| here.iter().find(|m| m.pool == pool).unwrap().id;
    for (agent, pool) in [(second, "second"), (first, "first")] {
        let machine = machine_of(pool);
        let (_, warm_pid, _) = processes(&app, machine).await.into_iter().find(|p| p.0 == warm_name(machine)).unwrap();
        let conv = create_conversation(&app, &u, json!({"agent_id": agent, "prompt": "say: hi"})).await;
        assert_eq!(conv["sandbox_id"], json!(machine), "{pool}: {conv}");
        let conv = id(&conv);
        assert_eq!(finished_turns(&app, conv, 1).await[0].status, "done");
        assert!(processes(&app, machine).await.contains(&(conv_name(conv), warm_pid, true)), "{pool}: adopted");
    }
}

async fn pools_give_way_at_the_fleet_ceiling_and_empty_when_idle(b: Backend) {
    let mut app = scripted_app(b, &[("limits.sandboxes_fleet", json!(2))]).await;
    let (u, other) = (app.user().await, app.user().await);
    let agent = scripted_runtime_agent(&app, &u, "acp", json!({})).await;
    let theirs = scripted_runtime_agent(&app, &other, "acp", json!({})).await;
    with_pools(&mut app, json!([pool("p", &u, agent, 2, 6)])).await;
    wait_warm(&app, "p", 2).await;
    // The pool holds the whole fleet; a start asked for now takes a place from it.
    let conv = create_conversation(&app, &other, json!({"agent_id": theirs, "prompt": "say: in"})).await;
    finished_turns(&app, id(&conv), 1).await;
    assert_eq!(gauge(&app, "p").await.0, 1, "one pooled machine gave its place");
    let r = app.delete(&format!("/api/sandboxes/{}", conv["sandbox_id"].as_str().unwrap()), &other.key).await;
    assert!(r.status.is_success(), "{}", r.text);
    // Nothing claims from the pool for its idle_seconds: it empties, then fills at the next miss.
    for _ in 0..300 {
        if gauge(&app, "p").await == (0, 0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(gauge(&app, "p").await, (0, 0), "an idle pool gives its machines back");
    let conv = create_conversation(&app, &u, json!({"agent_id": agent, "prompt": "say: cold"})).await;
    assert_eq!(conv["status"], "pending");
    finished_turns(&app, id(&conv), 1).await;
    wait_warm(&app, "p", 1).await;
}

/// 50 conversations created with a prompt at once all answer, none refused.
async fn a_burst_of_creates_all_reach_their_first_output(b: Backend) {
    let app =
        scripted_app(b, &[("limits.sandboxes_per_account", json!(0)), ("limits.requests_per_key", json!(100_000))])
            .await;
    let u = app.user().await;
    let agent = scripted_runtime_agent(&app, &u, "acp", json!({})).await;
    let creates = (0..50).map(|i| {
        let (app, u) = (&app, &u);
        async move {
            let r = app
                .post("/api/conversations", &u.key, json!({"agent_id": agent, "prompt": format!("say: n{i}")}))
                .await;
            assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
            id(&r.body["data"])
        }
    });
    let convs = futures::future::join_all(creates).await;
    for (i, conv) in convs.into_iter().enumerate() {
        let t = crate::common::finished_turns_within(&app, conv, 1, 120).await;
        assert_eq!(t[0].status, "done", "{t:?}");
        assert_eq!(said(&app, conv).await, format!("n{i}"));
    }
}

crate::both!(
    a_claim_gets_a_warm_machine_with_its_agent_running_and_the_pool_refills,
    another_agent_or_account_never_runs_what_the_pool_started,
    a_claim_prefers_its_own_agents_pool,
    pools_give_way_at_the_fleet_ceiling_and_empty_when_idle,
    a_burst_of_creates_all_reach_their_first_output,
);
