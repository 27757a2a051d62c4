use std::time::Duration;

use sandboxd::client::{AttachEvent, AttachReader, Client, Error};
use sandboxd::proto::{ProcessInfo, SpawnRequest, Stream};

use crate::support::{Daemon, argv, wait_dead};

fn spawn_request(daemon: &Daemon, name: &str, args: &[&str]) -> SpawnRequest {
    SpawnRequest { name: name.into(), argv: argv(args), cwd: Some(daemon.dir.str()), ..Default::default() }
}

async fn info(client: &Client, name: &str) -> ProcessInfo {
    client.list().await.unwrap().into_iter().find(|p| p.name == name).unwrap()
}

/// Polls `list` until `done` holds for the named process (5 s at most).
async fn wait_for(client: &Client, name: &str, done: impl Fn(&ProcessInfo) -> bool) -> ProcessInfo {
    for _ in 0..500 {
        let info = info(client, name).await;
        if done(&info) {
            return info;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{name} never reached the expected state: {:?}", info(client, name).await);
}

/// Reads events until the exit; returns (stdout bytes with their offsets checked contiguous, stderr, exit).
async fn read_to_exit(reader: &mut AttachReader, mut next: [u64; 2]) -> ([Vec<u8>; 2], AttachEvent) {
    let mut got = [Vec::new(), Vec::new()];
    loop {
        match reader.next().await.unwrap().expect("attachment ended before the exit") {
            AttachEvent::Output { stream, offset, data } => {
                let i = stream as usize;
                assert_eq!(offset, next[i], "{stream:?} jumped or repeated");
                next[i] += data.len() as u64;
                got[i].extend_from_slice(&data);
            }
            exit => return (got, exit),
        }
    }
}

/// Reads stdout events until `want` bytes arrived, checking offsets.
async fn read_stdout(reader: &mut AttachReader, mut next: u64, want: usize) -> Vec<u8> {
    let mut got = Vec::new();
    while got.len() < want {
        match tokio::time::timeout(Duration::from_secs(5), reader.next()).await.unwrap().unwrap() {
            Some(AttachEvent::Output { stream: Stream::Stdout, offset, data }) => {
                assert_eq!(offset, next);
                next += data.len() as u64;
                got.extend_from_slice(&data);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    got
}

#[tokio::test]
async fn reattach_resumes_with_exactly_the_missing_bytes() {
    let daemon = Daemon::start().await;
    let client = &daemon.client;
    let pid = client.spawn(&spawn_request(&daemon, "agent-1", &["cat"])).await.unwrap();
    let mut first = client.attach("agent-1", 0, 0).await.unwrap();
    assert_eq!((first.pid, first.stdout_start, first.stderr_start), (pid, 0, 0));
    first.writer.send_stdin(b"one\n").await.unwrap();
    assert_eq!(read_stdout(&mut first.reader, 0, 4).await, b"one\n");
    // Output produced while the client is away is buffered.
    first.writer.send_stdin(b"two\nthree\n").await.unwrap();
    wait_for(client, "agent-1", |p| p.stdout_end == 14).await;
    drop(first);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(info(client, "agent-1").await.running, "detaching stopped the process");

    let mut second = client.attach("agent-1", 4, 0).await.unwrap();
    assert_eq!((second.stdout_start, second.stderr_start), (4, 0));
    assert_eq!(read_stdout(&mut second.reader, 4, 10).await, b"two\nthree\n");
    second.writer.send_stdin(b"four\n").await.unwrap();
    assert_eq!(read_stdout(&mut second.reader, 14, 5).await, b"four\n");
    second.writer.close_stdin().await.unwrap();
    let (got, exit) = read_to_exit(&mut second.reader, [19, 0]).await;
    assert!(got.iter().all(Vec::is_empty), "nothing repeated after the exit: {got:?}");
    assert_eq!(exit, AttachEvent::Exit { code: Some(0), signal: None });
    assert!(second.reader.next().await.unwrap().is_none());
}

#[tokio::test]
async fn a_new_attachment_ends_the_previous_one() {
    let daemon = Daemon::start().await;
    let client = &daemon.client;
    client.spawn(&spawn_request(&daemon, "agent", &["cat"])).await.unwrap();
    let mut old = client.attach("agent", 0, 0).await.unwrap();
    let mut new = client.attach("agent", 0, 0).await.unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(5), old.reader.next()).await.unwrap();
    assert!(ended.unwrap().is_none());
    new.writer.send_stdin(b"still here\n").await.unwrap();
    assert_eq!(read_stdout(&mut new.reader, 0, 11).await, b"still here\n");
}

#[tokio::test]
async fn attach_after_exit_replays_from_the_offsets_then_exits() {
    let daemon = Daemon::start().await;
    let client = &daemon.client;
    let req = spawn_request(&daemon, "done", &["sh", "-c", "printf abc; printf xyz >&2; exit 7"]);
    client.spawn(&req).await.unwrap();
    let info = wait_for(client, "done", |p| !p.running).await;
    assert_eq!((info.code, info.signal, info.stdout_end, info.stderr_end), (Some(7), None, 3, 3));

    let mut all = client.attach("done", 0, 0).await.unwrap();
    let (got, exit) = read_to_exit(&mut all.reader, [0, 0]).await;
    assert_eq!(got, [b"abc".to_vec(), b"xyz".to_vec()]);
    assert_eq!(exit, AttachEvent::Exit { code: Some(7), signal: None });

    // Offsets past the end resume at the end.
    let mut tail = client.attach("done", 2, 99).await.unwrap();
    assert_eq!((tail.stdout_start, tail.stderr_start), (2, 3));
    let (got, _) = read_to_exit(&mut tail.reader, [2, 3]).await;
    assert_eq!((got[0].as_slice(), got[1].len()), (&b"c"[..], 0));
}

#[tokio::test]
async fn only_the_last_8_mib_per_stream_are_kept() {
    let daemon = Daemon::start().await;
    let client = &daemon.client;
    let total = (8 << 20) + 12345;
    let script = format!("head -c {total} /dev/zero; printf end");
    client.spawn(&spawn_request(&daemon, "chatty", &["sh", "-c", &script])).await.unwrap();
    wait_for(client, "chatty", |p| !p.running).await;
    let mut attachment = client.attach("chatty", 0, 0).await.unwrap();
    let dropped = total + 3 - (8 << 20);
    assert_eq!(attachment.stdout_start, dropped);
    let (got, _) = read_to_exit(&mut attachment.reader, [dropped, 0]).await;
    assert_eq!(got[0].len(), 8 << 20);
    assert!(got[0].ends_with(b"\0end"));
}

#[tokio::test]
async fn names_are_unique_while_running_and_reusable_after() {
    let daemon = Daemon::start().await;
    let client = &daemon.client;
    client.spawn(&spawn_request(&daemon, "agent", &["sleep", "100"])).await.unwrap();
    let Err(Error::Remote { code, .. }) = client.spawn(&spawn_request(&daemon, "agent", &["true"])).await else {
        panic!("second spawn of a running name succeeded")
    };
    assert_eq!(code, "exists");
    client.kill("agent", libc::SIGTERM).await.unwrap();
    let info = wait_for(client, "agent", |p| !p.running).await;
    assert_eq!((info.code, info.signal), (None, Some(libc::SIGTERM)));
    // Killing a finished process is a no-op.
    client.kill("agent", libc::SIGKILL).await.unwrap();
    let pid = client.spawn(&spawn_request(&daemon, "agent", &["sh", "-c", "exit 0"])).await.unwrap();
    assert_eq!(wait_for(client, "agent", |p| !p.running).await.pid, pid);
    assert_eq!(client.list().await.unwrap().len(), 1);
}

#[tokio::test]
async fn kill_signals_the_whole_group() {
    let daemon = Daemon::start().await;
    let client = &daemon.client;
    let req = spawn_request(&daemon, "tree", &["sh", "-c", "sleep 100 & echo $!; wait"]);
    client.spawn(&req).await.unwrap();
    let mut attachment = client.attach("tree", 0, 0).await.unwrap();
    let printed = read_stdout(&mut attachment.reader, 0, 1).await;
    let Err(Error::Remote { code, .. }) = client.kill("tree", 999).await else { panic!("bad signal accepted") };
    assert_eq!(code, "bad_request");
    client.kill("tree", libc::SIGTERM).await.unwrap();
    let (rest, exit) = read_to_exit(&mut attachment.reader, [printed.len() as u64, 0]).await;
    assert_eq!(exit, AttachEvent::Exit { code: None, signal: Some(libc::SIGTERM) });
    let printed = [printed, rest[0].clone()].concat();
    let background: u32 = String::from_utf8(printed).unwrap().trim().parse().unwrap();
    assert!(wait_dead(background).await, "the shell's background child {background} survived");
}

#[tokio::test]
async fn unknown_names_are_not_found() {
    let daemon = Daemon::start().await;
    for result in [daemon.client.attach("ghost", 0, 0).await.err(), daemon.client.kill("ghost", 15).await.err()] {
        let Some(Error::Remote { code, .. }) = result else { panic!("ghost found") };
        assert_eq!(code, "not_found");
    }
}

#[tokio::test]
async fn a_renamed_process_keeps_running_and_its_output_under_the_new_name() {
    let daemon = Daemon::start().await;
    let client = &daemon.client;
    client
        .spawn(&spawn_request(&daemon, "warm", &["sh", "-c", "echo ready; read line; echo got $line"]))
        .await
        .unwrap();
    let mut first = client.attach("warm", 0, 0).await.unwrap();
    assert_eq!(read_stdout(&mut first.reader, 0, 6).await, b"ready\n");
    client.spawn(&spawn_request(&daemon, "busy", &["sleep", "100"])).await.unwrap();
    let Err(Error::Remote { code, .. }) = client.rename("warm", "busy").await else {
        panic!("renamed over a running one")
    };
    assert_eq!(code, "exists");
    let Err(Error::Remote { code, .. }) = client.rename("ghost", "conv").await else { panic!("ghost renamed") };
    assert_eq!(code, "not_found");

    client.rename("warm", "conv").await.unwrap();
    let names: Vec<String> = client.list().await.unwrap().into_iter().map(|p| p.name).collect();
    assert_eq!(names, ["busy", "conv"]);
    let Some(Error::Remote { code, .. }) = client.attach("warm", 0, 0).await.err() else { panic!("old name kept") };
    assert_eq!(code, "not_found");
    // The same process, its output offsets continuing, its stdin open.
    let mut second = client.attach("conv", 6, 0).await.unwrap();
    second.writer.send_stdin(b"hello\n").await.unwrap();
    let (out, exit) = read_to_exit(&mut second.reader, [6, 0]).await;
    assert_eq!(out[0], b"got hello\n");
    assert_eq!(exit, AttachEvent::Exit { code: Some(0), signal: None });
    client.kill("busy", libc::SIGKILL).await.unwrap();
}
