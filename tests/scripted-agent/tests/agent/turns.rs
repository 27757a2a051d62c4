//! Prompt turns driven by directives.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{Agent, agent_text, message_chunk, stop_response, update};

#[test]
fn say_streams_chunks_of_at_most_16_bytes() {
    let mut agent = Agent::spawn("claude", &[]);
    let s = agent.start(None);
    let (messages, response) = agent.prompt(&s, "say: Hello, streaming world! ünïcode");
    assert_eq!(
        messages,
        [message_chunk(&s, "Hello, streaming"), message_chunk(&s, " world! ünïcod"), message_chunk(&s, "e"),]
    );
    assert_eq!(response, stop_response(3, "end_turn"));
}

#[test]
fn prompt_without_directives_is_echoed_and_blocks_are_joined() {
    let mut agent = Agent::spawn("claude", &[]);
    let s = agent.start(None);
    let (messages, _) = agent.prompt(&s, "hi there");
    assert_eq!(messages, [message_chunk(&s, "hi there")]);
    let id = agent.request(
        "session/prompt",
        json!({"sessionId": s, "prompt": [
            {"type": "text", "text": "say: one"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "text", "text": "plain line\nthink: hmm"},
        ]}),
    );
    let (messages, response) = agent.until_response(id);
    assert_eq!(
        messages,
        [
            message_chunk(&s, "one"),
            message_chunk(&s, "plain line"),
            update(&s, json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}})),
        ]
    );
    assert_eq!(response["result"]["stopReason"], "end_turn");
}

#[test]
fn tool_plan_labels_and_usage() {
    let mut agent = Agent::spawn("claude", &[]);
    let s = agent.start(None);
    let script =
        "tool: t1 execute Run ls -la\nplan: read code; fix bug\nlabels: {\"stage\": \"review\"}\nusage: 100 20 5 7";
    let (messages, response) = agent.prompt(&s, script);
    assert_eq!(
        messages,
        [
            update(
                &s,
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Run ls -la", "kind": "execute", "status": "pending"})
            ),
            update(
                &s,
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed", "rawOutput": {"ok": true}})
            ),
            update(
                &s,
                json!({"sessionUpdate": "plan", "entries": [
                    {"content": "read code", "priority": "medium", "status": "pending"},
                    {"content": "fix bug", "priority": "medium", "status": "pending"},
                ]})
            ),
            json!({"jsonrpc": "2.0", "method": "_service/labels", "params": {"sessionId": s, "labels": {"stage": "review"}}}),
            update(&s, json!({"sessionUpdate": "usage_update", "used": 132, "size": 200000})),
        ]
    );
    assert_eq!(
        response["result"],
        json!({"stopReason": "end_turn", "usage": {"inputTokens": 100, "outputTokens": 20,
               "cachedReadTokens": 5, "cachedWriteTokens": 7, "totalTokens": 132}})
    );
    let (_, response) = agent.prompt(&s, "usage: 3 4\nstop: max_tokens\nsay: never");
    assert_eq!(
        response["result"],
        json!({"stopReason": "max_tokens", "usage": {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7}})
    );
}

/// Runs `permission:` and answers the request with `outcome`; returns the turn after the request.
fn permission_turn(outcome: serde_json::Value) -> (String, Vec<serde_json::Value>) {
    let mut agent = Agent::spawn("claude", &[]);
    let s = agent.start(None);
    let id = agent.send_prompt(&s, "permission: t9 Delete everything\nsay: after");
    let tool_call = json!({"toolCallId": "t9", "title": "Delete everything", "kind": "execute", "status": "pending"});
    let mut pending = tool_call.clone();
    pending["sessionUpdate"] = json!("tool_call");
    assert_eq!(agent.recv(), update(&s, pending));
    let request = agent.recv();
    assert_eq!(
        request,
        json!({"jsonrpc": "2.0", "id": 1, "method": "session/request_permission", "params": {
        "sessionId": s, "toolCall": tool_call, "options": [
            {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ]}})
    );
    // Other requests are still answered while the turn waits for the verdict.
    let during = agent.call("session/set_config_option", json!({"sessionId": s, "configId": "mode", "value": "plan"}));
    assert!(during.get("result").is_some());
    agent.send(json!({"jsonrpc": "2.0", "id": 1, "result": {"outcome": outcome}}));
    let (messages, response) = agent.until_response(id);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    (s, messages)
}

#[test]
fn permission_allowed() {
    let (s, messages) = permission_turn(json!({"outcome": "selected", "optionId": "allow-once"}));
    assert_eq!(
        messages,
        [
            message_chunk(&s, "permission: allow-once"),
            update(&s, json!({"sessionUpdate": "tool_call_update", "toolCallId": "t9", "status": "completed"})),
            message_chunk(&s, "after"),
        ]
    );
}

#[test]
fn permission_rejected() {
    let (s, messages) = permission_turn(json!({"outcome": "selected", "optionId": "reject"}));
    assert_eq!(messages[0], message_chunk(&s, "permission: reject"));
    assert_eq!(
        messages[1],
        update(&s, json!({"sessionUpdate": "tool_call_update", "toolCallId": "t9", "status": "failed"}))
    );
}

#[test]
fn cancel_while_permission_pending_ends_cancelled_after_the_answer() {
    let mut agent = Agent::spawn("claude", &[]);
    let s = agent.start(None);
    let id = agent.send_prompt(&s, "permission: t1 Run it\nsay: never");
    agent.recv();
    let request = agent.recv();
    agent.notify("session/cancel", json!({"sessionId": s}));
    agent.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": {"outcome": "cancelled"}}}));
    let (messages, response) = agent.until_response(id);
    assert_eq!(agent_text(&messages), "permission: cancelled");
    assert_eq!(messages[1]["params"]["update"]["status"], "failed");
    assert_eq!(response, stop_response(id, "cancelled"));
}

#[test]
fn cancel_during_sleep_ends_the_turn_at_once() {
    let mut agent = Agent::spawn("claude", &[]);
    let s = agent.start(None);
    let id = agent.send_prompt(&s, "say: start\nsleep: 30000\nsay: never");
    assert_eq!(agent.recv(), message_chunk(&s, "start"));
    // The busy session refuses a second prompt, other requests are answered meanwhile.
    let busy = agent.call("session/prompt", json!({"sessionId": s, "prompt": [{"type": "text", "text": "hi"}]}));
    assert_eq!(busy["error"]["code"], -32000);
    let started = Instant::now();
    agent.notify("session/cancel", json!({"sessionId": s}));
    assert_eq!(agent.recv(), stop_response(id, "cancelled"));
    assert!(started.elapsed() < Duration::from_secs(5));
    // The session takes the next prompt.
    let (messages, _) = agent.prompt(&s, "say: again");
    assert_eq!(messages, [message_chunk(&s, "again")]);
}

#[test]
fn sleep_without_cancel_finishes_normally() {
    let mut agent = Agent::spawn("claude", &[]);
    let s = agent.start(None);
    let started = Instant::now();
    let (_, response) = agent.prompt(&s, "sleep: 200\nsay: done");
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(response["result"]["stopReason"], "end_turn");
}

#[test]
fn error_directive_answers_the_prompt_with_an_error() {
    let mut agent = Agent::spawn("claude", &[]);
    let s = agent.start(None);
    let (messages, response) = agent.prompt(&s, "say: partial\nerror: -32603 model overloaded\nsay: never");
    assert_eq!(messages, [message_chunk(&s, "partial")]);
    assert_eq!(response["error"], json!({"code": -32603, "message": "model overloaded"}));
    let (_, bad) = agent.prompt(&s, "say: ok\nsleep: soon");
    assert_eq!(
        bad["error"],
        json!({"code": -32602, "message": "line 2: sleep: milliseconds: expected a number, got `soon`"})
    );
    let unknown = agent.call("session/prompt", json!({"sessionId": "sess-7", "prompt": []}));
    assert_eq!(unknown["error"], json!({"code": -32602, "message": "unknown session `sess-7`"}));
}

#[test]
fn exit_mid_turn_kills_the_process_after_stderr() {
    let mut agent = Agent::spawn("claude", &[]);
    let s = agent.start(None);
    agent.send_prompt(&s, "say: bye\nstderr: fatal: out of memory\nexit: 3\nsay: never");
    assert_eq!(agent.recv(), message_chunk(&s, "bye"));
    assert_eq!(agent.wait_exit().code(), Some(3));
    assert!(agent.quiet_for(Duration::from_millis(100)));
    assert_eq!(agent.stderr(), "fatal: out of memory\n");
}

#[test]
fn echo_env_and_write() {
    let mut agent = Agent::spawn("claude", &[("SECRET_TOKEN", "s3cr3t-value")]);
    let s = agent.start(None);
    let target = agent.dir.path().join("out.txt");
    let script = format!("echo-env: SECRET_TOKEN\necho-env: NOT_SET_ANYWHERE\nwrite: {} hello  file", target.display());
    let (messages, response) = agent.prompt(&s, &script);
    assert_eq!(messages, [message_chunk(&s, "s3cr3t-value"), message_chunk(&s, "")]);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "hello  file");
    let missing = agent.dir.path().join("no/such/dir/file");
    let (_, failed) = agent.prompt(&s, &format!("write: {} x", missing.display()));
    assert_eq!(failed["error"]["code"], -32603);
}
