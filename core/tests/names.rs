//! Core names no extension (docs/extensions.md): nothing in core's crates or
//! core's migrations mentions an extension's name as a string or a flag, an
//! extension crate, or an extension's table. Extensions plug in through the
//! contract; core offers hooks and never calls an extension by name.

use std::path::{Path, PathBuf};

/// The second half's extensions and flags (DESIGN.md section 9), named
/// here before their crates exist so that core never grows a reference to them.
const PLANNED: &[&str] = &["connections", "subscriptions", "openai_subscriptions", "admin", "chat_relay"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

/// Every `CREATE TABLE` of the extensions' migrations.
fn extension_tables(root: &Path) -> Vec<String> {
    let mut sql = Vec::new();
    files(&root.join("extensions"), "sql", &mut sql);
    let mut tables = Vec::new();
    for path in sql {
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines() {
            let rest = line.trim().strip_prefix("CREATE TABLE ").map(|r| r.trim_start_matches("IF NOT EXISTS "));
            if let Some(name) = rest.and_then(|r| r.split(|c: char| !c.is_alphanumeric() && c != '_').next()) {
                tables.push(name.to_owned());
            }
        }
    }
    tables
}

fn is_word_at(text: &str, at: usize, len: usize) -> bool {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    !word(text[..at].chars().next_back()) && !word(text[at + len..].chars().next())
}

fn contains_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| is_word_at(text, at, word.len()))
}

/// The code of a line: comments are prose and may mention anything.
fn code(line: &str, comment: &str) -> String {
    let trimmed = line.trim_start();
    if trimmed.starts_with(comment) {
        return String::new();
    }
    match line.find(&format!(" {comment} ")) {
        Some(at) => line[..at].to_owned(),
        None => line.to_owned(),
    }
}

#[test]
fn core_names_no_extension() {
    let root = workspace();
    let mut names: Vec<String> = PLANNED.iter().map(|s| (*s).to_owned()).collect();
    for entry in std::fs::read_dir(root.join("extensions")).unwrap().flatten() {
        names.push(entry.file_name().to_string_lossy().replace('-', "_"));
    }
    assert!(names.iter().any(|n| n == "webhooks"), "found the extensions: {names:?}");
    let tables = extension_tables(&root);
    assert!(tables.iter().any(|t| t == "webhook_endpoints"), "found their tables: {tables:?}");

    let mut rust = Vec::new();
    for dir in ["core/src", "core/platform/src", "core/store/src", "core/machine/src", "core/store/build.rs"] {
        let path = root.join(dir);
        if path.is_file() { rust.push(path) } else { files(&path, "rs", &mut rust) }
    }
    let mut sql = Vec::new();
    files(&root.join("migrations"), "sql", &mut sql);

    let mut hits = Vec::new();
    for (paths, comment) in [(&rust, "//"), (&sql, "--")] {
        for path in paths {
            let text = std::fs::read_to_string(path).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = code(line, comment);
                let named = names.iter().find(|name| {
                    [
                        format!("\"{name}\""),
                        format!("features.{name}"),
                        format!("acs_ext_{name}"),
                        format!("{name}_not_enabled"),
                    ]
                    .iter()
                    .any(|p| code.contains(p.as_str()))
                        || code.contains(&format!("acs-ext-{}", name.replace('_', "-")))
                });
                let table = tables.iter().find(|t| contains_word(&code, t));
                if let Some(what) = named.or(table) {
                    hits.push(format!("{}:{}: names `{what}`: {}", path.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(hits.is_empty(), "core names extensions:\n{}", hits.join("\n"));
}

#[test]
fn the_check_sees_a_name() {
    assert_eq!(code("let x = \"webhooks\"; // why", "//"), "let x = \"webhooks\";");
    assert!(code("    // the webhooks extension", "//").is_empty());
    assert!(contains_word("SELECT * FROM webhook_endpoints WHERE", "webhook_endpoints"));
    assert!(!contains_word("SELECT * FROM webhook_endpoints_old", "webhook_endpoints"));
}
