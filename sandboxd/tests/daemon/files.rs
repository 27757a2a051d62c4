use sandboxd::client::Error;

use crate::support::Daemon;

async fn error_code(daemon: &Daemon, path: &str) -> String {
    match daemon.client.read_file(path, 100).await {
        Err(Error::Remote { code, .. }) => code,
        other => panic!("{path}: {other:?}"),
    }
}

#[tokio::test]
async fn reads_whole_and_truncated_binary_files() {
    let daemon = Daemon::start().await;
    let path = daemon.dir.path().join("bytes.bin");
    let bytes: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    std::fs::write(&path, &bytes).unwrap();
    let path = path.to_str().unwrap();

    let whole = daemon.client.read_file(path, 4096).await.unwrap();
    assert_eq!((whole.path.as_str(), whole.size, whole.data.as_slice()), (path, 1000, bytes.as_slice()));
    let head = daemon.client.read_file(path, 10).await.unwrap();
    assert_eq!((head.size, head.data.as_slice()), (1000, &bytes[..10]));
    let none = daemon.client.read_file(path, 0).await.unwrap();
    assert_eq!((none.size, none.data.len()), (1000, 0));
}

#[tokio::test]
async fn symlinks_resolve_in_the_daemons_view() {
    let daemon = Daemon::start().await;
    let target = daemon.dir.path().join("target.txt");
    std::fs::write(&target, "hello").unwrap();
    let link = daemon.dir.path().join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let read = daemon.client.read_file(link.to_str().unwrap(), 100).await.unwrap();
    assert_eq!((read.size, read.data.as_slice()), (5, &b"hello"[..]));
}

#[tokio::test]
async fn errors_have_their_codes() {
    let daemon = Daemon::start().await;
    assert_eq!(error_code(&daemon, "relative/path").await, "bad_request");
    assert_eq!(error_code(&daemon, &daemon.dir.str()).await, "is_directory");
    assert_eq!(error_code(&daemon, &format!("{}/missing", daemon.dir.str())).await, "not_found");
    let dangling = daemon.dir.path().join("dangling");
    std::os::unix::fs::symlink("/nonexistent/target", &dangling).unwrap();
    assert_eq!(error_code(&daemon, dangling.to_str().unwrap()).await, "not_found");
}
