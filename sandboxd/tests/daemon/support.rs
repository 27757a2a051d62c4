//! A daemon per test, in the test's runtime, on a socket in a private temporary directory.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use sandboxd::client::Client;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A temporary directory, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new() -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("sandboxd-test-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn str(&self) -> String {
        self.0.to_str().unwrap().to_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Kept and exec children are killed when the test's runtime drops the daemon's tasks.
pub struct Daemon {
    pub client: Client,
    pub socket: PathBuf,
    pub dir: TempDir,
    stop: Option<oneshot::Sender<()>>,
    pub task: JoinHandle<std::io::Result<()>>,
}

impl Daemon {
    pub async fn start() -> Self {
        let dir = TempDir::new();
        let socket = dir.path().join("sandboxd.sock");
        let (stop, stopped) = oneshot::channel::<()>();
        let path = socket.clone();
        let task = tokio::spawn(async move {
            sandboxd::serve(&path, async {
                let _ = stopped.await;
            })
            .await
        });
        let client = Client::new(&socket);
        let deadline = Instant::now() + Duration::from_secs(5);
        while client.ping().await.is_err() {
            assert!(Instant::now() < deadline, "daemon did not come up");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Daemon { client, socket, dir, stop: Some(stop), task }
    }

    /// Stops the daemon as SIGTERM would and waits for `serve` to return.
    pub async fn stop(mut self) -> std::io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.task).await.unwrap()
    }
}

/// True while `pid` exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name, which may itself contain spaces.
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits up to 5 s for `pid` to die.
pub async fn wait_dead(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

pub fn argv(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}
