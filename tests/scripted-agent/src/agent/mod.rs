//! Dispatch of the client's messages and the agent's shared state.

mod turn;

use std::collections::HashMap;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{Value, json};

use self::turn::{Turn, TurnEvent};
use crate::config::{self, Choice, ConfigOption};
use crate::directive;
use crate::profile::Profile;
use crate::rpc::{self, AGENT_ERROR, PARSE_ERROR, RpcError, str_param};

/// Cheap to clone; the stdin thread and every running turn share it.
#[derive(Clone)]
pub struct Agent(Arc<Mutex<State>>);

struct State {
    profile: Profile,
    authenticated: bool,
    next_session: u64,
    sessions: HashMap<String, Session>,
    /// Running turns by session id: where `session/cancel` goes.
    turns: HashMap<String, Sender<TurnEvent>>,
    /// Our own outstanding requests by id: where the client's answer goes.
    awaiting: HashMap<u64, Sender<TurnEvent>>,
    next_request: u64,
}

struct Session {
    options: Vec<ConfigOption>,
    models: Option<Choice>,
    modes: Option<Choice>,
}

impl Agent {
    pub fn new(profile: Profile) -> Self {
        Agent(Arc::new(Mutex::new(State {
            profile,
            authenticated: false,
            next_session: 1,
            sessions: HashMap::new(),
            turns: HashMap::new(),
            awaiting: HashMap::new(),
            next_request: 1,
        })))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Handles one line from stdin (without its newline).
    pub fn handle_line(&self, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let message: Value = match serde_json::from_slice(line) {
            Ok(message) => message,
            Err(e) => return rpc::reply(&Value::Null, Err(RpcError::new(PARSE_ERROR, format!("Parse error: {e}")))),
        };
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        match (message.get("method").and_then(Value::as_str), message.get("id")) {
            (Some(method), Some(id)) => self.handle_request(id.clone(), method, &params),
            (Some(method), None) => self.handle_notification(method, &params),
            (None, Some(id)) => self.handle_response(id, &message),
            (None, None) => {}
        }
    }

    fn handle_request(&self, id: Value, method: &str, params: &Value) {
        if method == "session/prompt" {
            // The turn thread answers; only a refused start is answered here.
            if let Err(e) = self.start_turn(id.clone(), params) {
                rpc::reply(&id, Err(e));
            }
            return;
        }
        let result = {
            let mut state = self.state();
            match method {
                "initialize" => Ok(state.initialize()),
                "authenticate" => state.authenticate(params),
                "session/new" => state.new_session(),
                "session/set_config_option" => state.set_config_option(params),
                "session/set_model" => state.set_model(params),
                "session/set_mode" => state.set_mode(params),
                _ => Err(RpcError::method_not_found(method)),
            }
        };
        rpc::reply(&id, result);
    }

    fn handle_notification(&self, method: &str, params: &Value) {
        if method != "session/cancel" {
            return;
        }
        let Ok(session_id) = str_param(params, "sessionId") else { return };
        if let Some(turn) = self.state().turns.get(session_id) {
            // A turn that just ended has dropped its receiver; nothing to cancel then.
            let _ = turn.send(TurnEvent::Cancel);
        }
    }

    fn handle_response(&self, id: &Value, message: &Value) {
        let Some(waiter) = id.as_u64().and_then(|id| self.state().awaiting.remove(&id)) else { return };
        let answer = match message.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
        };
        let _ = waiter.send(TurnEvent::Answer(answer));
    }

    fn start_turn(&self, id: Value, params: &Value) -> Result<(), RpcError> {
        let session_id = str_param(params, "sessionId")?.to_owned();
        let text = prompt_text(params)?;
        let (events_tx, events) = mpsc::channel();
        {
            let mut state = self.state();
            if !state.sessions.contains_key(&session_id) {
                return Err(unknown_session(&session_id));
            }
            if state.turns.contains_key(&session_id) {
                return Err(RpcError::new(AGENT_ERROR, "a prompt is already running in this session"));
            }
            let directives = directive::parse(&text).map_err(RpcError::invalid_params)?;
            state.turns.insert(session_id.clone(), events_tx.clone());
            let turn = Turn::new(self.clone(), session_id, id, events_tx, events);
            std::thread::spawn(move || turn.run(directives));
        }
        Ok(())
    }

    /// Sends a request to the client; its answer arrives on `events` as `TurnEvent::Answer`.
    pub fn request(&self, method: &str, params: Value, events: Sender<TurnEvent>) {
        let id = {
            let mut state = self.state();
            let id = state.next_request;
            state.next_request += 1;
            state.awaiting.insert(id, events);
            id
        };
        rpc::request(id, method, params);
    }

    /// Called by a turn before it answers, so the next prompt is accepted at once.
    pub fn finish_turn(&self, session_id: &str) {
        self.state().turns.remove(session_id);
    }
}

impl State {
    fn initialize(&self) -> Value {
        json!({
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": false, "promptCapabilities": {"image": true}},
            "authMethods": self.profile.auth_methods_json(),
            "agentInfo": {"name": "scripted-agent", "version": env!("CARGO_PKG_VERSION")},
        })
    }

    fn authenticate(&mut self, params: &Value) -> Result<Value, RpcError> {
        let method = str_param(params, "methodId")?;
        if self.profile.auth_method() != Some(method) {
            return Err(RpcError::invalid_params(format!("unknown auth method `{method}`")));
        }
        self.authenticated = true;
        Ok(json!({}))
    }

    fn new_session(&mut self) -> Result<Value, RpcError> {
        if self.profile.auth_method().is_some() && !self.authenticated {
            return Err(RpcError::new(AGENT_ERROR, "Authentication required"));
        }
        let id = format!("sess-{}", self.next_session);
        self.next_session += 1;
        let session = Session {
            options: self.profile.config_options(),
            models: self.profile.models(),
            modes: self.profile.modes(),
        };
        let mut result = json!({"sessionId": id});
        if !session.options.is_empty() {
            result["configOptions"] = config::options_json(&session.options);
        }
        if let Some(models) = &session.models {
            result["models"] = models.models_json();
        }
        if let Some(modes) = &session.modes {
            result["modes"] = modes.modes_json();
        }
        self.sessions.insert(id, session);
        Ok(result)
    }

    fn session(&mut self, params: &Value) -> Result<&mut Session, RpcError> {
        let id = str_param(params, "sessionId")?;
        self.sessions.get_mut(id).ok_or_else(|| unknown_session(id))
    }

    fn set_config_option(&mut self, params: &Value) -> Result<Value, RpcError> {
        if self.profile.config_options().is_empty() {
            return Err(RpcError::method_not_found("session/set_config_option"));
        }
        let config_id = str_param(params, "configId")?;
        let value = params.get("value").unwrap_or(&Value::Null);
        let session = self.session(params)?;
        config::set_option(&mut session.options, config_id, value)?;
        Ok(json!({"configOptions": config::options_json(&session.options)}))
    }

    fn set_model(&mut self, params: &Value) -> Result<Value, RpcError> {
        if self.profile.models().is_none() {
            return Err(RpcError::method_not_found("session/set_model"));
        }
        let model = str_param(params, "modelId")?;
        let session = self.session(params)?;
        if let Some(models) = &mut session.models {
            models.select(model, "modelId")?;
        }
        Ok(json!({}))
    }

    fn set_mode(&mut self, params: &Value) -> Result<Value, RpcError> {
        if self.profile.modes().is_none() {
            return Err(RpcError::method_not_found("session/set_mode"));
        }
        let mode = str_param(params, "modeId")?;
        let session = self.session(params)?;
        if let Some(modes) = &mut session.modes {
            modes.select(mode, "modeId")?;
        }
        Ok(json!({}))
    }
}

fn unknown_session(id: &str) -> RpcError {
    RpcError::invalid_params(format!("unknown session `{id}`"))
}

/// The text blocks of `session/prompt`, joined by newlines; other block types are ignored.
fn prompt_text(params: &Value) -> Result<String, RpcError> {
    let blocks = params
        .get("prompt")
        .and_then(Value::as_array)
        .ok_or_else(|| RpcError::invalid_params("missing array param `prompt`"))?;
    let texts: Vec<&str> = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    Ok(texts.join("\n"))
}
