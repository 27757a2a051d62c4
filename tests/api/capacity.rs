//! Concurrency ceilings: the tenant cap (429 `sandbox_quota_exceeded`) and
//! the fleet ceiling (503 `fleet_at_capacity`) at their boundaries, parked
//! machines freeing their place and wakes taking one, concurrent starts
//! never passing a ceiling, and a persistent start while its home builds.

use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::both;
use crate::common::{Backend, Resp, TestApp, User, assert_error, into_resp, spawn_with};

both!(
    the_tenant_cap_refuses_at_its_limit_and_frees_when_a_machine_ends,
    the_fleet_ceiling_answers_503_with_retry_after,
    a_parked_machine_frees_its_place_and_a_wake_takes_one,
    concurrent_starts_never_pass_a_ceiling,
    a_persistent_start_while_its_home_builds_is_503_provisioning,
);

async fn app(b: Backend, per_account: u32, fleet: u32) -> TestApp {
    spawn_with(b, &[("limits.sandboxes_per_account", json!(per_account)), ("limits.sandboxes_fleet", json!(fleet))])
        .await
}

async fn agent(app: &TestApp, u: &User, extra: Value) -> Uuid {
    crate::common::acp_agent(app, u, "true", extra).await
}

async fn start(app: &TestApp, u: &User, agent_id: Uuid) -> Resp {
    app.post("/api/conversations", &u.key, json!({"agent_id": agent_id})).await
}

fn id_of(r: &Resp) -> Uuid {
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["data"]["id"].as_str().unwrap().parse().unwrap()
}

fn sandbox_of(r: &Resp) -> Uuid {
    r.body["data"]["sandbox_id"].as_str().unwrap().parse().unwrap()
}

/// Active hosted machines as the ceilings count them.
async fn active(app: &TestApp, account: Option<&User>) -> i64 {
    let account = account.map(|u| u.id.parse().unwrap());
    acs::core::sandboxes::capacity::active(&app.state().db.pool, account).await.unwrap()
}

async fn conversations(app: &TestApp, u: &User) -> usize {
    app.get("/api/conversations", &u.key).await.body["data"].as_array().unwrap().len()
}

async fn wait_status(app: &TestApp, id: Uuid, want: &str) {
    for _ in 0..1200 {
        let row = acs::core::sandboxes::store::get(&app.state().db, id).await.unwrap().expect("sandbox row");
        if row.status.as_str() == want {
            return;
        }
        assert_ne!(row.status.as_str(), "failed", "sandbox {id} failed: {:?}", row.error);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("sandbox {id} never became {want}");
}

async fn terminate(app: &TestApp, u: &User, conversation: Uuid) {
    let r = app.post(&format!("/api/conversations/{conversation}/terminate"), &u.key, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}

async fn the_tenant_cap_refuses_at_its_limit_and_frees_when_a_machine_ends(b: Backend) {
    let app = app(b, 2, 0).await;
    let u = app.user().await;
    let a = agent(&app, &u, json!({})).await;
    let first = id_of(&start(&app, &u, a).await);
    id_of(&start(&app, &u, a).await);
    let r = start(&app, &u, a).await;
    assert_error(&r, StatusCode::TOO_MANY_REQUESTS, "sandbox_quota_exceeded");
    assert_eq!((r.body["active_sandboxes"].clone(), r.body["limit"].clone()), (json!(2), json!(2)), "{}", r.text);
    assert_eq!(conversations(&app, &u).await, 2, "a refused start stores nothing");
    assert_eq!(active(&app, Some(&u)).await, 2);

    // The cap is the tenant's own: another account starts.
    let v = app.user().await;
    let other = agent(&app, &v, json!({})).await;
    id_of(&start(&app, &v, other).await);

    // An ended conversation's machine is reclaimed, and its place is free again.
    terminate(&app, &u, first).await;
    assert_eq!(active(&app, Some(&u)).await, 1);
    id_of(&start(&app, &u, a).await);
    assert_error(&start(&app, &u, a).await, StatusCode::TOO_MANY_REQUESTS, "sandbox_quota_exceeded");
}

async fn the_fleet_ceiling_answers_503_with_retry_after(b: Backend) {
    let app = app(b, 0, 2).await;
    let (u, v, w) = (app.user().await, app.user().await, app.user().await);
    let (au, av, aw) =
        (agent(&app, &u, json!({})).await, agent(&app, &v, json!({})).await, agent(&app, &w, json!({})).await);
    id_of(&start(&app, &u, au).await);
    id_of(&start(&app, &v, av).await);
    let r = start(&app, &w, aw).await;
    assert_error(&r, StatusCode::SERVICE_UNAVAILABLE, "fleet_at_capacity");
    assert_eq!(r.headers.get("retry-after").and_then(|h| h.to_str().ok()), Some("30"), "{:?}", r.headers);
    assert_eq!(conversations(&app, &w).await, 0);
    assert_eq!(active(&app, None).await, 2);
}

async fn a_parked_machine_frees_its_place_and_a_wake_takes_one(b: Backend) {
    let app = app(b, 1, 0).await;
    let u = app.user().await;
    let home = agent(&app, &u, json!({"sandbox_mode": "persistent"})).await;
    let eph = agent(&app, &u, json!({})).await;
    let r = start(&app, &u, home).await;
    let (parked_conv, machine) = (id_of(&r), sandbox_of(&r));
    wait_status(&app, machine, "ready").await;
    acs::core::sandboxes::park(app.state(), machine).await.unwrap();
    wait_status(&app, machine, "suspended").await;
    assert_eq!(active(&app, Some(&u)).await, 0, "a parked machine does not count");

    let other = id_of(&start(&app, &u, eph).await);
    // Waking the home would make two: refused like a new machine.
    let r = app.post(&format!("/api/conversations/{parked_conv}/wake"), &u.key, json!({})).await;
    assert_error(&r, StatusCode::TOO_MANY_REQUESTS, "sandbox_quota_exceeded");
    assert_eq!(r.body["active_sandboxes"], 1);
    let row = acs::core::sandboxes::store::get(&app.state().db, machine).await.unwrap().unwrap();
    assert_eq!(row.status.as_str(), "suspended", "a refused wake leaves the machine parked");

    terminate(&app, &u, other).await;
    let r = app.post(&format!("/api/conversations/{parked_conv}/wake"), &u.key, json!({})).await;
    assert_eq!((r.status, r.body["data"]["status"].clone()), (StatusCode::OK, json!("waking")), "{}", r.text);
    wait_status(&app, machine, "ready").await;
}

/// Fires `n` creates at once; returns the statuses.
async fn burst(app: &TestApp, u: &User, agent_id: Uuid, n: usize) -> Vec<Resp> {
    let mut tasks = Vec::new();
    for _ in 0..n {
        let req = app
            .http
            .post(format!("{}/api/conversations", app.base))
            .bearer_auth(&u.key)
            .json(&json!({"agent_id": agent_id}));
        tasks.push(tokio::spawn(async move { into_resp(req.send().await.expect("request sent")).await }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

fn count(rs: &[Resp], status: StatusCode) -> usize {
    rs.iter().filter(|r| r.status == status).count()
}

async fn concurrent_starts_never_pass_a_ceiling(b: Backend) {
    let app = app(b, 2, 3).await;
    let (u, v) = (app.user().await, app.user().await);
    let (au, av) = (agent(&app, &u, json!({})).await, agent(&app, &v, json!({})).await);

    let rs = burst(&app, &u, au, 8).await;
    assert_eq!(count(&rs, StatusCode::CREATED), 2, "{:?}", rs.iter().map(|r| &r.text).collect::<Vec<_>>());
    assert_eq!(count(&rs, StatusCode::TOO_MANY_REQUESTS), 6);
    assert_eq!(active(&app, Some(&u)).await, 2);

    // One place is left under the fleet ceiling; eight starts race for it.
    let rs = burst(&app, &v, av, 8).await;
    assert_eq!(count(&rs, StatusCode::CREATED), 1, "{:?}", rs.iter().map(|r| &r.text).collect::<Vec<_>>());
    assert!(
        rs.iter().filter(|r| r.status != StatusCode::CREATED).all(|r| r.body["error"] == "fleet_at_capacity"),
        "{:?}",
        rs.iter().map(|r| &r.text).collect::<Vec<_>>()
    );
    assert_eq!(active(&app, None).await, 3);
    assert_eq!(conversations(&app, &u).await + conversations(&app, &v).await, 3);
}

async fn a_persistent_start_while_its_home_builds_is_503_provisioning(b: Backend) {
    let app = app(b, 10, 100).await;
    let u = app.user().await;
    let r = app.post("/api/environments", &u.key, json!({"name": "slow", "setup_script": "sleep 3"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let env = r.body["data"]["id"].as_str().unwrap();
    let a = agent(&app, &u, json!({"sandbox_mode": "persistent", "environment_id": env})).await;
    let machine = sandbox_of(&start(&app, &u, a).await);
    let r = start(&app, &u, a).await;
    assert_error(&r, StatusCode::SERVICE_UNAVAILABLE, "provisioning");
    assert_eq!(conversations(&app, &u).await, 1);
    // Once built, the home is shared.
    wait_status(&app, machine, "ready").await;
    assert_eq!(sandbox_of(&start(&app, &u, a).await), machine);
}
