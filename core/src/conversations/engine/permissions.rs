//! The permission requests of a running turn. The policy answers
//! `auto_allow` and `auto_deny` itself (no `permission_request` block); an
//! `ask` request waits for the caller until its timeout, then is denied.
//! Requests still open when the server stops are taken on again at restart
//! (the agent keeps waiting for them), with the deadline they were given.

use std::collections::HashMap;
use std::sync::PoisonError;

use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::time::Instant;

use super::turn::TurnCtx;
use crate::acp::client::AcpControl;
use crate::acp::types::{PermissionOutcome, RequestPermissionRequest, SessionUpdate};
use crate::conversations::policy::{self, Verdict};
use crate::conversations::store;
use crate::events::{NewEvent, StageState};

/// What one turn remembers about its requests.
#[derive(Default)]
pub struct Requests {
    /// Title and kind of each tool card seen, for a request that names only the card's id.
    cards: HashMap<String, (Option<String>, Option<String>)>,
    /// When each `ask` request expires (answered ones are skipped when due).
    deadlines: Vec<(Instant, Value)>,
}

impl Requests {
    /// Notes a tool card's title and kind.
    pub fn saw(&mut self, update: &SessionUpdate) {
        if let SessionUpdate::ToolCall(c) | SessionUpdate::ToolCallUpdate(c) = update {
            let card = self.cards.entry(c.tool_call_id.clone()).or_default();
            card.0 = c.title.clone().or(card.0.take());
            card.1 = c.kind.clone().or(card.1.take());
        }
    }

    /// Resolves when the earliest `ask` request is due; never when none waits.
    pub async fn next_expiry(&self) {
        match self.deadlines.iter().map(|(at, _)| *at).min() {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    }

    /// The title and kind a request is decided by: its own, else its card's.
    fn tool(&self, request: &RequestPermissionRequest) -> (Option<String>, Option<String>) {
        let call = &request.tool_call;
        let own = |k: &str| call.get(k).and_then(Value::as_str).map(str::to_owned);
        let card = call.get("toolCallId").and_then(Value::as_str).and_then(|id| self.cards.get(id));
        let (title, kind) = card.cloned().unwrap_or_default();
        (own("title").or(title), own("kind").or(kind))
    }

    /// Handles a new request: the policy's answer goes out at once, an `ask`
    /// joins the open requests with its deadline. Returns the events to write.
    pub fn arrived(
        &mut self,
        ctx: &mut TurnCtx,
        control: &AcpControl,
        request_id: Value,
        request: RequestPermissionRequest,
    ) -> Vec<NewEvent> {
        let id = super::request_key(&request_id);
        let (title, kind) = self.tool(&request);
        let mut started =
            json!({"request_id": id, "tool_call_id": request.tool_call.get("toolCallId"), "title": title});
        let verdict = ctx.policy.decide(title.as_deref(), kind.as_deref());
        let outcome = match verdict {
            Verdict::AutoDeny => Some(policy::deny(&request.options)),
            // An allow the request offers no option for is left to the caller.
            Verdict::AutoAllow => policy::pick_option(&request.options, true)
                .map(|o| PermissionOutcome::Selected { option_id: o.option_id.clone() }),
            Verdict::Ask => None,
        };
        let Some(outcome) = outcome else {
            let wait = ctx.policy.ask_wait(request.extra.get("_meta"));
            // Shown to the caller, and what a restarted server keeps to.
            started["expires_at"] = json!((OffsetDateTime::now_utc() + wait).format(&Rfc3339).ok());
            let mut events = ctx.transcript.permission(&id, &request);
            events.push(request_started(ctx, &started));
            self.deadlines.push((Instant::now() + wait, request_id.clone()));
            ctx.live.permissions.lock().unwrap_or_else(PoisonError::into_inner).push((request_id, request));
            return events;
        };
        if let Err(e) = control.answer_permission(&request_id, outcome.clone()) {
            tracing::warn!(conversation = %ctx.conversation_id, "policy answer not sent: {e}");
        }
        // Text held back for redaction goes first, so the log keeps the agent's order.
        let held = ctx.transcript.flush();
        held.into_iter().chain([request_started(ctx, &started), done(ctx, &id, "policy", &outcome)]).collect()
    }

    /// Denies the `ask` requests whose time is up and are still open.
    pub fn expire(&mut self, ctx: &TurnCtx, control: &AcpControl) -> Vec<NewEvent> {
        let now = Instant::now();
        let (due, later): (Vec<_>, Vec<_>) = self.deadlines.drain(..).partition(|(at, _)| *at <= now);
        self.deadlines = later;
        let mut events = Vec::new();
        for (_, request_id) in due {
            let taken = {
                let mut open = ctx.live.permissions.lock().unwrap_or_else(PoisonError::into_inner);
                open.iter().position(|(id, _)| *id == request_id).map(|i| open.remove(i).1)
            };
            let Some(request) = taken else { continue };
            let outcome = policy::deny(&request.options);
            if let Err(e) = control.answer_permission(&request_id, outcome.clone()) {
                tracing::warn!(conversation = %ctx.conversation_id, "expiry answer not sent: {e}");
            }
            events.push(done(ctx, &super::request_key(&request_id), "expired", &outcome));
        }
        events
    }
}

/// Takes on the `ask` requests the turn left open when its server stopped: the new connection
/// adopts each (so it can be answered, or cancelled with the turn) and it keeps its deadline.
pub async fn reopen(ctx: &TurnCtx, control: &AcpControl) -> Requests {
    let mut requests = Requests::default();
    let rows = match store::turn_requests(&ctx.state.db, ctx.conversation_id, ctx.turn_id).await {
        Ok(rows) => rows,
        Err(e) => {
            tracing::warn!(conversation = %ctx.conversation_id, "open permission requests not read: {e}");
            return requests;
        }
    };
    let now = OffsetDateTime::now_utc();
    for open in open_asks(&rows) {
        let request_id = rpc_id(&open.key);
        let wait = match open.expires_at {
            Some(at) => (at - now).try_into().unwrap_or_default(),
            None => ctx.policy.ask_wait(None),
        };
        control.adopt_permission(request_id.clone());
        requests.deadlines.push((Instant::now() + wait, request_id.clone()));
        ctx.live.permissions.lock().unwrap_or_else(PoisonError::into_inner).push((request_id, open.request));
    }
    requests
}

/// Checks an answer against the log, for a turn another replica runs: 404
/// unless the request is open on the running turn, 422 `unknown_option`
/// unless the option is offered.
pub async fn check_open(
    state: &crate::state::AppState,
    conversation_id: uuid::Uuid,
    request_id: &str,
    option_id: &str,
) -> crate::error::ApiResult<()> {
    let turn = store::running_turn(&state.db, conversation_id).await?.ok_or_else(super::no_request)?;
    let rows = store::turn_requests(&state.db, conversation_id, turn.id).await?;
    let open = open_asks(&rows).into_iter().find(|o| o.key == request_id).ok_or_else(super::no_request)?;
    check_option(&open.request, option_id)
}

/// 422 `unknown_option` unless the request offers `option_id`.
pub fn check_option(request: &RequestPermissionRequest, option_id: &str) -> crate::error::ApiResult<()> {
    if request.options.iter().any(|o| o.option_id == option_id) {
        return Ok(());
    }
    let offered: Vec<&str> = request.options.iter().map(|o| o.option_id.as_str()).collect();
    Err(crate::error::ApiError::new(
        axum::http::StatusCode::UNPROCESSABLE_ENTITY,
        "unknown_option",
        format!("`{option_id}` is not an option of this request; offered: {}.", offered.join(", ")),
    ))
}

/// An `ask` request that started and has not ended.
#[derive(Debug)]
struct OpenAsk {
    key: String,
    request: RequestPermissionRequest,
    expires_at: Option<OffsetDateTime>,
}

/// The open `ask` requests among a turn's `request` stage and block events (see
/// [`store::turn_requests`]): a `permission_request` block and a `started` event, no `done`.
fn open_asks(rows: &[store::RequestEvent]) -> Vec<OpenAsk> {
    let mut asked: Vec<(String, RequestPermissionRequest)> = Vec::new();
    let mut expiry = HashMap::new();
    let mut ended = Vec::new();
    for store::RequestEvent { stage, state, data, blocks } in rows {
        let blocks: Vec<Value> = blocks.as_deref().and_then(|b| serde_json::from_str(b).ok()).unwrap_or_default();
        for b in blocks.iter().filter(|b| b["type"] == "permission_request") {
            let request = json!({"sessionId": "", "toolCall": b["tool_call"], "options": b["options"]});
            if let (Some(key), Ok(request)) = (b["request_id"].as_str(), serde_json::from_value(request)) {
                asked.push((key.to_owned(), request));
            }
        }
        if stage.as_deref() != Some("request") {
            continue;
        }
        let data: Value = serde_json::from_str(data).unwrap_or_default();
        let Some(key) = data["request_id"].as_str().map(str::to_owned) else { continue };
        match state.as_deref() {
            Some("started") => {
                let at = data["expires_at"].as_str().and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok());
                expiry.insert(key, at);
            }
            _ => ended.push(key),
        }
    }
    asked
        .into_iter()
        .filter(|(key, _)| expiry.contains_key(key) && !ended.contains(key))
        .map(|(key, request)| OpenAsk { expires_at: expiry[&key], key, request })
        .collect()
}

/// The JSON-RPC id behind a request key ([`super::request_key`]): agents number their requests,
/// so a key of digits is taken as a number.
fn rpc_id(key: &str) -> Value {
    key.parse::<i64>().map(Value::from).unwrap_or_else(|_| Value::String(key.to_owned()))
}

fn request_started(ctx: &TurnCtx, data: &Value) -> NewEvent {
    NewEvent::stage("request", StageState::Started, &ctx.transcript.redact_value(data))
}

/// `request` stage `done`: `by: policy` (outcome `selected`, or `cancelled` for a deny with no
/// reject option), or outcome `expired` with the reject option sent (if any).
fn done(ctx: &TurnCtx, id: &str, how: &str, outcome: &PermissionOutcome) -> NewEvent {
    let option_id = match outcome {
        PermissionOutcome::Selected { option_id } => Some(option_id.as_str()),
        PermissionOutcome::Cancelled => None,
    };
    let data = if how == "expired" {
        json!({"request_id": id, "outcome": "expired", "option_id": option_id})
    } else {
        let result = if option_id.is_some() { "selected" } else { "cancelled" };
        json!({"request_id": id, "outcome": result, "option_id": option_id, "by": "policy"})
    };
    NewEvent::stage("request", StageState::Done, &ctx.transcript.redact_value(&data))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(state: &str, data: Value) -> store::RequestEvent {
        store::RequestEvent {
            stage: Some("request".into()),
            state: Some(state.into()),
            data: data.to_string(),
            blocks: None,
        }
    }

    fn block(key: &str) -> store::RequestEvent {
        let b = json!([{"type": "permission_request", "request_id": key, "tool_call": {"toolCallId": "t1"},
            "options": [{"optionId": "allow-once", "name": "Allow", "kind": "allow_once"}]}]);
        store::RequestEvent { blocks: Some(b.to_string()), ..Default::default() }
    }

    #[test]
    fn only_asks_that_started_and_did_not_end_are_open() {
        let rows = [
            block("1"),
            stage("started", json!({"request_id": "1", "expires_at": "2026-11-23T20:00:00Z"})),
            block("2"),
            stage("started", json!({"request_id": "2"})),
            stage("done", json!({"request_id": "2", "outcome": "selected"})),
            // A policy's answer shows no block.
            stage("started", json!({"request_id": "3"})),
            stage("done", json!({"request_id": "3", "by": "policy"})),
        ];
        let open = open_asks(&rows);
        assert_eq!(open.len(), 1, "{open:?}");
        assert_eq!(open[0].key, "1");
        assert_eq!(open[0].request.options[0].option_id, "allow-once");
        assert_eq!(open[0].request.tool_call, json!({"toolCallId": "t1"}));
        assert_eq!(open[0].expires_at, Some(time::macros::datetime!(2026-11-23 20:00 UTC)));
    }

    #[test]
    fn numbered_keys_go_back_to_numbers() {
        assert_eq!(rpc_id("7"), json!(7));
        assert_eq!(rpc_id("p1"), json!("p1"));
    }
}
