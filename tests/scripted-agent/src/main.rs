//! A deterministic ACP agent for tests: JSON-RPC 2.0 lines on stdio, each turn scripted by the
//! prompt text. README.md lists the directives and environment variables.

mod agent;
mod config;
mod directive;
mod profile;
mod rpc;

use std::fs::{File, OpenOptions};
use std::io::{BufRead, Write};
use std::process::exit;

use agent::Agent;
use profile::Profile;

fn main() {
    let name = std::env::var("SCRIPTED_AGENT_PROFILE").unwrap_or_else(|_| "claude".to_owned());
    let Some(profile) = Profile::from_name(&name) else {
        eprintln!("scripted-agent: unknown SCRIPTED_AGENT_PROFILE `{name}` (claude, codex or gemini)");
        exit(2);
    };
    let mut log = open_log();
    let agent = Agent::new(profile);
    let mut stdin = std::io::stdin().lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        match stdin.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if let Some(log) = &mut log {
            // Verbatim, so a test sees exactly what the client sent.
            let _ = log.write_all(&line);
        }
        let message = line.strip_suffix(b"\n").unwrap_or(&line);
        agent.handle_line(message);
    }
    // stdin closed: the client is gone, so running turns are abandoned like a real agent's.
}

/// The transcript file of `SCRIPTED_AGENT_LOG`; a path that cannot be opened is fatal so that a
/// test never silently runs without its log.
fn open_log() -> Option<File> {
    let path = std::env::var_os("SCRIPTED_AGENT_LOG")?;
    match OpenOptions::new().create(true).append(true).open(&path) {
        Ok(file) => Some(file),
        Err(e) => {
            eprintln!("scripted-agent: cannot open SCRIPTED_AGENT_LOG {}: {e}", path.to_string_lossy());
            exit(2);
        }
    }
}
