use std::time::Duration;

use sandboxd::client::{Client, Error};
use sandboxd::proto::SpawnRequest;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use crate::support::{Daemon, TempDir, argv, wait_dead};

/// Sends raw bytes as a request and returns every line of the answer.
async fn raw(daemon: &Daemon, request: &[u8]) -> Vec<serde_json::Value> {
    let mut stream = UnixStream::connect(&daemon.socket).await.unwrap();
    stream.write_all(request).await.unwrap();
    stream.shutdown().await.unwrap();
    let mut lines = BufReader::new(stream).lines();
    let mut out = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        out.push(serde_json::from_str(&line).unwrap());
    }
    out
}

#[tokio::test]
async fn ping_reports_version_pid_and_uptime() {
    let daemon = Daemon::start().await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let pong = daemon.client.ping().await.unwrap();
    assert_eq!(pong.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(pong.pid, std::process::id());
    assert!(pong.uptime_ms >= 20, "{pong:?}");
}

#[tokio::test]
async fn garbage_gets_bad_request_and_the_daemon_keeps_serving() {
    let daemon = Daemon::start().await;
    for request in [&b"not json\n"[..], b"{\"op\":\"format_disk\"}\n", b"{\"op\":\"exec\"}\n", b"\xff\xfe\n", b"[1,2"] {
        let answer = raw(&daemon, request).await;
        assert_eq!(answer.len(), 1, "{request:?}: {answer:?}");
        assert_eq!(answer[0]["type"], "error");
        assert_eq!(answer[0]["code"], "bad_request", "{request:?}");
    }
    // A client that connects and leaves, or half a line, must not hurt either.
    drop(UnixStream::connect(&daemon.socket).await.unwrap());
    let mut half = UnixStream::connect(&daemon.socket).await.unwrap();
    half.write_all(b"{\"op\":").await.unwrap();
    drop(half);
    // The request line without its newline is accepted at end of stream.
    let answer = raw(&daemon, b"{\"op\":\"ping\"}").await;
    assert_eq!(answer[0]["type"], "pong");
    daemon.client.ping().await.unwrap();
}

#[tokio::test]
async fn a_dead_daemon_is_an_io_error() {
    let dir = TempDir::new();
    let err = Client::new(dir.path().join("nothing.sock")).ping().await.unwrap_err();
    assert!(matches!(err, Error::Io(_)), "{err:?}");
}

#[tokio::test]
async fn replaces_a_stale_socket_but_not_a_live_one() {
    let daemon = Daemon::start().await;
    let err = sandboxd::serve(&daemon.socket, std::future::pending()).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    let stale = daemon.dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    let second = sandboxd::serve(&stale, async {});
    second.await.unwrap();
    assert!(!stale.exists(), "socket removed on exit");
}

#[tokio::test]
async fn shutdown_stops_kept_processes_and_returns() {
    let daemon = Daemon::start().await;
    let cwd = daemon.dir.str();
    // Ignores SIGTERM, so only the SIGKILL after the grace ends it.
    let stubborn = SpawnRequest {
        name: "stubborn".into(),
        argv: argv(&["sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"]),
        cwd: Some(cwd.clone()),
        ..Default::default()
    };
    let stubborn_pid = daemon.client.spawn(&stubborn).await.unwrap();
    let polite =
        SpawnRequest { name: "polite".into(), argv: argv(&["sleep", "100"]), cwd: Some(cwd), ..Default::default() };
    let polite_pid = daemon.client.spawn(&polite).await.unwrap();
    // Wait for the trap to be in place before asking.
    let mut attachment = daemon.client.attach("stubborn", 0, 0).await.unwrap();
    attachment.reader.next().await.unwrap();
    let started = std::time::Instant::now();
    daemon.client.shutdown().await.unwrap();
    let Daemon { task, dir: _dir, .. } = daemon;
    task.await.unwrap().unwrap();
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(1900) && took < Duration::from_secs(4), "{took:?}");
    assert!(wait_dead(stubborn_pid).await && wait_dead(polite_pid).await);
}

#[tokio::test]
async fn the_shutdown_future_stops_kept_processes_too() {
    let daemon = Daemon::start().await;
    let req = SpawnRequest {
        name: "a".into(),
        argv: argv(&["sleep", "100"]),
        cwd: Some(daemon.dir.str()),
        ..Default::default()
    };
    let pid = daemon.client.spawn(&req).await.unwrap();
    daemon.stop().await.unwrap();
    assert!(wait_dead(pid).await);
}
