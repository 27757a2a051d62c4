use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use sandboxd::client::Error;
use sandboxd::proto::{ExecRequest, Stream};

use crate::support::{Daemon, alive, argv, wait_dead};

fn request(daemon: &Daemon, args: &[&str]) -> ExecRequest {
    ExecRequest { argv: argv(args), cwd: Some(daemon.dir.str()), ..Default::default() }
}

#[tokio::test]
async fn collects_both_streams_and_the_exit_code() {
    let daemon = Daemon::start().await;
    let req = request(&daemon, &["sh", "-c", "echo out; echo err >&2; echo more; exit 3"]);
    let out = daemon.client.exec(&req).await.unwrap();
    assert_eq!(out.stdout, b"out\nmore\n");
    assert_eq!(out.stderr, b"err\n");
    assert_eq!((out.exit.code, out.exit.signal, out.exit.timed_out, out.exit.truncated), (Some(3), None, false, false));
}

#[tokio::test]
async fn env_is_added_to_the_daemons_own_and_cwd_is_honoured() {
    let daemon = Daemon::start().await;
    let mut req = request(
        &daemon,
        &["sh", "-c", "echo \"$ACS_TEST_VAR:$(pwd)\"; command -v sh >/dev/null && echo path-inherited"],
    );
    req.env = BTreeMap::from([("ACS_TEST_VAR".to_owned(), "value with spaces".to_owned())]);
    let out = daemon.client.exec(&req).await.unwrap();
    let expected = format!("value with spaces:{}\npath-inherited\n", daemon.dir.str());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
}

#[tokio::test]
async fn stdin_is_fed_while_output_is_read() {
    let daemon = Daemon::start().await;
    // Larger than a pipe buffer both ways: writing stdin and reading stdout must overlap.
    let input: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    let mut req = request(&daemon, &["cat"]);
    req.stdin = Some(input.clone());
    let out = daemon.client.exec(&req).await.unwrap();
    assert_eq!(out.exit.code, Some(0));
    assert!(out.stdout == input, "stdout differs from stdin ({} bytes)", out.stdout.len());
    // Without stdin the child reads end of file at once.
    let out = daemon.client.exec(&request(&daemon, &["cat"])).await.unwrap();
    assert_eq!((out.stdout.len(), out.exit.code), (0, Some(0)));
}

#[tokio::test]
async fn output_streams_as_it_arrives() {
    let daemon = Daemon::start().await;
    let req = request(&daemon, &["sh", "-c", "echo first; sleep 0.3; echo second"]);
    let started = Instant::now();
    let mut arrivals = Vec::new();
    daemon
        .client
        .exec_streaming(&req, |stream, data| arrivals.push((stream, data.to_vec(), started.elapsed())))
        .await
        .unwrap();
    assert_eq!(arrivals.len(), 2, "{arrivals:?}");
    assert_eq!((arrivals[0].0, arrivals[0].1.as_slice()), (Stream::Stdout, &b"first\n"[..]));
    assert!(arrivals[0].2 < Duration::from_millis(250), "first chunk held back: {arrivals:?}");
}

#[tokio::test]
async fn timeout_kills_the_whole_process_tree() {
    let daemon = Daemon::start().await;
    let mut req = request(&daemon, &["sh", "-c", "sleep 100 & echo $!; sleep 100; wait"]);
    req.timeout_ms = Some(300);
    let started = Instant::now();
    let out = daemon.client.exec(&req).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert!(out.exit.timed_out);
    assert_eq!((out.exit.code, out.exit.signal), (None, Some(libc::SIGKILL)));
    let grandchild: u32 = String::from_utf8(out.stdout).unwrap().trim().parse().unwrap();
    assert!(wait_dead(grandchild).await, "background sleep {grandchild} survived");
}

#[tokio::test]
async fn output_beyond_max_output_is_dropped_and_flagged() {
    let daemon = Daemon::start().await;
    let mut req = request(&daemon, &["sh", "-c", "head -c 300000 /dev/zero; echo tail >&2"]);
    req.max_output = Some(1000);
    let out = daemon.client.exec(&req).await.unwrap();
    assert_eq!((out.stdout.len(), out.stderr.as_slice()), (1000, &b"tail\n"[..]));
    assert!(out.exit.truncated && !out.exit.timed_out);
    assert_eq!(out.exit.code, Some(0));
    req.max_output = Some(300000);
    let out = daemon.client.exec(&req).await.unwrap();
    assert_eq!(out.stdout.len(), 300000);
    assert!(!out.exit.truncated);
}

#[tokio::test]
async fn a_client_that_leaves_takes_the_command_with_it() {
    let daemon = Daemon::start().await;
    let req = request(&daemon, &["sh", "-c", "sleep 100 & echo $!; sleep 100"]);
    let mut printed = Vec::new();
    let run = daemon.client.exec_streaming(&req, |_, data| printed.extend_from_slice(data));
    assert!(tokio::time::timeout(Duration::from_millis(300), run).await.is_err());
    let grandchild: u32 = String::from_utf8(printed).unwrap().trim().parse().unwrap();
    // The daemon shares this thread and has not run since the client hung up.
    assert!(alive(grandchild));
    assert!(wait_dead(grandchild).await, "background sleep {grandchild} survived the client");
    daemon.client.ping().await.unwrap();
}

#[tokio::test]
async fn start_failures_are_reported() {
    let daemon = Daemon::start().await;
    let mut req = request(&daemon, &["true"]);
    req.cwd = Some("/nonexistent/dir".into());
    let Err(Error::Remote { code, message }) = daemon.client.exec(&req).await else { panic!("missing cwd ran") };
    assert_eq!(code, "spawn_failed");
    assert!(message.contains("/nonexistent/dir"), "{message}");
    let Err(Error::Remote { code, .. }) = daemon.client.exec(&request(&daemon, &["/no/such/program"])).await else {
        panic!("missing program ran")
    };
    assert_eq!(code, "spawn_failed");
    let Err(Error::Remote { code, .. }) = daemon.client.exec(&request(&daemon, &[])).await else {
        panic!("empty argv ran")
    };
    assert_eq!(code, "bad_request");
}
