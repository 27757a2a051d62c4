//! Drives one ACP agent session: the handshake, session settings, and turns.
//!
//! The client reads the agent's messages only while it waits for something (a call or a turn). What
//! arrives outside a turn (a late `available_commands_update`, a `config_option_update` after a setting)
//! is kept and handed out by [`AcpClient::drain_events`] or at the start of the next turn.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::rpc::{Connection, INVALID_PARAMS, Inbound, Incoming, LineSink, LineSource, METHOD_NOT_FOUND, PendingCall};
use super::rpc::{RpcError, Transport};
use super::types::{
    AuthMethod, AuthenticateRequest, CancelNotification, ClientCapabilities, ConfigOption, ContentBlock,
    InitializeRequest, InitializeResponse, NewSessionRequest, NewSessionResponse, PROTOCOL_VERSION, PermissionOutcome,
    PromptRequest, PromptResponse, RequestPermissionRequest, RequestPermissionResponse, SessionNotification,
    SessionUpdate, SetConfigOptionRequest, SetConfigOptionResponse, SetModeRequest, SetModelRequest,
};

/// The session's working directory inside the sandbox.
pub const WORKSPACE: &str = "/workspace";

/// Something the agent said during a turn, in the order it said it.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    Update(SessionUpdate),
    /// Must be answered with [`AcpControl::answer_permission`]; the agent waits.
    PermissionRequest {
        request_id: Value,
        request: RequestPermissionRequest,
    },
    /// A `_`-prefixed notification such as `_service/labels` or `_auth/status_update`.
    Ext {
        method: String,
        params: Value,
    },
    /// The turn is over; always the last event of a turn.
    End(PromptResponse),
}

/// What the agent told us while starting.
#[derive(Debug, Clone, PartialEq)]
pub struct Handshake {
    pub initialize: InitializeResponse,
    /// The method passed to `authenticate`, if one was.
    pub auth_method: Option<String>,
    pub session: NewSessionResponse,
}

/// The method to authenticate with: an `…api-key` method whose environment variable is set
/// (`openai-api-key` -> `OPENAI_API_KEY`), else the first one; none when the agent lists none.
pub fn choose_auth_method<'a>(methods: &'a [AuthMethod], env: &BTreeMap<String, String>) -> Option<&'a str> {
    let has_key = |m: &&AuthMethod| {
        m.id.ends_with("api-key") && env.get(&m.id.to_uppercase().replace('-', "_")).is_some_and(|v| !v.is_empty())
    };
    methods.iter().find(has_key).or(methods.first()).map(|m| m.id.as_str())
}

fn to_params<T: Serialize>(method: &str, params: &T) -> Result<Value, RpcError> {
    serde_json::to_value(params).map_err(|e| RpcError::Decode { method: method.into(), detail: e.to_string() })
}

fn decode<T: DeserializeOwned>(method: &str, value: Value) -> Result<T, RpcError> {
    serde_json::from_value(value).map_err(|e| RpcError::Decode { method: method.into(), detail: e.to_string() })
}

/// What `session/new` carries besides the working directory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionSetup {
    /// ACP MCP server entries (`{name, command, args, env}` or `{type: "http", name, url, headers}`).
    pub mcp_servers: Vec<Value>,
    /// `_meta`, runtime-specific.
    pub meta: Option<Value>,
}

/// Cancels and answers from anywhere, also while a [`Turn`] borrows the client.
#[derive(Debug, Clone)]
pub struct AcpControl {
    conn: Connection,
    session_id: String,
    /// Permission requests handed out and not yet answered.
    open_permissions: Arc<Mutex<Vec<Value>>>,
}

impl AcpControl {
    fn take_open(&self, request_id: Option<&Value>) -> Vec<Value> {
        let mut open = self.open_permissions.lock().unwrap_or_else(PoisonError::into_inner);
        match request_id {
            Some(id) => open.iter().position(|o| o == id).map(|i| vec![open.remove(i)]).unwrap_or_default(),
            None => std::mem::take(&mut *open),
        }
    }

    fn respond_permission(&self, id: Value, outcome: PermissionOutcome) -> Result<(), RpcError> {
        let method = "session/request_permission";
        self.conn.respond(id, to_params(method, &RequestPermissionResponse { outcome })?)
    }

    /// Takes on a request an earlier connection read and left unanswered (a server restart while
    /// the agent waited): it can then be answered, or cancelled with the turn.
    pub fn adopt_permission(&self, request_id: Value) {
        self.open_permissions.lock().unwrap_or_else(PoisonError::into_inner).push(request_id);
    }

    /// Answers a permission request. A request already answered (by [`Self::cancel`]) is left alone.
    pub fn answer_permission(&self, request_id: &Value, outcome: PermissionOutcome) -> Result<(), RpcError> {
        match self.take_open(Some(request_id)).pop() {
            Some(id) => self.respond_permission(id, outcome),
            None => Ok(()),
        }
    }

    /// Asks the agent to stop the turn (it then ends with stop reason `cancelled`), and answers every open
    /// permission request with `cancelled`, as the protocol requires.
    pub fn cancel(&self) -> Result<(), RpcError> {
        let method = "session/cancel";
        self.conn.notify(method, to_params(method, &CancelNotification { session_id: self.session_id.clone() })?)?;
        for id in self.take_open(None) {
            self.respond_permission(id, PermissionOutcome::Cancelled)?;
        }
        Ok(())
    }
}

#[derive(Debug)]
pub struct AcpClient {
    control: AcpControl,
    inbound: Inbound,
    /// False once the agent's output ended, so waiting loops stop listening to it.
    inbound_open: bool,
    /// Events read while no turn ran.
    backlog: VecDeque<TurnEvent>,
}

impl AcpClient {
    /// Connects and opens a session: `initialize`, `authenticate` when the agent asks for it, `session/new`
    /// with the agent's MCP servers and runtime settings.
    pub async fn start<S: LineSource, K: LineSink>(
        transport: Transport<S, K>,
        env: &BTreeMap<String, String>,
        setup: SessionSetup,
    ) -> Result<(AcpClient, Handshake), RpcError> {
        let (conn, inbound) = Connection::start(transport);
        let control = AcpControl { conn, session_id: String::new(), open_permissions: Arc::default() };
        let mut client = AcpClient { control, inbound, inbound_open: true, backlog: VecDeque::new() };
        // We advertise neither fs nor terminal: the agent works on the sandbox's files itself.
        let init = InitializeRequest {
            protocol_version: PROTOCOL_VERSION,
            client_capabilities: ClientCapabilities::default(),
        };
        let initialize: InitializeResponse = client.request("initialize", &init).await?;
        let auth_method = choose_auth_method(&initialize.auth_methods, env).map(str::to_owned);
        if let Some(method_id) = &auth_method {
            let _: Value =
                client.request("authenticate", &AuthenticateRequest { method_id: method_id.clone() }).await?;
        }
        let new = NewSessionRequest { cwd: WORKSPACE.into(), mcp_servers: setup.mcp_servers, meta: setup.meta };
        let session: NewSessionResponse = client.request("session/new", &new).await?;
        client.control.session_id = session.session_id.clone();
        Ok((client, Handshake { initialize, auth_method, session }))
    }

    /// Takes over an agent whose session an earlier connection opened (before a server restart).
    pub fn resume<S: LineSource, K: LineSink>(
        transport: Transport<S, K>,
        session_id: String,
        first_id: u64,
    ) -> AcpClient {
        let (conn, inbound) = Connection::start_at(transport, first_id);
        let control = AcpControl { conn, session_id, open_permissions: Arc::default() };
        AcpClient { control, inbound, inbound_open: true, backlog: VecDeque::new() }
    }

    /// Follows a turn whose `session/prompt` (JSON-RPC id `rpc_id`) an earlier connection sent.
    pub fn resume_turn(&mut self, rpc_id: u64) -> Result<Turn<'_>, RpcError> {
        let answer = self.control.conn.adopt(rpc_id)?;
        Ok(Turn { client: self, answer: Some(answer) })
    }

    pub fn session_id(&self) -> &str {
        &self.control.session_id
    }

    pub fn control(&self) -> AcpControl {
        self.control.clone()
    }

    /// Sets a session config option; returns the agent's whole new option list (options depend on each other).
    pub async fn set_config(&mut self, option_id: &str, value: Value) -> Result<Vec<ConfigOption>, RpcError> {
        let session_id = self.control.session_id.clone();
        let request = SetConfigOptionRequest { session_id, config_id: option_id.into(), value };
        let response: SetConfigOptionResponse = self.request("session/set_config_option", &request).await?;
        Ok(response.config_options)
    }

    /// The legacy model switch, for agents without a `model` config option (Gemini).
    pub async fn set_model(&mut self, model_id: &str) -> Result<(), RpcError> {
        let request = SetModelRequest { session_id: self.control.session_id.clone(), model_id: model_id.into() };
        self.request::<Value>("session/set_model", &request).await.map(drop)
    }

    /// The legacy mode switch, for agents without a `mode` config option.
    pub async fn set_mode(&mut self, mode_id: &str) -> Result<(), RpcError> {
        let request = SetModeRequest { session_id: self.control.session_id.clone(), mode_id: mode_id.into() };
        self.request::<Value>("session/set_mode", &request).await.map(drop)
    }

    /// Sends a prompt; read the turn with [`Turn::next`] until [`TurnEvent::End`] or an error.
    pub fn prompt(&mut self, prompt: Vec<ContentBlock>) -> Result<Turn<'_>, RpcError> {
        let request = PromptRequest { session_id: self.control.session_id.clone(), prompt };
        let answer = self.control.conn.send_request("session/prompt", to_params("session/prompt", &request)?)?;
        Ok(Turn { client: self, answer: Some(answer) })
    }

    /// Events the agent sent outside a turn, without waiting for more.
    pub fn drain_events(&mut self) -> Vec<TurnEvent> {
        while let Some(message) = self.inbound.try_recv() {
            if let Some(event) = self.route(message) {
                self.backlog.push_back(event);
            }
        }
        self.backlog.drain(..).collect()
    }

    /// One call, reading the agent's messages meanwhile so its requests get answered.
    async fn request<T: DeserializeOwned>(&mut self, method: &str, params: &impl Serialize) -> Result<T, RpcError> {
        let mut answer = self.control.conn.send_request(method, to_params(method, params)?)?;
        loop {
            tokio::select! {
                biased;
                message = self.inbound.recv(), if self.inbound_open => match message {
                    Some(message) => {
                        if let Some(event) = self.route(message) {
                            self.backlog.push_back(event);
                        }
                    }
                    None => self.inbound_open = false,
                },
                result = &mut answer => return decode(method, result?),
            }
        }
    }

    /// Turns a message from the agent into an event, answering what we do not support.
    fn route(&mut self, message: Incoming) -> Option<TurnEvent> {
        match message {
            Incoming::Notification { method, params } if method == "session/update" => {
                match decode::<SessionNotification>(&method, params) {
                    Ok(notification) => Some(TurnEvent::Update(notification.update)),
                    Err(e) => {
                        tracing::warn!(error = %e, "skipping an unreadable session/update");
                        None
                    }
                }
            }
            Incoming::Notification { method, params } if method.starts_with('_') => {
                Some(TurnEvent::Ext { method, params })
            }
            Incoming::Notification { method, .. } => {
                tracing::debug!(method, "ignoring an unknown notification from the agent");
                None
            }
            Incoming::Request { id, method, params } if method == "session/request_permission" => {
                match decode::<RequestPermissionRequest>(&method, params) {
                    Ok(request) => {
                        self.control.open_permissions.lock().unwrap_or_else(PoisonError::into_inner).push(id.clone());
                        Some(TurnEvent::PermissionRequest { request_id: id, request })
                    }
                    Err(e) => {
                        self.answer_error(id, INVALID_PARAMS, &e.to_string());
                        None
                    }
                }
            }
            // fs/* and terminal/* are not advertised; anything else is unknown to us.
            Incoming::Request { id, method, .. } => {
                tracing::debug!(method, "refusing an agent request this client does not offer");
                self.answer_error(id, METHOD_NOT_FOUND, &format!("{method} is not supported by this client"));
                None
            }
        }
    }

    fn answer_error(&self, id: Value, code: i64, message: &str) {
        if let Err(e) = self.control.conn.respond_error(id, code, message) {
            tracing::debug!(error = %e, "could not answer the agent");
        }
    }
}

/// One prompt turn; borrows the client until dropped. Dropping it early forgets the prompt's answer
/// (cancel first if the agent should stop).
#[derive(Debug)]
pub struct Turn<'a> {
    client: &'a mut AcpClient,
    /// `None` once the turn ended.
    answer: Option<PendingCall>,
}

impl Turn<'_> {
    /// The next event; `None` after the turn ended. Cancel safe.
    pub async fn next(&mut self) -> Option<Result<TurnEvent, RpcError>> {
        let Turn { client, answer } = self;
        loop {
            if let Some(event) = client.backlog.pop_front() {
                return Some(Ok(event));
            }
            let pending = answer.as_mut()?;
            // Biased: everything the agent sent before its answer is already queued, and comes first.
            tokio::select! {
                biased;
                message = client.inbound.recv(), if client.inbound_open => match message {
                    Some(message) => {
                        if let Some(event) = client.route(message) {
                            return Some(Ok(event));
                        }
                    }
                    None => client.inbound_open = false,
                },
                result = pending => {
                    *answer = None;
                    return Some(result.and_then(|v| decode("session/prompt", v)).map(TurnEvent::End));
                }
            }
        }
    }

    pub fn control(&self) -> AcpControl {
        self.client.control()
    }

    /// The JSON-RPC id of the turn's `session/prompt`, to adopt its answer after a restart; `None` once
    /// the turn ended.
    pub fn rpc_id(&self) -> Option<u64> {
        self.answer.as_ref().map(PendingCall::id)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::fake_agent::{FakeAgent, pipe};
    use super::super::types::UsageUpdate;
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn methods(ids: &[&str]) -> Vec<AuthMethod> {
        ids.iter().map(|id| AuthMethod { id: id.to_string(), ..AuthMethod::default() }).collect()
    }

    #[test]
    fn auth_method_follows_the_environment() {
        let codex = methods(&["chatgpt", "codex-api-key", "openai-api-key"]);
        assert_eq!(choose_auth_method(&codex, &env(&[("OPENAI_API_KEY", "k")])), Some("openai-api-key"));
        assert_eq!(choose_auth_method(&codex, &env(&[("OPENAI_API_KEY", "")])), Some("chatgpt"));
        assert_eq!(choose_auth_method(&codex, &env(&[])), Some("chatgpt"));
        let gemini = methods(&["oauth-personal", "gemini-api-key", "vertex-ai"]);
        assert_eq!(choose_auth_method(&gemini, &env(&[("GEMINI_API_KEY", "k")])), Some("gemini-api-key"));
        assert_eq!(choose_auth_method(&[], &env(&[("GEMINI_API_KEY", "k")])), None);
    }

    /// Runs the agent's side of `start`; `auth` is the method it expects, if any.
    async fn handshake(agent: &mut FakeAgent, auth_methods: Value, auth: Option<&str>, session: Value) {
        let (id, params) = agent.expect("initialize").await;
        assert_eq!(
            params,
            json!({"protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}})
        );
        agent.answer(id, json!({"protocolVersion": 1, "authMethods": auth_methods})).await;
        if let Some(method) = auth {
            let (id, params) = agent.expect("authenticate").await;
            assert_eq!(params, json!({"methodId": method}));
            agent.answer(id, json!({})).await;
        }
        let (id, params) = agent.expect("session/new").await;
        assert_eq!(params, json!({"cwd": "/workspace", "mcpServers": []}));
        agent.answer(id, session).await;
    }

    async fn started(agent: &mut FakeAgent, transport: super::super::fake_agent::PipeTransport) -> AcpClient {
        let session = json!({"sessionId": "s1", "configOptions": []});
        let env = env(&[]);
        let (start, ()) = tokio::join!(
            AcpClient::start(transport, &env, SessionSetup::default()),
            handshake(agent, json!([]), None, session)
        );
        start.unwrap().0
    }

    fn update(kind: &str, rest: Value) -> Value {
        let mut update = rest;
        update["sessionUpdate"] = json!(kind);
        json!({"sessionId": "s1", "update": update})
    }

    #[tokio::test]
    async fn start_authenticates_with_the_key_in_the_environment() {
        let (transport, mut agent) = pipe();
        let session = json!({"sessionId": "s9", "configOptions": [{"id": "model", "category": "model", "type": "select",
            "currentValue": "gpt-5.2-codex", "options": [{"value": "gpt-5.2-codex", "name": "x"}]}]});
        let methods = json!([{"id": "chatgpt", "name": "ChatGPT"}, {"id": "openai-api-key", "name": "Key"}]);
        let env = env(&[("OPENAI_API_KEY", "dummy")]);
        let (start, ()) = tokio::join!(
            AcpClient::start(transport, &env, SessionSetup::default()),
            handshake(&mut agent, methods, Some("openai-api-key"), session)
        );
        let (client, handshake) = start.unwrap();
        assert_eq!(client.session_id(), "s9");
        assert_eq!(handshake.auth_method.as_deref(), Some("openai-api-key"));
        assert_eq!(handshake.session.config_options.unwrap()[0].current_value, "gpt-5.2-codex");
    }

    #[tokio::test]
    async fn a_turn_yields_updates_in_order_and_answers_what_we_do_not_offer() {
        let (transport, mut agent) = pipe();
        let mut client = started(&mut agent, transport).await;
        let mut turn = client.prompt(vec![ContentBlock::text("hi")]).unwrap();
        let (prompt_id, params) = agent.expect("session/prompt").await;
        assert_eq!(params, json!({"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]}));
        agent
            .notify("session/update", update("agent_message_chunk", json!({"content": {"type": "text", "text": "He"}})))
            .await;
        agent.notify("_auth/status_update", json!({"status": "ok"})).await;
        agent
            .send(json!({"jsonrpc": "2.0", "id": 90, "method": "fs/read_text_file", "params": {"path": "/etc/passwd"}}))
            .await;
        agent.notify("not/known", json!({})).await;
        agent.notify("session/update", update("brand_new_kind", json!({"x": 1}))).await;
        agent.notify("session/update", update("usage_update", json!({"used": 10, "size": 100}))).await;
        agent
            .answer(prompt_id, json!({"stopReason": "end_turn", "usage": {"inputTokens": 3, "outputTokens": 2}}))
            .await;

        let mut events = Vec::new();
        while let Some(event) = turn.next().await {
            events.push(event.unwrap());
        }
        assert_eq!(events.len(), 5, "{events:#?}");
        let TurnEvent::Update(SessionUpdate::AgentMessageChunk(chunk)) = &events[0] else { panic!("{:?}", events[0]) };
        assert_eq!(chunk.content, ContentBlock::text("He"));
        assert_eq!(events[1], TurnEvent::Ext { method: "_auth/status_update".into(), params: json!({"status": "ok"}) });
        assert!(matches!(&events[2], TurnEvent::Update(SessionUpdate::Other(v)) if v["x"] == 1));
        let usage = UsageUpdate { used: Some(10), size: Some(100), ..UsageUpdate::default() };
        assert_eq!(events[3], TurnEvent::Update(SessionUpdate::UsageUpdate(usage)));
        let TurnEvent::End(end) = &events[4] else { panic!("{:?}", events[4]) };
        assert_eq!((end.stop_reason.as_str(), end.usage.as_ref().unwrap().input_tokens), ("end_turn", Some(3)));
        assert_eq!(agent.recv().await["error"]["code"], METHOD_NOT_FOUND);
    }

    #[tokio::test]
    async fn permission_requests_are_answered_by_the_owner() {
        let (transport, mut agent) = pipe();
        let mut client = started(&mut agent, transport).await;
        let mut turn = client.prompt(vec![ContentBlock::text("run ls")]).unwrap();
        let (prompt_id, _) = agent.expect("session/prompt").await;
        agent
            .send(
                json!({"jsonrpc": "2.0", "id": 5, "method": "session/request_permission", "params": {"sessionId": "s1",
            "toolCall": {"toolCallId": "t1", "title": "ls"},
            "options": [{"optionId": "allow-once", "name": "Allow", "kind": "allow_once"}]}}),
            )
            .await;
        let Some(Ok(TurnEvent::PermissionRequest { request_id, request })) = turn.next().await else { panic!() };
        assert_eq!((request.options[0].option_id.as_str(), &request.tool_call["title"]), ("allow-once", &json!("ls")));
        let selected = PermissionOutcome::Selected { option_id: "allow-once".into() };
        turn.control().answer_permission(&request_id, selected.clone()).unwrap();
        assert_eq!(
            agent.recv().await,
            json!({"jsonrpc": "2.0", "id": 5,
            "result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}}})
        );
        // A second answer to the same request is not sent.
        turn.control().answer_permission(&request_id, selected).unwrap();
        agent.answer(prompt_id, json!({"stopReason": "end_turn"})).await;
        assert!(matches!(turn.next().await, Some(Ok(TurnEvent::End(_)))));
        assert!(turn.next().await.is_none());
        let (set, ()) = tokio::join!(client.set_model("gemini-2.5-pro"), async {
            let (id, params) = agent.expect("session/set_model").await;
            assert_eq!(params, json!({"sessionId": "s1", "modelId": "gemini-2.5-pro"}));
            agent.answer(id, json!({})).await;
        });
        set.unwrap();
    }

    #[tokio::test]
    async fn cancel_during_a_turn_cancels_open_permission_requests() {
        let (transport, mut agent) = pipe();
        let mut client = started(&mut agent, transport).await;
        let mut turn = client.prompt(vec![ContentBlock::text("work")]).unwrap();
        let (prompt_id, _) = agent.expect("session/prompt").await;
        agent
            .send(json!({"jsonrpc": "2.0", "id": "p1", "method": "session/request_permission",
            "params": {"sessionId": "s1", "toolCall": {}, "options": []}}))
            .await;
        let Some(Ok(TurnEvent::PermissionRequest { request_id, .. })) = turn.next().await else { panic!() };
        turn.control().cancel().unwrap();
        assert_eq!(
            agent.recv().await,
            json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}})
        );
        assert_eq!(
            agent.recv().await,
            json!({"jsonrpc": "2.0", "id": "p1", "result": {"outcome": {"outcome": "cancelled"}}})
        );
        turn.control().answer_permission(&request_id, PermissionOutcome::Cancelled).unwrap();
        agent.answer(prompt_id, json!({"stopReason": "cancelled"})).await;
        let Some(Ok(TurnEvent::End(end))) = turn.next().await else { panic!() };
        assert_eq!(end.stop_reason, "cancelled");
        // Nothing else was sent for the already answered request: the next line is the next call.
        let (set, ()) = tokio::join!(client.set_mode("plan"), async {
            let (id, _) = agent.expect("session/set_mode").await;
            agent.answer(id, json!({})).await;
        });
        set.unwrap();
    }

    #[tokio::test]
    async fn set_config_returns_the_new_list_and_keeps_updates_for_later() {
        let (transport, mut agent) = pipe();
        let mut client = started(&mut agent, transport).await;
        let agent_side = async {
            let (id, params) = agent.expect("session/set_config_option").await;
            assert_eq!(params, json!({"sessionId": "s1", "configId": "effort", "value": "high"}));
            agent.send(json!({"jsonrpc": "2.0", "id": 3, "method": "terminal/create", "params": {}})).await;
            agent.notify("session/update", update("available_commands_update", json!({"availableCommands": []}))).await;
            agent
                .answer(id, json!({"configOptions": [{"id": "effort", "type": "select", "currentValue": "high"}]}))
                .await;
            assert_eq!(agent.recv().await["error"]["code"], METHOD_NOT_FOUND);
        };
        let (options, ()) = tokio::join!(client.set_config("effort", json!("high")), agent_side);
        assert_eq!(options.unwrap()[0].current_value, "high");
        // Sent between calls; the next call's wait picks it up.
        let (set, ()) = tokio::join!(client.set_model("m"), async {
            agent.notify("_service/labels", json!({"labels": {"k": "v"}})).await;
            let (id, _) = agent.expect("session/set_model").await;
            agent.answer(id, json!({})).await;
        });
        set.unwrap();
        let events = client.drain_events();
        assert_eq!(events.len(), 2, "{events:#?}");
        assert!(matches!(&events[0], TurnEvent::Update(SessionUpdate::AvailableCommandsUpdate(_))));
        assert!(matches!(&events[1], TurnEvent::Ext { method, .. } if method == "_service/labels"));
        assert!(client.drain_events().is_empty());
    }

    #[tokio::test]
    async fn the_agent_going_away_fails_the_turn() {
        let (transport, mut agent) = pipe();
        let mut client = started(&mut agent, transport).await;
        let mut turn = client.prompt(vec![ContentBlock::text("hi")]).unwrap();
        agent.expect("session/prompt").await;
        drop(agent);
        assert!(matches!(turn.next().await, Some(Err(RpcError::Closed(_)))));
        assert!(turn.next().await.is_none());
        drop(turn);
        assert!(matches!(client.set_model("m").await, Err(RpcError::Closed(_))));
    }

    #[tokio::test]
    async fn a_refused_session_new_fails_start() {
        let (transport, mut agent) = pipe();
        let agent_side = async {
            let (id, _) = agent.expect("initialize").await;
            agent.answer(id, json!({"protocolVersion": 1})).await;
            let (id, _) = agent.expect("session/new").await;
            agent.send(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "Authentication required"}})).await;
        };
        let env = env(&[]);
        let (start, ()) = tokio::join!(AcpClient::start(transport, &env, SessionSetup::default()), agent_side);
        let Err(RpcError::Remote { code: -32000, .. }) = start else { panic!("{start:?}") };
    }
}
