//! Models and session config reaching the runtime before each prompt (spec
//! 4.1 session config rules, 2.2 `model_selection`/`config_selection`, 6.1
//! `model` and `config` stages), with the scripted agent under the profile of
//! each real runtime: Claude and Codex take config options, Gemini offers
//! none and takes its model through `session/set_model`.

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::Row;
use uuid::Uuid;

use crate::common::{Backend, SCRIPTED_AGENT_LOG, TestApp, User, scripted_app, scripted_runtime_agent, sh};

async fn app(b: Backend) -> TestApp {
    scripted_app(b, &[]).await
}

async fn agent(app: &TestApp, u: &User, runtime: &str, extra: Value) -> Uuid {
    scripted_runtime_agent(app, u, runtime, extra).await
}

async fn create(app: &TestApp, u: &User, body: Value) -> Uuid {
    let c = crate::common::create_conversation(app, u, body).await;
    c["id"].as_str().unwrap().parse().unwrap()
}

async fn prompt(app: &TestApp, u: &User, conv: Uuid, body: Value) {
    let r = app.post(&format!("/api/conversations/{conv}/prompts"), &u.key, body).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
}

/// The turns as the API shows them, once `n` exist and none runs, each with the stored `error`
/// (not an API field) beside.
async fn finished_turns(app: &TestApp, u: &User, conv: Uuid, n: usize) -> Vec<Value> {
    let stored = crate::common::finished_turns(app, conv, n).await;
    let r = app.get(&format!("/api/conversations/{conv}/turns"), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let mut shown = r.body["data"].as_array().unwrap().clone();
    for t in &mut shown {
        let row = stored.iter().find(|s| t["id"] == s.id.to_string()).unwrap();
        t["error"] = json!(row.error);
    }
    shown
}

fn turn(turns: &[Value], i: usize) -> &Value {
    turns.iter().find(|t| t["prompt"].as_str().is_some_and(|p| p.contains(&format!("turn {i}")))).unwrap()
}

async fn conversation(app: &TestApp, u: &User, conv: Uuid) -> Value {
    let r = app.get(&format!("/api/conversations/{conv}"), &u.key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body["data"].clone()
}

/// `(stage, state, data)` of the `model` and `config` stage events of one turn.
async fn stages(app: &TestApp, conv: Uuid, turn_id: &Value) -> Vec<(String, String, Value)> {
    let rows = sqlx::query(
        "SELECT stage, state, data FROM events WHERE conversation_id = $1 AND turn_id = $2 \
         AND stage IN ('model', 'config') ORDER BY id",
    )
    .bind(conv.to_string())
    .bind(turn_id.as_str().unwrap().to_owned())
    .fetch_all(&app.state().db.pool)
    .await
    .unwrap();
    rows.iter()
        .map(|r| {
            let data: String = r.get("data");
            (r.get("stage"), r.get("state"), serde_json::from_str(&data).unwrap())
        })
        .collect()
}

/// The requests of `method` the agent received, as their params.
async fn received(app: &TestApp, conv: Uuid, method: &str) -> Vec<Value> {
    let c = acs::core::conversations::store::get(&app.state().db, conv).await.unwrap().unwrap();
    let (code, out, err) = sh(app, c.sandbox_id.unwrap(), &format!("cat {SCRIPTED_AGENT_LOG}")).await;
    assert_eq!(code, Some(0), "{err}");
    out.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["method"] == method)
        .map(|m| m["params"].clone())
        .collect()
}

fn option<'a>(options: &'a Value, id: &str) -> &'a Value {
    options.as_array().unwrap().iter().find(|o| o["id"] == id).unwrap_or(&Value::Null)
}

fn done(stage: &str, data: Value) -> (String, String, Value) {
    (stage.to_owned(), "done".to_owned(), data)
}

async fn claude_model_and_config_apply_once_agent_then_conversation_then_prompt(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let a = agent(
        &app,
        &u,
        "claude",
        json!({"model": "anthropic/haiku", "session_config": {"effort": "low", "fast": "on"}}),
    )
    .await;
    let body = json!({"agent_id": a, "prompt": "say: turn 1", "model": "anthropic/sonnet",
        "session_config": {"effort": "high"}});
    let conv = create(&app, &u, body).await;
    let t = finished_turns(&app, &u, conv, 1).await;
    let t1 = turn(&t, 1);
    assert_eq!(t1["status"], "done", "{t1}");
    // The conversation's model wins over the agent's; its options over the agent's, key by key.
    assert_eq!(t1["model_selection"], "anthropic/sonnet");
    assert_eq!(
        t1["config_selection"],
        json!({"requested": {"effort": "high", "fast": "on"}, "applied": {"effort": "high", "fast": "on"},
            "skipped": [], "status": "applied", "error": null})
    );
    assert_eq!(
        stages(&app, conv, &t1["id"]).await,
        vec![
            done("model", json!({"model": "anthropic/sonnet"})),
            done("config", json!({"outcome": "applied", "id": "effort", "value": "high"})),
            done("config", json!({"outcome": "applied", "id": "fast", "value": "on"})),
        ]
    );
    let options = conversation(&app, &u, conv).await["session_config_options"].clone();
    assert_eq!(option(&options, "model")["currentValue"], "sonnet", "{options}");
    assert_eq!(option(&options, "effort")["currentValue"], "high");
    assert_eq!(option(&options, "effort")["category"], "thought_level");
    assert_eq!(option(&options, "fast")["currentValue"], "on");

    // A prompt's config is for its turn only; an option the runtime lacks is skipped.
    prompt(&app, &u, conv, json!({"prompt": "say: turn 2", "session_config": {"effort": "medium", "ultracode": "on"}}))
        .await;
    let t = finished_turns(&app, &u, conv, 2).await;
    let t2 = turn(&t, 2);
    assert_eq!(t2["status"], "done", "{t2}");
    assert_eq!(
        t2["config_selection"],
        json!({"requested": {"effort": "medium", "fast": "on", "ultracode": "on"},
            "applied": {"effort": "medium", "fast": "on"}, "skipped": ["ultracode"], "status": "applied",
            "error": null})
    );
    assert_eq!(
        stages(&app, conv, &t2["id"]).await,
        vec![
            done("config", json!({"outcome": "applied", "id": "effort", "value": "medium"})),
            done("config", json!({"outcome": "skipped", "id": "ultracode"})),
        ]
    );

    prompt(&app, &u, conv, json!({"prompt": "say: turn 3"})).await;
    let t = finished_turns(&app, &u, conv, 3).await;
    let t3 = turn(&t, 3);
    assert_eq!(t3["config_selection"]["applied"], json!({"effort": "high", "fast": "on"}));
    assert_eq!(
        stages(&app, conv, &t3["id"]).await,
        vec![done("config", json!({"outcome": "applied", "id": "effort", "value": "high"}))]
    );

    // What the agent received: the model once, `fast` once, `effort` every time it changed.
    let sets: Vec<(String, String)> = received(&app, conv, "session/set_config_option")
        .await
        .iter()
        .map(|p| (p["configId"].as_str().unwrap().to_owned(), p["value"].as_str().unwrap().to_owned()))
        .collect();
    let want = [("model", "sonnet"), ("effort", "high"), ("fast", "on"), ("effort", "medium"), ("effort", "high")];
    assert_eq!(sets, want.map(|(k, v)| (k.to_owned(), v.to_owned())));
    assert!(received(&app, conv, "session/set_model").await.is_empty());
}

async fn codex_refused_value_fails_the_turn_before_its_prompt(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, "codex", json!({"model": "openai/gpt-5.4"})).await;
    let body = json!({"agent_id": a, "prompt": "say: turn 1", "session_config": {"reasoning_effort": "high"}});
    let conv = create(&app, &u, body).await;
    let t = finished_turns(&app, &u, conv, 1).await;
    let t1 = turn(&t, 1);
    assert_eq!(t1["status"], "done", "{t1}");
    assert_eq!(t1["model_selection"], "openai/gpt-5.4");
    assert_eq!(t1["config_selection"]["applied"], json!({"reasoning_effort": "high"}));

    prompt(&app, &u, conv, json!({"prompt": "say: turn 2", "session_config": {"reasoning_effort": "extreme"}})).await;
    let t = finished_turns(&app, &u, conv, 2).await;
    let t2 = turn(&t, 2);
    assert_eq!(t2["status"], "failed", "{t2}");
    let error = t2["error"].as_str().unwrap();
    assert!(error.contains("invalid value `extreme` for config option `reasoning_effort`"), "{error}");
    assert_eq!(
        t2["config_selection"],
        json!({"requested": {"reasoning_effort": "extreme"}, "applied": {}, "skipped": [], "status": "failed",
            "error": error})
    );
    assert_eq!(
        stages(&app, conv, &t2["id"]).await,
        vec![(
            "config".to_owned(),
            "failed".to_owned(),
            json!({"id": "reasoning_effort", "value": "extreme", "error": error})
        )]
    );
    // The prompt never reached the agent, and the session goes on.
    assert_eq!(received(&app, conv, "session/prompt").await.len(), 1);
    prompt(&app, &u, conv, json!({"prompt": "say: turn 3"})).await;
    let t = finished_turns(&app, &u, conv, 3).await;
    assert_eq!(turn(&t, 3)["status"], "done");
    assert_eq!(received(&app, conv, "session/new").await.len(), 1);
    let models: Vec<Value> = received(&app, conv, "session/set_config_option")
        .await
        .into_iter()
        .filter(|p| p["configId"] == "model")
        .map(|p| p["value"].clone())
        .collect();
    assert_eq!(models, vec![json!("gpt-5.4")], "the model is sent once");
}

async fn gemini_takes_its_model_through_set_model_and_skips_options(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, "gemini", json!({"model": "google/gemini-2.5-pro", "session_config": {"effort": "high"}}))
        .await;
    let conv = create(&app, &u, json!({"agent_id": a, "prompt": "say: turn 1"})).await;
    let t = finished_turns(&app, &u, conv, 1).await;
    let t1 = turn(&t, 1);
    assert_eq!(t1["status"], "done", "{t1}");
    assert_eq!(t1["model_selection"], "google/gemini-2.5-pro");
    assert_eq!(
        t1["config_selection"],
        json!({"requested": {"effort": "high"}, "applied": {}, "skipped": ["effort"], "status": "applied",
            "error": null})
    );
    assert_eq!(
        stages(&app, conv, &t1["id"]).await,
        vec![
            done("model", json!({"model": "google/gemini-2.5-pro"})),
            done("config", json!({"outcome": "skipped", "id": "effort"})),
        ]
    );
    // Gemini advertises no options: nothing to show.
    assert_eq!(conversation(&app, &u, conv).await["session_config_options"], Value::Null);

    prompt(&app, &u, conv, json!({"prompt": "say: turn 2"})).await;
    let t = finished_turns(&app, &u, conv, 2).await;
    assert_eq!(turn(&t, 2)["status"], "done");
    let set: Vec<Value> =
        received(&app, conv, "session/set_model").await.iter().map(|p| p["modelId"].clone()).collect();
    assert_eq!(set, vec![json!("gemini-2.5-pro")], "sent once, then in force");
    assert!(received(&app, conv, "session/set_config_option").await.is_empty());
}

async fn a_refused_model_fails_the_turn_with_the_runtime_message(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, "claude", json!({"session_config": {"effort": "high"}})).await;
    let body = json!({"agent_id": a, "prompt": "say: turn 1", "model": "anthropic/no-such-model"});
    let conv = create(&app, &u, body).await;
    let t = finished_turns(&app, &u, conv, 1).await;
    let t1 = turn(&t, 1);
    assert_eq!(t1["status"], "failed", "{t1}");
    let error = t1["error"].as_str().unwrap();
    assert!(error.contains("invalid value `no-such-model` for config option `model`"), "{error}");
    assert_eq!(t1["model_selection"], "anthropic/no-such-model");
    assert_eq!(t1["config_selection"]["status"], "not_applied");
    assert_eq!(t1["config_selection"]["applied"], json!({}));
    assert_eq!(
        stages(&app, conv, &t1["id"]).await,
        vec![("model".to_owned(), "failed".to_owned(), json!({"model": "anthropic/no-such-model", "error": error}))]
    );
    assert!(received(&app, conv, "session/prompt").await.is_empty());
}

async fn a_model_already_in_force_is_not_sent(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    // `default` is the current model of a new Claude session.
    let a = agent(&app, &u, "claude", json!({"model": "anthropic/default"})).await;
    let conv = create(&app, &u, json!({"agent_id": a, "prompt": "say: turn 1"})).await;
    let t = finished_turns(&app, &u, conv, 1).await;
    let t1 = turn(&t, 1);
    assert_eq!(t1["status"], "done", "{t1}");
    assert_eq!(t1["model_selection"], "anthropic/default");
    assert_eq!(
        t1["config_selection"],
        json!({"requested": {}, "applied": {}, "skipped": [], "status": "applied", "error": null})
    );
    assert!(stages(&app, conv, &t1["id"]).await.is_empty());
    assert!(received(&app, conv, "session/set_config_option").await.is_empty());
}

async fn an_agent_restarted_with_a_new_credential_gets_model_and_options_again(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let a = agent(&app, &u, "claude", json!({"model": "anthropic/opus", "session_config": {"effort": "high"}})).await;
    let conv = create(&app, &u, json!({"agent_id": a, "prompt": "say: turn 1"})).await;
    let t = finished_turns(&app, &u, conv, 1).await;
    assert_eq!(turn(&t, 1)["inference"]["scope"], "platform");
    // The account's own key: the agent restarts with it, in a new session with the runtime's defaults.
    let r = app
        .request(
            reqwest::Method::PUT,
            "/api/account/inference-credentials/anthropic_api_key",
            Some(&u.key),
            Some(json!({"value": "sk-ant-own"})),
        )
        .await;
    assert!(r.status.is_success(), "{}", r.text);
    prompt(&app, &u, conv, json!({"prompt": "say: turn 2"})).await;
    let t = finished_turns(&app, &u, conv, 2).await;
    let t2 = turn(&t, 2);
    assert_eq!((t2["status"].as_str(), t2["inference"]["scope"].as_str()), (Some("done"), Some("credential")));
    assert_eq!(
        stages(&app, conv, &t2["id"]).await,
        vec![
            done("model", json!({"model": "anthropic/opus"})),
            done("config", json!({"outcome": "applied", "id": "effort", "value": "high"})),
        ]
    );
    assert_eq!(received(&app, conv, "session/new").await.len(), 2);
    assert_eq!(received(&app, conv, "session/set_config_option").await.len(), 4);
}

async fn the_agents_mcp_servers_and_system_prompt_reach_its_session(b: Backend) {
    let app = app(b).await;
    let u = app.user().await;
    let mcp = json!([{"name": "docs", "command": "/usr/bin/docs-mcp", "args": ["--stdio"], "env": []}]);
    let a = agent(&app, &u, "claude", json!({"system_prompt": "Answer in French.", "mcp_servers": mcp})).await;
    let conv = create(&app, &u, json!({"agent_id": a, "prompt": "say: ok"})).await;
    finished_turns(&app, &u, conv, 1).await;
    let new = received(&app, conv, "session/new").await;
    assert_eq!(new.len(), 1, "{new:?}");
    assert_eq!(new[0]["mcpServers"], mcp);
    assert_eq!(new[0]["_meta"], json!({"systemPrompt": {"append": "Answer in French."}}));

    // A reapply onto another agent: the next prompt starts a runtime that reads its prompt.
    let other = agent(&app, &u, "claude", json!({"system_prompt": "Answer in German."})).await;
    let r = app.post(&format!("/api/conversations/{conv}/reapply"), &u.key, json!({"agent_id": other})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    prompt(&app, &u, conv, json!({"prompt": "say: ok"})).await;
    finished_turns(&app, &u, conv, 2).await;
    let new = received(&app, conv, "session/new").await;
    assert_eq!(new.len(), 2, "{new:?}");
    assert_eq!(new[1]["mcpServers"], json!([]));
    assert_eq!(new[1]["_meta"], json!({"systemPrompt": {"append": "Answer in German."}}));

    // Other runtimes take no `_meta` (Codex reads its prompt from its config file).
    let a = agent(&app, &u, "codex", json!({"system_prompt": "Be brief."})).await;
    let conv = create(&app, &u, json!({"agent_id": a, "prompt": "say: ok"})).await;
    finished_turns(&app, &u, conv, 1).await;
    let new = received(&app, conv, "session/new").await;
    assert!(new[0].get("_meta").is_none(), "{new:?}");
}

crate::both!(
    claude_model_and_config_apply_once_agent_then_conversation_then_prompt,
    codex_refused_value_fails_the_turn_before_its_prompt,
    gemini_takes_its_model_through_set_model_and_skips_options,
    a_refused_model_fails_the_turn_with_the_runtime_message,
    a_model_already_in_force_is_not_sent,
    an_agent_restarted_with_a_new_credential_gets_model_and_options_again,
    the_agents_mcp_servers_and_system_prompt_reach_its_session,
);
