//! JSON-RPC 2.0 framing: one JSON object per line on stdout.

use std::io::Write;

use serde_json::{Value, json};

pub const PARSE_ERROR: i64 = -32700;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// ACP's code for "authentication required" and other agent-side refusals.
pub const AGENT_ERROR: i64 = -32000;

#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError { code, message: message.into() }
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        RpcError::new(INVALID_PARAMS, message)
    }

    pub fn method_not_found(method: &str) -> Self {
        RpcError::new(METHOD_NOT_FOUND, format!("Method not found: {method}"))
    }
}

/// Writes one message as one line; the stdout lock keeps lines of concurrent threads whole.
pub fn send(message: &Value) {
    let mut line = message.to_string();
    line.push('\n');
    let mut out = std::io::stdout().lock();
    // A closed stdout means the client is gone; stdin EOF ends the process soon after.
    let _ = out.write_all(line.as_bytes()).and_then(|()| out.flush());
}

pub fn reply(id: &Value, result: Result<Value, RpcError>) {
    let message = match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": e.code, "message": e.message}}),
    };
    send(&message);
}

pub fn notify(method: &str, params: Value) {
    send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
}

pub fn request(id: u64, method: &str, params: Value) {
    send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
}

/// A string parameter, or -32602 naming the missing key.
pub fn str_param<'a>(params: &'a Value, key: &str) -> Result<&'a str, RpcError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params(format!("missing string param `{key}`")))
}
