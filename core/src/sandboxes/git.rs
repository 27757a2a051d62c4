//! Git reads of a sandbox (spec 2.3 `SandboxDiff`, `SandboxChange`): the
//! argv the supervisor runs inside the sandbox, and the parse of what git
//! prints back.

use serde::Serialize;
use utoipa::ToSchema;

use crate::error::ApiError;

/// Longest revision accepted as `ref`.
pub const MAX_REF: usize = 255;

/// `GET /api/sandboxes/{id}/diff` after query parsing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffQuery {
    /// Directory inside the repository, absolute.
    pub path: String,
    /// Diff the index (`--cached`) rather than the worktree.
    pub staged: bool,
    /// One revision to diff against; none diffs against the index (or HEAD when staged).
    pub git_ref: Option<String>,
}

/// One path of git status, relative to the repository root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct SandboxChange {
    pub path: String,
    /// Staged side.
    pub index: ChangeKind,
    /// Unstaged side.
    pub worktree: ChangeKind,
    /// Source path when a side is a rename or copy.
    pub renamed_from: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Copied,
    Deleted,
    Ignored,
    Modified,
    Renamed,
    TypeChanged,
    Unchanged,
    Unmerged,
    Untracked,
}

/// `git diff` of tracked content (plain `git diff` never shows untracked
/// files). External diff drivers and textconv filters are off: they would
/// run programs the repository names. The trailing `--` keeps `ref` a revision.
pub fn diff_argv(q: &DiffQuery) -> Result<Vec<String>, ApiError> {
    check_path(&q.path)?;
    let mut argv = git_in(&q.path);
    argv.extend(["-c", "core.quotepath=off", "diff", "--no-color", "--no-ext-diff", "--no-textconv"].map(String::from));
    if q.staged {
        argv.push("--cached".into());
    }
    if let Some(git_ref) = &q.git_ref {
        check_ref(git_ref).map_err(|msg| ApiError::invalid("ref", msg))?;
        argv.push(git_ref.clone());
    }
    argv.push("--".into());
    Ok(argv)
}

/// Prints the repository root of `path` (`repo_root` of a diff).
pub fn repo_root_argv(path: &str) -> Vec<String> {
    let mut argv = git_in(path);
    argv.extend(["rev-parse", "--show-toplevel"].map(String::from));
    argv
}

/// Machine-readable status. Ignored paths are listed as git matches them
/// (`--ignored=matching`): an ignored directory is one entry (`target/`) and
/// git does not descend into it, which is what it does without the flag
/// too, so the spec's `ignored` value costs no extra directory walk.
pub fn status_argv(path: &str) -> Vec<String> {
    let mut argv = git_in(path);
    argv.extend(
        ["-c", "core.quotepath=off", "status", "--porcelain=v2", "-z", "--untracked-files=all", "--ignored=matching"]
            .map(String::from),
    );
    argv
}

/// Parses `git status --porcelain=v2 -z`. Header lines (`# ...`) are
/// skipped; a path that is not UTF-8 is shown lossily.
pub fn parse_status(raw: &[u8]) -> Result<Vec<SandboxChange>, String> {
    let mut records = raw.split(|b| *b == 0);
    let mut changes = Vec::new();
    while let Some(record) = records.next() {
        let Some((&tag, _)) = record.split_first() else {
            continue;
        };
        let change = match tag {
            b'1' => {
                let (xy, path) = fields(record, 8)?;
                tracked(xy, path, None)?
            }
            b'2' => {
                let (xy, path) = fields(record, 9)?;
                let from = records.next().filter(|r| !r.is_empty()).ok_or("rename entry without its source path")?;
                tracked(xy, path, Some(lossy(from)))?
            }
            b'u' => {
                let (_, path) = fields(record, 10)?;
                both(path, ChangeKind::Unmerged)
            }
            b'?' => both(after_tag(record)?, ChangeKind::Untracked),
            b'!' => both(after_tag(record)?, ChangeKind::Ignored),
            b'#' => continue,
            other => return Err(format!("unknown status entry `{}`", char::from(other))),
        };
        changes.push(change);
    }
    Ok(changes)
}

fn git_in(path: &str) -> Vec<String> {
    vec!["git".into(), "-C".into(), path.into()]
}

fn check_path(path: &str) -> Result<(), ApiError> {
    if !path.starts_with('/') || path.contains('\0') {
        return Err(ApiError::invalid("path", "must be an absolute path"));
    }
    Ok(())
}

/// One revision (`main`, `HEAD~2`, `HEAD^`, `v1.0`, `origin/main`, a sha,
/// `main@{1}`): no option (`-`), range (`..`), negation (`^x`), several
/// parents (`^@`, `^!`, `^-`), `rev:path` or search, whitespace or control
/// characters, nor what git refuses in ref names (`? * [ \`).
fn check_ref(git_ref: &str) -> Result<(), String> {
    const RULE: &str = "must be a single revision such as `main`, `HEAD~2` or a commit sha";
    let refused = git_ref.is_empty()
        || git_ref.len() > MAX_REF
        || git_ref.starts_with(['-', '^'])
        || ["..", "^@", "^!", "^-"].iter().any(|s| git_ref.contains(s))
        || git_ref.chars().any(|c| c.is_whitespace() || c.is_control() || matches!(c, ':' | '?' | '*' | '[' | '\\'));
    if refused { Err(RULE.into()) } else { Ok(()) }
}

/// The XY letters and the path of an entry with `n` fields before its path.
fn fields(record: &[u8], n: usize) -> Result<([u8; 2], &[u8]), String> {
    let mut parts = record.splitn(n + 1, |b| *b == b' ');
    let _tag = parts.next();
    let xy = parts.next().and_then(|xy| <[u8; 2]>::try_from(xy).ok());
    let path = parts.nth(n - 2).filter(|p| !p.is_empty());
    match (xy, path) {
        (Some(xy), Some(path)) => Ok((xy, path)),
        _ => Err(format!("malformed status entry `{}`", lossy(record))),
    }
}

fn after_tag(record: &[u8]) -> Result<&[u8], String> {
    match record {
        [_, b' ', path @ ..] if !path.is_empty() => Ok(path),
        _ => Err(format!("malformed status entry `{}`", lossy(record))),
    }
}

fn tracked([x, y]: [u8; 2], path: &[u8], renamed_from: Option<String>) -> Result<SandboxChange, String> {
    Ok(SandboxChange { path: lossy(path), index: kind(x)?, worktree: kind(y)?, renamed_from })
}

fn both(path: &[u8], kind: ChangeKind) -> SandboxChange {
    SandboxChange { path: lossy(path), index: kind, worktree: kind, renamed_from: None }
}

fn kind(letter: u8) -> Result<ChangeKind, String> {
    Ok(match letter {
        b'.' => ChangeKind::Unchanged,
        b'M' => ChangeKind::Modified,
        b'T' => ChangeKind::TypeChanged,
        b'A' => ChangeKind::Added,
        b'D' => ChangeKind::Deleted,
        b'R' => ChangeKind::Renamed,
        b'C' => ChangeKind::Copied,
        b'U' => ChangeKind::Unmerged,
        other => return Err(format!("unknown status letter `{}`", char::from(other))),
    })
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use axum::http::StatusCode;
    use uuid::Uuid;

    use super::ChangeKind::*;
    use super::*;

    fn query(path: &str, staged: bool, git_ref: Option<&str>) -> DiffQuery {
        DiffQuery { path: path.into(), staged, git_ref: git_ref.map(String::from) }
    }

    fn refused_field(err: ApiError) -> String {
        assert_eq!(err.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(err.error, "validation_failed");
        err.errors.as_ref().and_then(|e| e.keys().next().cloned()).unwrap_or_default()
    }

    fn change(path: &str, index: ChangeKind, worktree: ChangeKind, from: Option<&str>) -> SandboxChange {
        SandboxChange { path: path.into(), index, worktree, renamed_from: from.map(String::from) }
    }

    #[test]
    fn diff_argv_shapes() {
        let base = "git -C /work/repo -c core.quotepath=off diff --no-color --no-ext-diff --no-textconv";
        let cases = [
            (query("/work/repo", false, None), format!("{base} --")),
            (query("/work/repo", true, None), format!("{base} --cached --")),
            (query("/work/repo", false, Some("HEAD~2")), format!("{base} HEAD~2 --")),
            (query("/work/repo", true, Some("main")), format!("{base} --cached main --")),
        ];
        for (q, want) in cases {
            assert_eq!(diff_argv(&q).unwrap().join(" "), want);
        }
        // A path with spaces stays one argument.
        assert_eq!(diff_argv(&query("/a b", false, None)).unwrap()[2], "/a b");
    }

    #[test]
    fn diff_path_must_be_absolute() {
        for path in ["", "repo", "./repo", "~/repo", "/a\0b"] {
            let err = diff_argv(&query(path, false, None)).expect_err(path);
            assert_eq!(refused_field(err), "path", "{path}");
        }
    }

    #[test]
    fn single_revisions_are_accepted() {
        for r in [
            "HEAD",
            "HEAD~2",
            "HEAD^",
            "HEAD^2",
            "main",
            "v1.0",
            "origin/main",
            "feature/x-y_z",
            "main@{1}",
            "@",
            "@{-1}",
            "0123abcd",
            "0123456789abcdef0123456789abcdef01234567",
            "ветка",
        ] {
            assert_eq!(diff_argv(&query("/r", false, Some(r))).unwrap().iter().rev().nth(1).unwrap(), r);
        }
        diff_argv(&query("/r", false, Some(&"a".repeat(MAX_REF)))).unwrap();
    }

    #[test]
    fn other_refs_are_refused_naming_ref() {
        let long = "a".repeat(MAX_REF + 1);
        for r in [
            "",
            "-p",
            "--output=/etc/passwd",
            "^main",
            "main..dev",
            "main...dev",
            "HEAD^@",
            "HEAD^!",
            "HEAD^-1",
            "a b",
            " main",
            "main\t",
            "main\n",
            "a\0b",
            "a\u{7f}",
            "HEAD:file",
            ":/fix",
            "ma?n",
            "ma*",
            "ma[in]",
            "a\\b",
            &long,
        ] {
            let err = diff_argv(&query("/r", false, Some(r))).expect_err(r);
            assert_eq!(refused_field(err), "ref", "{r:?}");
        }
    }

    #[test]
    fn repo_root_and_status_argv() {
        assert_eq!(repo_root_argv("/w").join(" "), "git -C /w rev-parse --show-toplevel");
        assert_eq!(
            status_argv("/w").join(" "),
            "git -C /w -c core.quotepath=off status --porcelain=v2 -z --untracked-files=all --ignored=matching"
        );
    }

    #[test]
    fn parses_every_entry_kind() {
        let raw = b"# branch.oid abc\0\
1 .M N... 100644 100644 100644 aaa aaa src/a b.rs\0\
1 MD N... 100644 100644 000000 aaa bbb gone.rs\0\
1 .T N... 100644 100644 120000 aaa aaa link\0\
1 A. N... 000000 100644 100644 000 bbb new.rs\0\
2 R. N... 100644 100644 100644 aaa aaa R100 to file\0from file\0\
2 C. N... 100644 100644 100644 aaa aaa C75 copy\0orig\0\
u UU N... 100644 100644 100644 100644 aaa bbb ccc both.rs\0\
u DU N... 100644 000000 100644 100644 aaa bbb ccc del.rs\0\
? dir/new file\0\
! target/\0";
        let want = vec![
            change("src/a b.rs", Unchanged, Modified, None),
            change("gone.rs", Modified, Deleted, None),
            change("link", Unchanged, TypeChanged, None),
            change("new.rs", Added, Unchanged, None),
            change("to file", Renamed, Unchanged, Some("from file")),
            change("copy", Copied, Unchanged, Some("orig")),
            change("both.rs", Unmerged, Unmerged, None),
            change("del.rs", Unmerged, Unmerged, None),
            change("dir/new file", Untracked, Untracked, None),
            change("target/", Ignored, Ignored, None),
        ];
        assert_eq!(parse_status(raw).unwrap(), want);
        assert_eq!(parse_status(b"").unwrap(), vec![]);
    }

    #[test]
    fn non_utf8_paths_are_lossy() {
        let got = parse_status(b"? caf\xe9.txt\0").unwrap();
        assert_eq!(got, vec![change("caf\u{fffd}.txt", Untracked, Untracked, None)]);
    }

    #[test]
    fn malformed_status_is_an_error() {
        for raw in [
            &b"1 .M N... 100644 100644 100644 aaa aaa\0"[..],
            b"1 .M N... 100644 100644 100644 aaa aaa \0",
            b"1 M N... 100644 100644 100644 aaa aaa p\0",
            b"1 .X N... 100644 100644 100644 aaa aaa p\0",
            b"2 R. N... 100644 100644 100644 aaa aaa R100 to\0",
            b"2 R. N... 100644 100644 100644 aaa aaa R100 to\0\0",
            b"u UU N... 100644 100644 100644 100644 aaa bbb both\0",
            b"?\0",
            b"? \0",
            b"x what\0",
        ] {
            assert!(parse_status(raw).is_err(), "{}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn changes_serialize_as_the_spec_says() {
        let v = serde_json::to_value(change("a", TypeChanged, Unchanged, None)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"path": "a", "index": "type_changed", "worktree": "unchanged", "renamed_from": null})
        );
    }

    /// A scratch repository, removed on drop.
    struct Repo(PathBuf);

    impl Drop for Repo {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    impl Repo {
        fn new() -> Repo {
            let repo = Repo(std::env::temp_dir().join(format!("acs-git-{}", Uuid::new_v4())));
            std::fs::create_dir(&repo.0).unwrap();
            repo.git(&["init", "-q", "-b", "main"]);
            repo
        }

        fn path(&self) -> &str {
            self.0.to_str().unwrap()
        }

        fn write(&self, rel: &str, body: &str) {
            let file = self.0.join(rel);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, body).unwrap();
        }

        fn argv(&self, args: &[&str]) -> Vec<String> {
            let mut argv = git_in(self.path());
            argv.extend(args.iter().map(|a| a.to_string()));
            argv
        }

        fn git(&self, args: &[&str]) -> Vec<u8> {
            run(&self.argv(args), true)
        }
    }

    /// Runs an argv with git's user configuration shut out.
    fn run(argv: &[String], must_succeed: bool) -> Vec<u8> {
        let out = Command::new(&argv[0])
            .args(&argv[1..])
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .unwrap();
        if must_succeed {
            assert!(out.status.success(), "{argv:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        out.stdout
    }

    /// A repository in every state the parser maps, made by real git.
    fn fixture() -> Repo {
        let repo = Repo::new();
        for f in ["a.txt", "b.txt", "gone.txt", "kept.txt", "link-me.txt", "old name.txt", "conflict.txt"] {
            repo.write(f, &format!("{f}\n"));
        }
        repo.write(".gitignore", "*.log\nbuild/\n");
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-qm", "base"]);
        // A real merge conflict on conflict.txt.
        repo.git(&["checkout", "-qb", "other"]);
        repo.write("conflict.txt", "theirs\n");
        repo.git(&["commit", "-qam", "theirs"]);
        repo.git(&["checkout", "-q", "main"]);
        repo.write("conflict.txt", "ours\n");
        repo.git(&["commit", "-qam", "ours"]);
        // The merge stops on the conflict and exits non-zero.
        run(&repo.argv(&["merge", "-q", "other"]), false);
        // Staged and then modified again.
        repo.write("a.txt", "a staged\n");
        repo.git(&["add", "a.txt"]);
        repo.write("a.txt", "a staged then edited\n");
        repo.write("b.txt", "b edited\n");
        repo.git(&["mv", "old name.txt", "new name ✓.txt"]);
        repo.git(&["rm", "-q", "gone.txt"]);
        std::fs::remove_file(repo.0.join("kept.txt")).unwrap();
        std::fs::remove_file(repo.0.join("link-me.txt")).unwrap();
        std::os::unix::fs::symlink("a.txt", repo.0.join("link-me.txt")).unwrap();
        repo.write("added.txt", "added\n");
        repo.git(&["add", "added.txt"]);
        repo.write("sub/dir/new file.txt", "untracked\n");
        repo.write("sub/debug.log", "ignored\n");
        repo.write("build/out/bin", "ignored\n");
        repo
    }

    #[test]
    fn parses_real_git_status() {
        let repo = fixture();
        let mut got = parse_status(&run(&status_argv(repo.path()), true)).unwrap();
        got.sort_by(|a, b| a.path.cmp(&b.path));
        let want = vec![
            change("a.txt", Modified, Modified, None),
            change("added.txt", Added, Unchanged, None),
            change("b.txt", Unchanged, Modified, None),
            change("build/", Ignored, Ignored, None),
            change("conflict.txt", Unmerged, Unmerged, None),
            change("gone.txt", Deleted, Unchanged, None),
            change("kept.txt", Unchanged, Deleted, None),
            change("link-me.txt", Unchanged, TypeChanged, None),
            change("new name ✓.txt", Renamed, Unchanged, Some("old name.txt")),
            change("sub/debug.log", Ignored, Ignored, None),
            change("sub/dir/new file.txt", Untracked, Untracked, None),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn real_diffs_cover_tracked_content_only() {
        let repo = fixture();
        let diff = |staged, r: Option<&str>| {
            String::from_utf8(run(&diff_argv(&query(repo.path(), staged, r)).unwrap(), true)).unwrap()
        };
        let worktree = diff(false, None);
        assert!(worktree.contains("+b edited"));
        assert!(worktree.contains("+a staged then edited"));
        assert!(!worktree.contains("added.txt"));
        assert!(!worktree.contains("sub/dir"));
        assert!(!worktree.contains("\x1b["));
        let staged = diff(true, None);
        assert!(staged.contains("+added"));
        assert!(staged.contains("+a staged\n"));
        assert!(!staged.contains("b edited"));
        let against_head = diff(false, Some("HEAD~1"));
        assert!(against_head.contains("+b edited"));
        assert!(against_head.contains("+added"));
        // Asked from a subdirectory, the root is the repository's.
        let root = run(&repo_root_argv(&format!("{}/sub", repo.path())), true);
        let root = PathBuf::from(String::from_utf8(root).unwrap().trim_end());
        assert_eq!(root.canonicalize().unwrap(), Path::new(repo.path()).canonicalize().unwrap());
    }
}
