//! `acs run AGENT "prompt"`: a new conversation with the agent, its turn
//! streamed to the terminal as it happens (the reply on stdout; machine
//! stages, tool calls and thoughts on stderr), permission requests answered
//! at the terminal, and the turn's outcome as the exit status.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use serde_json::{Value, json};

use super::{Target, ask, http, refusal, resolve, send};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The agent (its name or id) for a new conversation, or the id of a conversation to go on with.
    pub agent: String,
    /// What to ask it.
    pub prompt: String,
    /// Answer every permission request with its first "allow" option instead of asking.
    #[arg(long)]
    pub yes: bool,
}

/// How the turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Done,
    Interrupted,
    Failed,
}

impl Outcome {
    /// The exit status: 0 done, 1 failed, 130 interrupted (as a shell reports Ctrl-C).
    pub fn code(self) -> u8 {
        match self {
            Outcome::Done => 0,
            Outcome::Failed => 1,
            Outcome::Interrupted => 130,
        }
    }
}

/// One Server-Sent Event as read off the wire.
#[derive(Debug, Default, PartialEq)]
pub struct Frame {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
}

/// Splits SSE text into frames as it arrives: complete frames out, the rest kept.
#[derive(Default)]
pub struct SseReader {
    buf: String,
}

impl SseReader {
    pub fn push(&mut self, chunk: &str) -> Vec<Frame> {
        self.buf.push_str(&chunk.replace("\r\n", "\n"));
        let mut frames = Vec::new();
        while let Some(end) = self.buf.find("\n\n") {
            let block: String = self.buf.drain(..end + 2).collect();
            let mut f = Frame::default();
            let mut data = Vec::new();
            for line in block.lines() {
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "id" => f.id = Some(value.to_owned()),
                    "event" => f.event = Some(value.to_owned()),
                    "data" => data.push(value),
                    _ => {} // comments (keep-alives) and `retry`
                }
            }
            if !data.is_empty() {
                f.data = data.join("\n");
                frames.push(f);
            }
        }
        frames
    }
}

/// `850 ms`, `1.2 s`, `3 min 5 s`.
fn human_ms(ms: i64) -> String {
    match ms {
        ..1000 => format!("{ms} ms"),
        1000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{} min {} s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

/// The agent `wanted` names: an exact id, else the one agent with that name.
fn pick_agent(agents: &[Value], wanted: &str) -> anyhow::Result<String> {
    if let Some(a) = agents.iter().find(|a| a["id"] == wanted) {
        return Ok(a["id"].as_str().unwrap_or_default().to_owned());
    }
    let named: Vec<&Value> = agents.iter().filter(|a| a["name"] == wanted).collect();
    match named.as_slice() {
        [one] => Ok(one["id"].as_str().unwrap_or_default().to_owned()),
        [] => bail!("no agent is named `{wanted}` (list them with GET /api/agents)"),
        _ => bail!("{} agents are named `{wanted}`; give its id instead", named.len()),
    }
}

pub async fn run(target: &Target, args: RunArgs) -> anyhow::Result<Outcome> {
    let (url, key, _) = resolve(target)?;
    let client = http(&url)?;
    let request_id = format!("acs-run-{}", uuid::Uuid::new_v4().simple());
    let (conv, after) = match continued(&client, &url, &key, &args.agent).await? {
        Some((conv, after)) => {
            prompt_again(&client, (&url, &key), &conv, &args.prompt, &request_id).await?;
            (conv, after)
        }
        None => match start(&client, (&url, &key), target, &args, &request_id).await? {
            Some(conv) => (conv, None),
            None => return Ok(Outcome::Interrupted),
        },
    };
    if !target.json {
        eprintln!("conversation {conv}");
    }
    let mut follow = Follow {
        target,
        client: &client,
        url: &url,
        key: &key,
        conv: &conv,
        yes: args.yes,
        request_id: &request_id,
        turn: None,
    };
    tokio::select! {
        outcome = follow.stream(after) => outcome,
        _ = tokio::signal::ctrl_c() => {
            // The turn should not run on unattended: interrupt it, then leave.
            let (status, body) =
                send(client.post(format!("{url}/api/conversations/{conv}/interrupt")).bearer_auth(&key)).await?;
            if !status.is_success() {
                eprintln!("interrupting the turn: {}", refusal(status, &body));
            }
            Ok(Outcome::Interrupted)
        }
    }
}

/// A new conversation with the agent `args.agent` names, its prompt sent;
/// `None` when Ctrl-C left the queue before it started.
async fn start(
    client: &reqwest::Client,
    (url, key): (&str, &str),
    target: &Target,
    args: &RunArgs,
    request_id: &str,
) -> anyhow::Result<Option<String>> {
    let (status, agents) = send(client.get(format!("{url}/api/agents")).bearer_auth(key)).await?;
    if !status.is_success() {
        bail!("listing agents: {}", refusal(status, &agents));
    }
    let agent_id = pick_agent(agents["data"].as_array().map(Vec::as_slice).unwrap_or_default(), &args.agent)?;
    let (status, created) = send(
        client
            .post(format!("{url}/api/conversations"))
            .bearer_auth(key)
            .json(&json!({"agent_id": agent_id, "prompt": args.prompt, "client_request_id": request_id,
                "queue": true})),
    )
    .await?;
    if !status.is_success() {
        bail!("starting the conversation: {}", refusal(status, &created));
    }
    if status != reqwest::StatusCode::ACCEPTED {
        return created["data"]["id"].as_str().context("the answer has no conversation id").map(|c| Some(c.to_owned()));
    }
    let waiting = created["data"]["id"].as_str().context("the answer has no queue id")?.to_owned();
    tokio::select! {
        conv = wait_in_queue(client, url, key, &waiting, target.json) => conv.map(Some),
        _ = tokio::signal::ctrl_c() => {
            let (status, body) = send(client.delete(format!("{url}/api/sandbox-queue/{waiting}")).bearer_auth(key)).await?;
            if !status.is_success() {
                eprintln!("leaving the queue: {}", refusal(status, &body));
            }
            Ok(None)
        }
    }
}

/// `wanted` as a conversation of the account to go on with (an agent's
/// name or id is not one), and the newest event of its log: the stream of
/// the new turn starts after it (`Last-Event-ID`).
async fn continued(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    wanted: &str,
) -> anyhow::Result<Option<(String, Option<String>)>> {
    if uuid::Uuid::parse_str(wanted).is_err() {
        return Ok(None);
    }
    let events = format!("{url}/api/conversations/{wanted}/events?order=desc&limit=1");
    let (status, page) = send(client.get(events).bearer_auth(key)).await?;
    if status == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !status.is_success() {
        bail!("reading the conversation: {}", refusal(status, &page));
    }
    let after = page["page"]["newest_cursor"].as_i64().map(|c| c.to_string());
    Ok(Some((wanted.to_owned(), after)))
}

/// Sends the prompt to an existing conversation.
async fn prompt_again(
    client: &reqwest::Client,
    (url, key): (&str, &str),
    conv: &str,
    prompt: &str,
    request_id: &str,
) -> anyhow::Result<()> {
    let body = json!({"prompt": prompt, "client_request_id": request_id});
    let (status, answer) =
        send(client.post(format!("{url}/api/conversations/{conv}/prompts")).bearer_auth(key).json(&body)).await?;
    if !status.is_success() {
        bail!("sending the prompt: {}", refusal(status, &answer));
    }
    Ok(())
}

/// Waits while every machine is taken (`queue: true` answered 202), saying
/// the place in the line as it changes; the conversation once one starts.
async fn wait_in_queue(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    waiting: &str,
    quiet: bool,
) -> anyhow::Result<String> {
    let mut shown = None;
    loop {
        let (status, body) = send(client.get(format!("{url}/api/sandbox-queue/{waiting}")).bearer_auth(key)).await?;
        if !status.is_success() {
            bail!("reading the queue: {}", refusal(status, &body));
        }
        let r = &body["data"];
        match r["status"].as_str() {
            Some("started") => {
                return r["conversation_id"].as_str().map(str::to_owned).context("started without a conversation");
            }
            Some("queued") => {
                let place = r["position"].as_i64();
                if !quiet && place != shown {
                    eprintln!("every machine is busy: waiting, place {} in the queue", place.unwrap_or(0));
                    shown = place;
                }
            }
            other => bail!(
                "the queued start ended {}: {}",
                other.unwrap_or("?"),
                r["error"].as_str().unwrap_or("no reason given")
            ),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

struct Follow<'a> {
    target: &'a Target,
    client: &'a reqwest::Client,
    url: &'a str,
    key: &'a str,
    conv: &'a str,
    yes: bool,
    /// The prompt's `client_request_id`: the `turn` `started` carrying it is ours.
    request_id: &'a str,
    /// Our turn's id, from its `turn` stage `started`.
    turn: Option<String>,
}

impl Follow<'_> {
    /// Follows the conversation's stream to the end of the turn, reconnecting
    /// with `Last-Event-ID` when the connection drops.
    async fn stream(&mut self, after: Option<String>) -> anyhow::Result<Outcome> {
        let mut last_id: Option<String> = after;
        let mut failures = 0;
        loop {
            let mut req = self
                .client
                .get(format!("{}/api/conversations/{}/stream?blocks=true", self.url, self.conv))
                .bearer_auth(self.key)
                .header("accept", "text/event-stream")
                .timeout(Duration::from_secs(24 * 3600));
            if let Some(id) = &last_id {
                req = req.header("last-event-id", id.as_str());
            }
            let mut res = match req.send().await {
                Ok(r) if r.status().is_success() => r,
                Ok(r) => bail!("following the conversation: {}", r.status()),
                Err(e) if failures < 5 => {
                    failures += 1;
                    eprintln!("(connection lost: {e}; reconnecting)");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let mut reader = SseReader::default();
            loop {
                let chunk = match res.chunk().await {
                    Ok(Some(c)) => c,
                    Ok(None) | Err(_) => break,
                };
                failures = 0;
                for frame in reader.push(&String::from_utf8_lossy(&chunk)) {
                    if frame.id.is_some() {
                        last_id = frame.id.clone();
                    }
                    let Ok(event) = serde_json::from_str::<Value>(&frame.data) else { continue };
                    if let Some(outcome) = self.show(&event).await? {
                        return Ok(outcome);
                    }
                }
            }
            failures += 1;
            if failures > 5 {
                bail!("the stream kept closing");
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Prints one event; `Some` when it ends our turn.
    async fn show(&mut self, e: &Value) -> anyhow::Result<Option<Outcome>> {
        if self.target.json {
            println!("{e}");
        }
        let stage = e["stage"].as_str().unwrap_or_default();
        let state = e["state"].as_str().unwrap_or_default();
        if e["kind"] == "stage" {
            if stage == "turn" {
                let turn = e["turn_id"].as_str().map(str::to_owned);
                let detail: Value = serde_json::from_str(e["data"].as_str().unwrap_or("{}")).unwrap_or(Value::Null);
                match state {
                    "started" if self.turn.is_none() && detail["client_request_id"] == self.request_id => {
                        self.turn = turn;
                    }
                    "done" | "failed" | "interrupted" if turn.is_some() && turn == self.turn => {
                        if !self.target.json {
                            println!();
                            if state != "done" {
                                let why = detail["error"].as_str().unwrap_or(state);
                                eprintln!("turn {state}: {why}");
                            }
                        }
                        return Ok(Some(match state {
                            "done" => Outcome::Done,
                            "interrupted" => Outcome::Interrupted,
                            _ => Outcome::Failed,
                        }));
                    }
                    _ => {}
                }
            } else if !self.target.json && !stage.is_empty() {
                // Long waits show their progress: each step as it starts, and how long it took.
                match (state, e["duration_ms"].as_i64()) {
                    ("done", Some(ms)) => eprintln!("[{stage} done in {}]", human_ms(ms)),
                    ("done", None) => {}
                    _ => eprintln!("[{stage} {state}]"),
                }
            }
            return Ok(None);
        }
        for block in e["blocks"].as_array().into_iter().flatten() {
            match block["type"].as_str().unwrap_or_default() {
                "text" if !self.target.json => {
                    print!("{}", block["text"].as_str().unwrap_or_default());
                    std::io::stdout().flush()?;
                }
                "tool_call" if !self.target.json => {
                    eprintln!("[tool] {}", block["title"].as_str().unwrap_or("(untitled)"));
                }
                "permission_request" => self.answer(block).await?,
                _ => {}
            }
        }
        Ok(None)
    }

    /// Asks at the terminal (or takes the first allowing option with `--yes`)
    /// and answers the request.
    async fn answer(&self, block: &Value) -> anyhow::Result<()> {
        let request_id = block["request_id"].as_str().unwrap_or_default();
        let options: Vec<&Value> = block["options"].as_array().map(|o| o.iter().collect()).unwrap_or_default();
        let title = block["tool_call"]["title"].as_str().unwrap_or("a tool");
        let chosen = if self.yes {
            options.iter().find(|o| o["kind"].as_str().is_some_and(|k| k.starts_with("allow"))).copied()
        } else if std::io::stdin().is_terminal() {
            eprintln!("\nThe agent asks to use {title}:");
            for (i, o) in options.iter().enumerate() {
                eprintln!("  {}) {}", i + 1, o["name"].as_str().unwrap_or_default());
            }
            loop {
                let line = ask("Choose a number: ", false)?;
                if let Some(o) = line.trim().parse::<usize>().ok().and_then(|n| options.get(n.wrapping_sub(1))) {
                    break Some(*o);
                }
            }
        } else {
            eprintln!(
                "The agent asks to use {title}; answer with POST /api/conversations/{}/permissions/{request_id} (or run with --yes).",
                self.conv
            );
            None
        };
        let Some(option) = chosen else { return Ok(()) };
        let option_id = option["optionId"].as_str().unwrap_or_default();
        let (status, body) = send(
            self.client
                .post(format!("{}/api/conversations/{}/permissions/{request_id}", self.url, self.conv))
                .bearer_auth(self.key)
                .json(&json!({"option_id": option_id})),
        )
        .await?;
        if !status.is_success() {
            eprintln!("answering the request: {}", refusal(status, &body));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_frames_split_across_chunks() {
        let mut r = SseReader::default();
        assert!(r.push(": keep-alive\n\nid: 7\nevent: mes").is_empty());
        let frames = r.push("sage\ndata: {\"a\":1}\n\nid: 8\r\ndata: x\r\ndata: y\r\n\r\n");
        assert_eq!(frames.len(), 2);
        assert_eq!(frames[0], Frame { id: Some("7".into()), event: Some("message".into()), data: "{\"a\":1}".into() });
        assert_eq!(frames[1].data, "x\ny");
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(human_ms(850), "850 ms");
        assert_eq!(human_ms(1234), "1.2 s");
        assert_eq!(human_ms(185_000), "3 min 5 s");
    }

    #[test]
    fn agents_are_picked_by_id_or_unique_name() {
        let agents = vec![
            json!({"id": "1", "name": "fixer"}),
            json!({"id": "2", "name": "twin"}),
            json!({"id": "3", "name": "twin"}),
        ];
        assert_eq!(pick_agent(&agents, "fixer").unwrap(), "1");
        assert_eq!(pick_agent(&agents, "3").unwrap(), "3");
        assert!(pick_agent(&agents, "twin").unwrap_err().to_string().contains("2 agents"));
        assert!(pick_agent(&agents, "none").is_err());
    }
}
