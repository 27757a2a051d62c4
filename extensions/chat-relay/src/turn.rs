//! One direct message as a turn: sent to the conversation whose `channel_id`
//! is the sender's key (spec 2.1 and 4.1), waited for, and its final text read
//! back, all through core's API in process.

use std::sync::Arc;
use std::time::Duration;

use acs_platform::console::{Answer, Api};
use acs_platform::journal::Event;
use acs_platform::journal::bus::Bus;
use acs_platform::principal::Principal;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::store::Row;

/// How often a running turn is looked at when no event of its conversation
/// wakes the wait earlier: first soon, then less often, so a long turn stays
/// far below the per-credential request limit (spec 8).
const POLL_FIRST: Duration = Duration::from_millis(250);
const POLL_MAX: Duration = Duration::from_secs(2);
/// The longest a turn is waited for; the message then goes unanswered.
const TURN_DEADLINE: Duration = Duration::from_secs(3600);
/// How long a prompt is retried while another turn of the conversation runs.
const BUSY_DEADLINE: Duration = Duration::from_secs(300);

#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    #[error("{0} answered {1}: {2}")]
    Refused(&'static str, StatusCode, String),
    #[error("the turn did not end within the deadline")]
    Timeout,
    #[error("the server is stopping")]
    Stopped,
    #[error("the turn ended without text")]
    NoText,
    #[error("unexpected answer from {0}")]
    Unexpected(&'static str),
}

/// What the harness needs to run a turn for an identity.
pub struct Runner<'a> {
    pub api: &'a Api,
    /// Appended events, this replica's and (on PostgreSQL) the others': a
    /// turn's own events end the wait at once instead of at the next poll.
    pub events: &'a Bus,
    pub caller: Principal,
    pub identity: &'a Row,
    pub stop: &'a CancellationToken,
}

impl Runner<'_> {
    async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Answer {
        self.api.call(self.caller.clone(), self.caller.ip, method, path, body).await
    }

    /// Runs `prompt` from `sender` (the direct message `event_id`) and returns the agent's final text.
    pub async fn run(&self, sender: &str, event_id: &str, prompt: &str) -> Result<String, TurnError> {
        let id = self.identity;
        // Before the prompt goes, so no event of its turn passes unseen.
        let mut news = self.events.subscribe();
        let mut body = json!({
            "agent_id": id.agent_id, "channel_id": sender, "vault_id": id.vault_id,
            "prompt": prompt, "client_request_id": event_id,
        });
        if let Some(env) = id.environment_id {
            body["environment_id"] = json!(env);
        }
        if let Some(mode) = id.sandbox_mode {
            body["sandbox_mode"] = json!(mode);
        }
        let answer = self.call(Method::POST, "/api/conversations", Some(&body)).await;
        let conversation = match answer.status {
            StatusCode::CREATED | StatusCode::OK => answer
                .data()
                .get("id")
                .and_then(Value::as_str)
                .and_then(|s| s.parse::<Uuid>().ok())
                .ok_or(TurnError::Unexpected("POST /api/conversations"))?,
            status => return Err(TurnError::Refused("POST /api/conversations", status, answer.message())),
        };
        // A channel resume does not deliver the prompt (spec 4.1, create rule 6).
        if answer.status == StatusCode::OK {
            self.prompt(conversation, event_id, prompt).await?;
        }
        let turn = self.wait(conversation, event_id, &mut news).await?;
        self.final_text(conversation, turn).await
    }

    /// Sends the prompt, waiting while another turn of the conversation runs.
    async fn prompt(&self, conversation: Uuid, event_id: &str, prompt: &str) -> Result<(), TurnError> {
        let path = format!("/api/conversations/{conversation}/prompts");
        let body = json!({"prompt": prompt, "client_request_id": event_id});
        let deadline = tokio::time::Instant::now() + BUSY_DEADLINE;
        loop {
            let answer = self.call(Method::POST, &path, Some(&body)).await;
            let busy = answer.status == StatusCode::CONFLICT
                && answer.body.get("error").and_then(Value::as_str) == Some("conversation_busy");
            if answer.ok() {
                return Ok(());
            }
            if !busy || tokio::time::Instant::now() > deadline {
                return Err(TurnError::Refused("POST /prompts", answer.status, answer.message()));
            }
            self.pause(Duration::from_secs(1)).await?;
        }
    }

    /// Waits until the turn carrying `event_id` has ended and its closing
    /// event is logged (its row settles a moment before its last output lands).
    async fn wait(
        &self,
        conversation: Uuid,
        event_id: &str,
        news: &mut broadcast::Receiver<Arc<Event>>,
    ) -> Result<Uuid, TurnError> {
        let deadline = tokio::time::Instant::now() + TURN_DEADLINE;
        let mut turn: Option<Uuid> = None;
        let mut poll = POLL_FIRST;
        while tokio::time::Instant::now() < deadline {
            if turn.is_none() {
                turn = self.turn_of(conversation, event_id).await?;
            }
            if let Some(turn) = turn
                && self.turn_closed(conversation, turn).await?
            {
                return Ok(turn);
            }
            self.news_of(conversation, news, poll).await?;
            poll = (poll * 2).min(POLL_MAX);
        }
        Err(TurnError::Timeout)
    }

    /// Until an event of `conversation` is appended, or `poll` passes.
    async fn news_of(
        &self,
        conversation: Uuid,
        news: &mut broadcast::Receiver<Arc<Event>>,
        poll: Duration,
    ) -> Result<(), TurnError> {
        let of_it = async {
            loop {
                match news.recv().await {
                    Ok(e) if e.conversation_id == Some(conversation) => return,
                    Ok(_) => {}
                    // Fell behind: look now.
                    Err(broadcast::error::RecvError::Lagged(_)) => return,
                    // No more news: the poll alone decides.
                    Err(broadcast::error::RecvError::Closed) => std::future::pending::<()>().await,
                }
            }
        };
        tokio::select! {
            _ = self.stop.cancelled() => Err(TurnError::Stopped),
            _ = tokio::time::sleep(poll) => Ok(()),
            _ = of_it => Ok(()),
        }
    }

    /// The turn that carries our `client_request_id` (spec 4.1: compare before binding work to it);
    /// none yet, too, while the caller is over its request limit.
    async fn turn_of(&self, conversation: Uuid, event_id: &str) -> Result<Option<Uuid>, TurnError> {
        let answer = self.call(Method::GET, &format!("/api/conversations/{conversation}/turns"), None).await;
        if answer.status == StatusCode::TOO_MANY_REQUESTS {
            return Ok(None);
        }
        if !answer.ok() {
            return Err(TurnError::Refused("GET /turns", answer.status, answer.message()));
        }
        let turns = answer.data().as_array().ok_or(TurnError::Unexpected("GET /turns"))?;
        Ok(turns
            .iter()
            .rev()
            .find(|t| t.get("client_request_id").and_then(Value::as_str) == Some(event_id))
            .and_then(|t| t.get("id").and_then(Value::as_str))
            .and_then(|s| s.parse().ok()))
    }

    /// Whether the log holds the turn's closing `turn` stage event (not yet, while over the limit).
    async fn turn_closed(&self, conversation: Uuid, turn: Uuid) -> Result<bool, TurnError> {
        let path = format!("/api/conversations/{conversation}/events?order=desc&limit=200");
        let answer = self.call(Method::GET, &path, None).await;
        if answer.status == StatusCode::TOO_MANY_REQUESTS {
            return Ok(false);
        }
        if !answer.ok() {
            return Err(TurnError::Refused("GET /events", answer.status, answer.message()));
        }
        let turn = turn.to_string();
        Ok(answer.data().as_array().into_iter().flatten().any(|e| {
            e.get("stage").and_then(Value::as_str) == Some("turn")
                && e.get("turn_id").and_then(Value::as_str) == Some(turn.as_str())
                && e.get("state").and_then(Value::as_str).is_some_and(|s| s != "started")
        }))
    }

    /// The agent's final message of the turn: its last text block in the transcript.
    async fn final_text(&self, conversation: Uuid, turn: Uuid) -> Result<String, TurnError> {
        let answer = self.call(Method::GET, &format!("/api/conversations/{conversation}/history"), None).await;
        if !answer.ok() {
            return Err(TurnError::Refused("GET /history", answer.status, answer.message()));
        }
        let turn = turn.to_string();
        let text = answer
            .data()
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| {
                e.get("turn_id").and_then(Value::as_str) == Some(turn.as_str())
                    && e.get("role").and_then(Value::as_str) == Some("agent")
            })
            .flat_map(|e| e.get("blocks").and_then(Value::as_array).into_iter().flatten())
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .next_back()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or(TurnError::NoText)?;
        Ok(text.to_owned())
    }

    async fn pause(&self, d: Duration) -> Result<(), TurnError> {
        tokio::select! {
            _ = self.stop.cancelled() => Err(TurnError::Stopped),
            _ = tokio::time::sleep(d) => Ok(()),
        }
    }
}
