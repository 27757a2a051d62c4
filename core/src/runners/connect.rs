//! `GET /api/runners/connect`: the WebSocket an `acs runner` keeps open.
//! It authenticates with the runner's token (not an API key), says hello
//! (protocol version, hostname, root), gets its welcome, and from then on
//! carries the runner protocol until either side closes it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade, rejection::WebSocketUpgradeRejection};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::{SinkExt, StreamExt};
use tokio::sync::mpsc;

use super::store::{self, RunnerRow};
use crate::error::ApiError;
use crate::provider::remote::proto::{self, Frame, FromRunner, ToRunner};
use crate::provider::remote::{Link, RemoteProvider};
use crate::state::AppState;

/// A runner that sends nothing (not even a pong) for this long is gone.
const SILENCE: Duration = Duration::from_secs(45);
const PING_EVERY: Duration = Duration::from_secs(15);
/// The hello must come this soon after the upgrade.
const HELLO_WITHIN: Duration = Duration::from_secs(10);
/// Largest message either way (a supervisor line is cut into frames far smaller).
const MAX_MESSAGE: usize = 16 << 20;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/runners/connect", get(connect))
}

async fn connect(
    State(state): State<AppState>,
    headers: HeaderMap,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| t.starts_with(super::TOKEN_PREFIX));
    let Some(token) = token else {
        return ApiError::unauthenticated("runner_token_invalid").into_response();
    };
    let runner = match store::by_token(&state.db, &crate::auth::token::digest(token)).await {
        Ok(Some(r)) => r,
        Ok(None) => return ApiError::unauthenticated("runner_token_invalid").into_response(),
        Err(e) => return ApiError::from(e).into_response(),
    };
    let Some(remote) = super::remote(&state) else {
        return ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "runners_unavailable", "This server runs no sandboxes.")
            .into_response();
    };
    let upgrade = match upgrade {
        Ok(u) => u,
        Err(e) => {
            return ApiError::new(StatusCode::BAD_REQUEST, "websocket_required", format!("{e}")).into_response();
        }
    };
    upgrade
        .max_message_size(MAX_MESSAGE)
        .on_upgrade(move |socket| async move { serve(state, remote, runner, socket).await })
}

async fn serve(state: AppState, remote: Arc<RemoteProvider>, runner: RunnerRow, socket: WebSocket) {
    let (mut sink, mut stream) = socket.split();
    let hello = tokio::time::timeout(HELLO_WITHIN, stream.next()).await;
    let (hostname, root) = match hello {
        Ok(Some(Ok(Message::Text(text)))) => match serde_json::from_str::<FromRunner>(&text) {
            Ok(FromRunner::Hello { version, hostname, root }) if version == proto::VERSION => (hostname, root),
            Ok(FromRunner::Hello { version, .. }) => {
                let reason = format!("runner protocol {version} is not {}: update acs on the runner", proto::VERSION);
                tracing::warn!(runner = %runner.id, "{reason}");
                sink.send(Message::Close(Some(axum::extract::ws::CloseFrame { code: 1002, reason: reason.into() })))
                    .await
                    .ok();
                return;
            }
            _ => return,
        },
        _ => return,
    };
    let (hostname, root) = (clip(&hostname), clip(&root));
    if let Err(e) = store::connected(&state.db, runner.id, &hostname, &root).await {
        tracing::error!(runner = %runner.id, "runner connection not recorded: {e}");
    }
    let welcome =
        ToRunner::Welcome { runner_id: runner.id, name: runner.name.clone(), api_url: remote.api_url().to_owned() };
    let Ok(welcome) = serde_json::to_string(&welcome) else { return };
    if sink.send(Message::Text(welcome.into())).await.is_err() {
        return;
    }
    tracing::info!(runner = %runner.id, %hostname, "runner connected");

    let (out, mut queued) = mpsc::unbounded_channel::<Frame>();
    let link = remote.connected(runner.id, out);
    let writer = async {
        let mut ping = tokio::time::interval(PING_EVERY);
        loop {
            let msg = tokio::select! {
                frame = queued.recv() => match frame {
                    Some(Frame::Text(t)) => Message::Text(t.into()),
                    Some(Frame::Binary(b)) => Message::Binary(b.into()),
                    None => return,
                },
                _ = ping.tick() => Message::Ping(Default::default()),
            };
            if sink.send(msg).await.is_err() {
                return;
            }
        }
    };
    let reader = read(&state, &remote, &link, &mut stream);
    // Calls made while reattaching need the reader and writer running.
    let ready = async {
        remote.ready(&link).await;
        std::future::pending::<()>().await
    };
    tokio::select! {
        () = writer => {}
        () = reader => {}
        () = ready => {}
        () = link.closed() => {}
        () = state.shutdown.cancelled() => {}
    }
    remote.disconnected(&link);
    if let Err(e) = store::seen(&state.db, runner.id, false).await {
        tracing::error!(runner = %runner.id, "runner disconnection not recorded: {e}");
    }
    tracing::info!(runner = %runner.id, "runner disconnected");
}

async fn read(
    state: &AppState,
    remote: &RemoteProvider,
    link: &Arc<Link>,
    stream: &mut futures::stream::SplitStream<WebSocket>,
) {
    let mut last_seen = Instant::now();
    loop {
        let next = tokio::time::timeout(SILENCE, stream.next()).await;
        let msg = match next {
            Ok(Some(Ok(m))) => m,
            Ok(_) => return,
            Err(_) => {
                tracing::warn!(runner = %link.runner, "runner silent for {} s: closing", SILENCE.as_secs());
                return;
            }
        };
        if last_seen.elapsed() > PING_EVERY {
            last_seen = Instant::now();
            if let Err(e) = store::seen(&state.db, link.runner, true).await {
                tracing::warn!(runner = %link.runner, "runner last_seen_at not recorded: {e}");
            }
        }
        let frame = match msg {
            Message::Text(t) => Frame::Text(t.to_string()),
            Message::Binary(b) => Frame::Binary(b.to_vec()),
            Message::Close(_) => return,
            Message::Ping(_) | Message::Pong(_) => continue,
        };
        if let Err(e) = remote.receive(link, frame).await {
            tracing::warn!(runner = %link.runner, "closing a runner that broke the protocol: {e}");
            return;
        }
    }
}

/// What a runner reports of itself is shown back to its owner: kept short.
fn clip(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(255).collect()
}
