//! File and git reads of a sandbox (spec 2.3). A live machine answers
//! through its supervisor; a parked one from the disk it parked with, in a
//! throwaway read-only machine without network (`snapshot_at` set). Every
//! answer is redacted: environment and vault values read `[REDACTED]`.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use base64::Engine;
use time::OffsetDateTime;

use super::git::{self, DiffQuery, SandboxChange};
use super::model::{DirectoryEntry, SandboxDiff, SandboxDirectory, SandboxFile, SandboxRow, SandboxState};
use super::service::{self, Sandboxes};
use crate::error::{ApiError, ApiResult};
use crate::provider::ExecOutput;
use crate::refusal::{Refusal, Unavailable};
use crate::state::AppState;
use crate::time_fmt::from_micros;

/// Largest `max_bytes` a read may ask for.
pub const MAX_READ_BYTES: u64 = 16 << 20;

/// Where a read is answered from.
enum Source {
    Live,
    /// Parked: the disk as it was at park.
    Snapshot(Option<OffsetDateTime>),
}

fn source(row: &SandboxRow) -> ApiResult<Source> {
    match row.status {
        SandboxState::Ready => Ok(Source::Live),
        SandboxState::Suspended => Ok(Source::Snapshot(row.checkpoint_at.map(from_micros))),
        other => Err(ApiError::new(
            StatusCode::CONFLICT,
            "sandbox_not_ready",
            format!("The sandbox is {}; reads need a ready or parked machine.", other.as_str()),
        )),
    }
}

fn snapshot_at(src: &Source) -> Option<OffsetDateTime> {
    match src {
        Source::Live => None,
        Source::Snapshot(at) => Some(at.unwrap_or_else(OffsetDateTime::now_utc)),
    }
}

fn unavailable(e: impl std::fmt::Display) -> ApiError {
    Refusal::Unavailable(Unavailable::Machine(e.to_string())).into()
}

async fn run(svc: &Sandboxes, row: &SandboxRow, src: &Source, argv: Vec<String>) -> ApiResult<ExecOutput> {
    match src {
        Source::Live => {
            let req = sandboxd::proto::ExecRequest {
                argv,
                cwd: Some("/".into()),
                env: BTreeMap::new(),
                stdin: None,
                timeout_ms: Some(30_000),
                max_output: Some(MAX_READ_BYTES * 2),
            };
            svc.provider(row).supervisor(row.id).exec(&req).await.map_err(unavailable)
        }
        Source::Snapshot(_) => {
            let env = BTreeMap::from([
                ("HOME".to_owned(), "/home/agent".to_owned()),
                ("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned()),
                ("LANG".to_owned(), "C.UTF-8".to_owned()),
            ]);
            svc.provider(row).exec_offline(row.id, &argv, &env).await.map_err(unavailable)
        }
    }
}

fn check_path(path: &str) -> ApiResult<()> {
    if !path.starts_with('/') || path.contains('\0') {
        return Err(ApiError::invalid("path", "must be an absolute path"));
    }
    Ok(())
}

fn check_max(max_bytes: Option<u64>, default: u64) -> ApiResult<u64> {
    let max = max_bytes.unwrap_or(default);
    if max == 0 || max > MAX_READ_BYTES {
        return Err(ApiError::invalid("max_bytes", "must be between 1 and 16777216"));
    }
    Ok(max)
}

/// The raw answer of a file read: whole size and the first bytes.
struct Raw {
    size: u64,
    bytes: Vec<u8>,
}

fn file_error(code: &str, message: &str, path: &str) -> ApiError {
    match code {
        "not_found" => ApiError::new(StatusCode::NOT_FOUND, "not_found", format!("No file at {path}.")),
        "is_directory" => ApiError::invalid("path", "is a directory"),
        "permission_denied" => ApiError::invalid("path", "can't be read by the agent's user"),
        "bad_request" => ApiError::invalid("path", message),
        _ => unavailable(message),
    }
}

async fn read_raw(svc: &Sandboxes, row: &SandboxRow, src: &Source, path: &str, want: u64) -> ApiResult<Raw> {
    match src {
        Source::Live => match svc.provider(row).supervisor(row.id).read_file(path, want).await {
            Ok(f) => Ok(Raw { size: f.size, bytes: f.data }),
            Err(sandboxd::client::Error::Remote { code, message }) => Err(file_error(&code, &message, path)),
            Err(e) => Err(unavailable(e)),
        },
        Source::Snapshot(_) => {
            let argv = vec![
                crate::provider::local::bwrap::SANDBOXD_PATH.to_owned(),
                "read-file".to_owned(),
                path.to_owned(),
                want.to_string(),
            ];
            let out = run(svc, row, src, argv).await?;
            let line: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(unavailable)?;
            match line.get("type").and_then(|t| t.as_str()) {
                Some("file") => {
                    let size = line.get("size").and_then(|s| s.as_u64()).unwrap_or_default();
                    let data = line.get("data").and_then(|d| d.as_str()).unwrap_or_default();
                    let bytes = base64::engine::general_purpose::STANDARD.decode(data).map_err(unavailable)?;
                    Ok(Raw { size, bytes })
                }
                _ => {
                    let code = line.get("code").and_then(|c| c.as_str()).unwrap_or("io");
                    let message = line.get("message").and_then(|m| m.as_str()).unwrap_or("read failed");
                    Err(file_error(code, message, path))
                }
            }
        }
    }
}

pub async fn file(state: &AppState, row: &SandboxRow, path: &str, max_bytes: Option<u64>) -> ApiResult<SandboxFile> {
    let svc = service::service(state)?;
    check_path(path)?;
    let max = check_max(max_bytes, svc.cfg.read_max_bytes)?;
    let src = source(row)?;
    let m = service::material(state, row, None).await?;
    // Read past the cut by the longest secret, so one straddling it is still caught.
    let raw = read_raw(&svc, row, &src, path, max + m.redactor.margin() as u64).await?;
    let shown = m.redactor.render(&raw.bytes, raw.size, usize::try_from(max).unwrap_or(usize::MAX));
    Ok(SandboxFile {
        path: path.to_owned(),
        size: raw.size,
        truncated: shown.truncated,
        encoding: shown.encoding.to_owned(),
        content: shown.content,
        snapshot_at: snapshot_at(&src),
    })
}

/// Entries a directory listing shows at most.
pub const MAX_ENTRIES: usize = 1000;

/// `find` of one directory: a record per entry, NUL-ended (names may hold
/// any byte but NUL and `/`): depth, type letter, size, name.
fn directory_argv(path: &str) -> Vec<String> {
    ["find", path, "-maxdepth", "1", "-printf", "%d\\t%y\\t%s\\t%f\\0"].map(String::from).to_vec()
}

/// The listing from `find`'s records; `Err` when `path` itself is not a directory.
fn parse_directory(out: &[u8]) -> Result<(Vec<DirectoryEntry>, bool), &'static str> {
    let mut entries = Vec::new();
    let mut is_dir = false;
    for record in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let text = String::from_utf8_lossy(record);
        let mut f = text.splitn(4, '\t');
        let (Some(depth), Some(kind), Some(size), Some(name)) = (f.next(), f.next(), f.next(), f.next()) else {
            continue;
        };
        if depth == "0" {
            is_dir = kind == "d";
            continue;
        }
        let kind = match kind {
            "f" => "file",
            "d" => "directory",
            "l" => "symlink",
            _ => "other",
        };
        entries.push(DirectoryEntry { name: name.to_owned(), kind, size: size.parse().unwrap_or(0) });
    }
    if !is_dir {
        return Err("is not a directory");
    }
    entries.sort_by(|a, b| (b.kind == "directory").cmp(&(a.kind == "directory")).then_with(|| a.name.cmp(&b.name)));
    let truncated = entries.len() > MAX_ENTRIES;
    entries.truncate(MAX_ENTRIES);
    Ok((entries, truncated))
}

pub async fn directory(state: &AppState, row: &SandboxRow, path: &str) -> ApiResult<SandboxDirectory> {
    let svc = service::service(state)?;
    check_path(path)?;
    let src = source(row)?;
    let out = run(&svc, row, &src, directory_argv(path)).await?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.exit.code != Some(0) && out.stdout.is_empty() {
        if stderr.contains("No such file") {
            return Err(file_error("not_found", "", path));
        }
        if stderr.contains("Permission denied") {
            return Err(file_error("permission_denied", "", path));
        }
        return Err(unavailable(stderr.trim()));
    }
    let (entries, cut) = parse_directory(&out.stdout).map_err(|why| ApiError::invalid("path", why))?;
    let m = service::material(state, row, None).await?;
    let entries = entries.into_iter().map(|e| DirectoryEntry { name: m.redactor.redact_str(&e.name), ..e }).collect();
    Ok(SandboxDirectory {
        path: path.to_owned(),
        entries,
        truncated: cut || out.exit.truncated,
        snapshot_at: snapshot_at(&src),
    })
}

async fn repo_root(svc: &Sandboxes, row: &SandboxRow, src: &Source, path: &str) -> ApiResult<String> {
    let out = run(svc, row, src, git::repo_root_argv(path)).await?;
    if out.exit.code != Some(0) {
        return Err(ApiError::invalid("path", "is not inside a git repository"));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

pub async fn diff(state: &AppState, row: &SandboxRow, q: DiffQuery, max_bytes: Option<u64>) -> ApiResult<SandboxDiff> {
    let svc = service::service(state)?;
    let argv = git::diff_argv(&q)?;
    let max = check_max(max_bytes, svc.cfg.read_max_bytes)?;
    let src = source(row)?;
    let root = repo_root(&svc, row, &src, &q.path).await?;
    let out = run(&svc, row, &src, argv).await?;
    if out.exit.code != Some(0) {
        let why = String::from_utf8_lossy(&out.stderr);
        return Err(ApiError::invalid("ref", format!("git diff failed: {}", why.trim())));
    }
    let m = service::material(state, row, None).await?;
    // A diff is text even when a file in it is not: render it as text so it is redacted and cut like any other.
    let text = String::from_utf8_lossy(&out.stdout);
    let whole = if out.exit.truncated { u64::MAX } else { text.len() as u64 };
    let shown = m.redactor.render(text.as_bytes(), whole, usize::try_from(max).unwrap_or(usize::MAX));
    let diff = shown.content;
    Ok(SandboxDiff {
        path: q.path,
        repo_root: root,
        staged: q.staged,
        git_ref: q.git_ref,
        diff,
        truncated: shown.truncated,
        snapshot_at: snapshot_at(&src),
    })
}

pub async fn changes(state: &AppState, row: &SandboxRow, path: &str) -> ApiResult<(String, Vec<SandboxChange>)> {
    let svc = service::service(state)?;
    check_path(path)?;
    let src = source(row)?;
    let root = repo_root(&svc, row, &src, path).await?;
    let out = run(&svc, row, &src, git::status_argv(path)).await?;
    if out.exit.code != Some(0) {
        return Err(unavailable(String::from_utf8_lossy(&out.stderr).trim()));
    }
    let list = git::parse_status(&out.stdout).map_err(unavailable)?;
    let m = service::material(state, row, None).await?;
    let list = list
        .into_iter()
        .map(|c| SandboxChange {
            path: m.redactor.redact_str(&c.path),
            renamed_from: c.renamed_from.map(|r| m.redactor.redact_str(&r)),
            ..c
        })
        .collect();
    Ok((root, list))
}

#[cfg(test)]
mod tests {
    #[test]
    fn directory_listings_put_directories_first_and_refuse_files() {
        let out =
            b"0\td\t4096\twork\x001\tf\t12\tb.txt\x001\td\t4096\tsrc\x001\tl\t7\ta link\x001\tf\t3\ttab\there\x00";
        let (entries, cut) = super::parse_directory(out).unwrap();
        assert!(!cut);
        let names: Vec<(&str, &str)> = entries.iter().map(|e| (e.name.as_str(), e.kind)).collect();
        assert_eq!(names, [("src", "directory"), ("a link", "symlink"), ("b.txt", "file"), ("tab\there", "file")]);
        assert_eq!(entries[2].size, 12);
        assert_eq!(super::parse_directory(b"0\tf\t3\tfile\x00"), Err("is not a directory"));
    }
}
