//! sandboxd: the supervisor inside every sandbox. The acs server talks to it over a unix socket (JSON lines, see
//! [`proto`]) to run commands, keep agent processes whose output survives a server restart, and read files.

mod attach;
mod buffer;
mod cli;
pub mod client;
mod command;
mod exec;
mod files;
mod kept;
mod lines;
pub mod proto;
mod server;

use std::io::Write;
use std::path::Path;
use std::time::Duration;

pub use server::serve;

/// Entry point of the `sandboxd` binary.
pub fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match cli::parse(&args) {
        Ok(cli::Mode::Serve { socket }) => run_daemon(&socket),
        Ok(cli::Mode::ReadFile { path, max_bytes }) => read_file_once(&path, max_bytes),
        Err(usage) => {
            eprintln!("{usage}");
            2
        }
    };
    std::process::exit(code);
}

/// A current-thread runtime: sandboxd idles almost always, and memory per sandbox matters more than throughput.
fn run_daemon(socket: &Path) -> i32 {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("sandboxd: cannot start runtime: {e}");
            return 1;
        }
    };
    let result = runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        serve(socket, async {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        })
        .await
    });
    // Dropping the runtime drops the exec tasks, whose guards kill their process groups.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("sandboxd: {e}");
            1
        }
    }
}

/// `sandboxd read-file`: one read without a daemon, answered as the daemon would on stdout.
fn read_file_once(path: &str, max_bytes: u64) -> i32 {
    let (reply, code) = match files::read_file(path, max_bytes) {
        Ok(file) => (proto::Reply::File(file), 0),
        Err(error) => (proto::Reply::Error(error), 1),
    };
    let mut line = serde_json::to_vec(&reply).unwrap_or_default();
    line.push(b'\n');
    let mut stdout = std::io::stdout().lock();
    if stdout.write_all(&line).and_then(|()| stdout.flush()).is_err() {
        return 1;
    }
    code
}
