//! Handshake, sessions, config options, auth rules per profile, and the transcript log.

use serde_json::json;

use crate::support::Agent;

#[test]
fn initialize_advertises_capabilities_and_auth_methods() {
    let mut agent = Agent::spawn("claude", &[]);
    let response = agent.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
    assert_eq!(
        response,
        json!({"jsonrpc": "2.0", "id": 1, "result": {
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": false, "promptCapabilities": {"image": true}},
            "authMethods": [],
            "agentInfo": {"name": "scripted-agent", "version": env!("CARGO_PKG_VERSION")},
        }})
    );
    let mut codex = Agent::spawn("codex", &[]);
    let methods = codex.ok("initialize", json!({"protocolVersion": 1}))["authMethods"].clone();
    assert_eq!(methods[0]["id"], "openai-api-key");
    let mut gemini = Agent::spawn("gemini", &[]);
    let methods = gemini.ok("initialize", json!({"protocolVersion": 1}))["authMethods"].clone();
    assert_eq!(methods[0]["id"], "gemini-api-key");
}

#[test]
fn claude_sessions_are_numbered_and_carry_config_options() {
    let mut agent = Agent::spawn("claude", &[]);
    assert_eq!(agent.start(None), "sess-1");
    let second = agent.ok("session/new", json!({"cwd": "/workspace", "mcpServers": []}));
    assert_eq!(second["sessionId"], "sess-2");
    assert!(second.get("models").is_none() && second.get("modes").is_none());
    let options = second["configOptions"].as_array().unwrap();
    let summary: Vec<_> =
        options.iter().map(|o| (o["id"].as_str().unwrap(), o["category"].as_str().unwrap())).collect();
    assert_eq!(summary, [("mode", "mode"), ("model", "model"), ("effort", "thought_level"), ("fast", "model_config")]);
    assert_eq!(
        options[3],
        json!({"id": "fast", "name": "Fast mode", "category": "model_config", "type": "select",
               "currentValue": "off", "options": [{"value": "on", "name": "On"}, {"value": "off", "name": "Off"}]})
    );
    let models: Vec<_> = options[1]["options"].as_array().unwrap().iter().map(|o| o["value"].clone()).collect();
    assert_eq!(models, [json!("default"), json!("sonnet"), json!("opus"), json!("haiku")]);
}

#[test]
fn set_config_option_returns_the_whole_list_or_names_the_problem() {
    let mut agent = Agent::spawn("claude", &[]);
    let session = agent.start(None);
    let result =
        agent.ok("session/set_config_option", json!({"sessionId": session, "configId": "effort", "value": "high"}));
    let options = result["configOptions"].as_array().unwrap();
    assert_eq!(options.len(), 4);
    assert_eq!(options[2]["currentValue"], "high");

    let unknown =
        agent.call("session/set_config_option", json!({"sessionId": session, "configId": "speed", "value": "x"}));
    assert_eq!(unknown["error"], json!({"code": -32602, "message": "unknown config option `speed`"}));
    let bad =
        agent.call("session/set_config_option", json!({"sessionId": session, "configId": "effort", "value": "max"}));
    assert_eq!(bad["error"], json!({"code": -32602, "message": "invalid value `max` for config option `effort`"}));
    let no_session =
        agent.call("session/set_config_option", json!({"sessionId": "sess-9", "configId": "effort", "value": "low"}));
    assert_eq!(no_session["error"]["code"], -32602);

    // The refused calls left the earlier choice in place.
    let again = agent.ok("session/set_config_option", json!({"sessionId": session, "configId": "fast", "value": "on"}));
    assert_eq!(again["configOptions"][2]["currentValue"], "high");
    assert_eq!(again["configOptions"][3]["currentValue"], "on");
    let set_model = agent.call("session/set_model", json!({"sessionId": session, "modelId": "opus"}));
    assert_eq!(set_model["error"]["code"], -32601);
}

#[test]
fn codex_requires_authentication_before_session_new() {
    let mut agent = Agent::spawn("codex", &[]);
    agent.ok("initialize", json!({"protocolVersion": 1}));
    let refused = agent.call("session/new", json!({"cwd": "/workspace", "mcpServers": []}));
    assert_eq!(refused["error"], json!({"code": -32000, "message": "Authentication required"}));
    let wrong = agent.call("authenticate", json!({"methodId": "gemini-api-key"}));
    assert_eq!(wrong["error"]["code"], -32602);
    assert_eq!(agent.ok("authenticate", json!({"methodId": "openai-api-key"})), json!({}));
    let session = agent.ok("session/new", json!({"cwd": "/workspace", "mcpServers": []}));
    assert_eq!(session["sessionId"], "sess-1");
    let ids: Vec<_> = session["configOptions"].as_array().unwrap().iter().map(|o| o["id"].clone()).collect();
    assert_eq!(ids, [json!("mode"), json!("model"), json!("reasoning_effort"), json!("fast-mode")]);
    let result = agent.ok(
        "session/set_config_option",
        json!({"sessionId": "sess-1", "configId": "reasoning_effort", "value": "low"}),
    );
    assert_eq!(result["configOptions"][2]["currentValue"], "low");
}

#[test]
fn gemini_uses_models_and_modes_instead_of_config_options() {
    let mut agent = Agent::spawn("gemini", &[]);
    agent.ok("initialize", json!({"protocolVersion": 1}));
    let refused = agent.call("session/new", json!({"cwd": "/workspace", "mcpServers": []}));
    assert_eq!(refused["error"]["message"], "Authentication required");
    agent.ok("authenticate", json!({"methodId": "gemini-api-key"}));
    let session = agent.ok("session/new", json!({"cwd": "/workspace", "mcpServers": []}));
    assert!(session.get("configOptions").is_none());
    assert_eq!(session["models"]["currentModelId"], "gemini-2.5-flash");
    assert_eq!(session["models"]["availableModels"][1], json!({"modelId": "gemini-2.5-pro", "name": "Gemini 2.5 Pro"}));
    assert_eq!(session["modes"]["currentModeId"], "default");
    assert_eq!(session["modes"]["availableModes"][2], json!({"id": "yolo", "name": "YOLO"}));

    assert_eq!(agent.ok("session/set_model", json!({"sessionId": "sess-1", "modelId": "gemini-2.5-pro"})), json!({}));
    assert_eq!(agent.ok("session/set_mode", json!({"sessionId": "sess-1", "modeId": "plan"})), json!({}));
    let bad = agent.call("session/set_model", json!({"sessionId": "sess-1", "modelId": "gpt-5"}));
    assert_eq!(bad["error"], json!({"code": -32602, "message": "invalid value `gpt-5` for modelId"}));
    let config =
        agent.call("session/set_config_option", json!({"sessionId": "sess-1", "configId": "model", "value": "x"}));
    assert_eq!(config["error"]["code"], -32601);
}

#[test]
fn unknown_methods_and_garbage_get_json_rpc_errors() {
    let mut agent = Agent::spawn("claude", &[]);
    let response = agent.call("session/load", json!({"sessionId": "sess-1"}));
    assert_eq!(response["error"], json!({"code": -32601, "message": "Method not found: session/load"}));
    // Unknown notifications are ignored; garbage is a parse error with a null id.
    agent.notify("_zed/whatever", json!({}));
    agent.send_line("{not json");
    let parse_error = agent.recv();
    assert_eq!(parse_error["id"], json!(null));
    assert_eq!(parse_error["error"]["code"], -32700);
}

#[test]
fn every_received_line_is_logged_verbatim() {
    let mut agent = Agent::spawn("claude", &[]);
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#,
        r#"{"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "sess-1"}}"#,
        "not json at all",
    ];
    for line in lines {
        agent.send_line(line);
    }
    assert_eq!(agent.recv()["id"], 1);
    assert_eq!(agent.recv()["error"]["code"], -32700);
    assert_eq!(agent.log(), format!("{}\n", lines.join("\n")));
}

#[test]
fn unknown_profile_exits_with_status_2() {
    let mut agent = Agent::spawn("opencode", &[]);
    assert_eq!(agent.wait_exit().code(), Some(2));
    assert!(agent.stderr().contains("unknown SCRIPTED_AGENT_PROFILE `opencode`"));
}
