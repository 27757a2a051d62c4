//! Rules of an environment body (spec 2.4): bounds, repository and host
//! checks, secret key names, and the build fingerprint.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::error::ApiResult;
use crate::http::extract::Validator;

pub const MAX_NAME: usize = 200;
/// Longest environment variable or secret name.
pub const MAX_VAR_NAME: usize = 256;
pub const MAX_VAR_VALUE: usize = 32 * 1024;
pub const MAX_SECRET_VALUE: usize = 64 * 1024;
pub const MAX_SETUP_SCRIPT: usize = 256 * 1024;
pub const SETUP_TIMEOUT: RangeInclusive<i64> = 1..=900;
pub const DEFAULT_SETUP_TIMEOUT: i64 = 120;
pub const MAX_HOST: usize = 253;
pub const MAX_URL: usize = 2048;
pub const MAX_MOUNT_PATH: usize = 1024;
pub const MAX_REF: usize = 255;

/// A repository cloned into the sandbox at `mount_path`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Repository {
    /// `https://` URL without credentials in it.
    pub url: String,
    /// Absolute path (starts with `/`, no `..`).
    pub mount_path: String,
    /// Branch or tag cloned with `-b`; the default branch when absent.
    #[serde(rename = "ref", default)]
    pub git_ref: Option<String>,
    /// Name of a secret of this environment holding a clone token (HTTPS basic auth).
    #[serde(default)]
    pub secret_key: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum NetworkingType {
    #[default]
    Unrestricted,
    Limited,
}

/// Network policy details; only `allowed_hosts` is honoured and any other key is refused.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NetworkingConfig {
    /// Domain names (a leading `*.` matches subdomains). With `limited`, no or an empty list denies all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_hosts: Option<Vec<String>>,
}

/// Every field of an environment but its name, as stored in `environments.spec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EnvironmentSpec {
    pub env_vars: BTreeMap<String, String>,
    pub metadata: Map<String, Value>,
    pub packages: Map<String, Value>,
    pub repositories: Vec<Repository>,
    pub setup_script: String,
    pub setup_timeout_seconds: i64,
    pub networking_type: NetworkingType,
    pub networking_config: NetworkingConfig,
}

impl Default for EnvironmentSpec {
    fn default() -> Self {
        EnvironmentSpec {
            env_vars: BTreeMap::new(),
            metadata: Map::new(),
            packages: Map::new(),
            repositories: Vec::new(),
            setup_script: String::new(),
            setup_timeout_seconds: DEFAULT_SETUP_TIMEOUT,
            networking_type: NetworkingType::Unrestricted,
            networking_config: NetworkingConfig::default(),
        }
    }
}

/// Body of create (`name` required) and update (omitted fields unchanged; null counts as omitted).
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct EnvironmentUpdate {
    /// 1 to 200 characters; required on create.
    #[schema(min_length = 1, max_length = 200)]
    pub name: Option<String>,
    /// Variable names `[A-Za-z_][A-Za-z0-9_]*` (max 256); values max 32 KB.
    pub env_vars: Option<BTreeMap<String, String>>,
    pub metadata: Option<Map<String, Value>>,
    pub packages: Option<Map<String, Value>>,
    pub repositories: Option<Vec<Repository>>,
    /// Run with `bash -e` in `/workspace`; max 256 KB.
    pub setup_script: Option<String>,
    /// 1 to 900 (default 120).
    pub setup_timeout_seconds: Option<i64>,
    /// `unrestricted` (default) or `limited`.
    pub networking_type: Option<NetworkingType>,
    pub networking_config: Option<NetworkingConfig>,
}

/// Applies an update over the current name and spec.
pub fn merge(name: String, spec: EnvironmentSpec, u: EnvironmentUpdate) -> (String, EnvironmentSpec) {
    let spec = EnvironmentSpec {
        env_vars: u.env_vars.unwrap_or(spec.env_vars),
        metadata: u.metadata.unwrap_or(spec.metadata),
        packages: u.packages.unwrap_or(spec.packages),
        repositories: u.repositories.unwrap_or(spec.repositories),
        setup_script: u.setup_script.unwrap_or(spec.setup_script),
        setup_timeout_seconds: u.setup_timeout_seconds.unwrap_or(spec.setup_timeout_seconds),
        networking_type: u.networking_type.unwrap_or(spec.networking_type),
        networking_config: u.networking_config.unwrap_or(spec.networking_config),
    };
    (u.name.unwrap_or(name), spec)
}

/// Checks a whole environment. `secret_keys` are the secrets it holds, which
/// a repository's `secret_key` must name.
pub fn validate(name: &str, spec: &EnvironmentSpec, secret_keys: &BTreeSet<String>) -> ApiResult<()> {
    let mut v = Validator::default();
    check_name(&mut v, "name", name);
    for (key, value) in &spec.env_vars {
        let field = format!("env_vars.{key}");
        check_var_name(&mut v, &field, key);
        v.check(value.len() <= MAX_VAR_VALUE, &field, "should be at most 32768 bytes");
    }
    let mut mounts = BTreeSet::new();
    for (i, repo) in spec.repositories.iter().enumerate() {
        check_repository(&mut v, &format!("repositories[{i}]"), repo, secret_keys);
        v.check(
            mounts.insert(repo.mount_path.trim_end_matches('/')),
            &format!("repositories[{i}].mount_path"),
            "has already been taken",
        );
    }
    v.check(spec.setup_script.len() <= MAX_SETUP_SCRIPT, "setup_script", "should be at most 262144 bytes");
    v.check(SETUP_TIMEOUT.contains(&spec.setup_timeout_seconds), "setup_timeout_seconds", "must be between 1 and 900");
    for (i, host) in spec.networking_config.allowed_hosts.iter().flatten().enumerate() {
        v.check(is_host_pattern(host), &format!("networking_config.allowed_hosts[{i}]"), "is not a domain name");
    }
    v.finish()
}

/// A name: 1 to 200 characters, not blank.
pub fn check_name(v: &mut Validator, field: &str, name: &str) {
    v.check(!name.trim().is_empty(), field, "can't be blank");
    v.check(name.chars().count() <= MAX_NAME, field, "should be at most 200 character(s)");
}

/// An environment variable or secret name: `[A-Za-z_][A-Za-z0-9_]*`, at most 256 characters.
pub fn check_var_name(v: &mut Validator, field: &str, name: &str) {
    if name.is_empty() {
        return v.check(false, field, "can't be blank");
    }
    v.check(name.len() <= MAX_VAR_NAME, field, "should be at most 256 character(s)");
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    v.check(ok, field, "has invalid format (letters, digits and _, not starting with a digit)");
}

/// A secret's name and value: the name as a variable name, the value 1 byte to `max` bytes.
pub fn check_secret(key: &str, value: &str, max: usize) -> ApiResult<()> {
    let mut v = Validator::default();
    check_var_name(&mut v, "key", key);
    v.check(!value.is_empty(), "value", "can't be blank");
    v.check(value.len() <= max, "value", &format!("should be at most {max} bytes"));
    v.finish()
}

fn check_repository(v: &mut Validator, at: &str, repo: &Repository, secret_keys: &BTreeSet<String>) {
    let url_field = format!("{at}.url");
    v.check(repo.url.len() <= MAX_URL, &url_field, "should be at most 2048 character(s)");
    // The URL parser forgives `https:///host`; the rule asks for the plain form.
    let plain = repo.url.strip_prefix("https://").is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'));
    match reqwest::Url::parse(&repo.url) {
        Ok(url) if plain && url.host_str().is_some_and(|h| !h.is_empty()) => {
            v.check(
                url.username().is_empty() && url.password().is_none(),
                &url_field,
                "must not contain credentials; name a secret in secret_key instead",
            );
        }
        _ => v.check(false, &url_field, "must be an https:// URL"),
    }

    let mount_field = format!("{at}.mount_path");
    let path = &repo.mount_path;
    v.check(path.starts_with('/'), &mount_field, "must be an absolute path starting with /");
    v.check(!path.split('/').any(|s| s == ".."), &mount_field, "must not contain ..");
    v.check(path.len() <= MAX_MOUNT_PATH, &mount_field, "should be at most 1024 character(s)");

    if let Some(r) = &repo.git_ref {
        v.check(is_git_ref(r), &format!("{at}.ref"), "is not a branch or tag name");
    }
    if let Some(key) = &repo.secret_key {
        v.check(secret_keys.contains(key), &format!("{at}.secret_key"), "does not name a secret of this environment");
    }
}

/// A branch or tag name safe to pass to `git clone -b`: the rules of
/// `git check-ref-format`, and no leading `-` (it would read as an option).
pub fn is_git_ref(r: &str) -> bool {
    !r.is_empty()
        && r.len() <= MAX_REF
        && !r.starts_with(['-', '/', '.'])
        && !r.ends_with(['/', '.'])
        && !r.ends_with(".lock")
        && !r.contains("..")
        && !r.contains("//")
        && !r.contains("@{")
        && !r.contains("/.")
        && r != "@"
        && !r.chars().any(|c| c.is_ascii_control() || c.is_whitespace() || "~^:?*[\\".contains(c))
}

/// A domain name, optionally with a leading `*.` wildcard: labels of
/// letters, digits and hyphens (1 to 63, no hyphen at either end), at most
/// 253 characters, and a last label that is not all digits (so no IPv4 address).
pub fn is_host_pattern(host: &str) -> bool {
    let name = host.strip_prefix("*.").unwrap_or(host);
    if host.len() > MAX_HOST || name.is_empty() {
        return false;
    }
    let labels: Vec<&str> = name.split('.').collect();
    labels.iter().all(|l| {
        (1..=63).contains(&l.len())
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    }) && !labels.last().is_some_and(|l| l.chars().all(|c| c.is_ascii_digit()))
}

/// Hex SHA-256 of the canonical JSON of what a build depends on: packages,
/// repositories, setup script and network policy. Name, variables, metadata
/// and the setup timeout change nothing on disk, so they are left out.
pub fn fingerprint(spec: &EnvironmentSpec) -> String {
    let inputs = json!({
        "packages": spec.packages,
        "repositories": spec.repositories,
        "setup_script": spec.setup_script,
        "networking_type": spec.networking_type,
        "networking_config": spec.networking_config,
    });
    let mut text = String::new();
    canonical_json(&inputs, &mut text);
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// When the fingerprint was last changed: kept while it is the same.
pub fn fingerprint_at(old: &str, old_at: i64, new: &str, now: i64) -> i64 {
    if old == new { old_at } else { now }
}

/// JSON with object keys sorted at every level, so equal values hash
/// equally whatever order their keys arrived in.
fn canonical_json(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical_json(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(url: &str, mount: &str) -> Repository {
        Repository { url: url.into(), mount_path: mount.into(), git_ref: None, secret_key: None }
    }

    fn fields(spec: &EnvironmentSpec, secrets: &[&str]) -> Vec<String> {
        let secrets = secrets.iter().map(|s| s.to_string()).collect();
        match validate("env", spec, &secrets) {
            Ok(()) => Vec::new(),
            Err(e) => e.errors.as_ref().unwrap().keys().cloned().collect(),
        }
    }

    fn with_repo(r: Repository) -> EnvironmentSpec {
        EnvironmentSpec { repositories: vec![r], ..Default::default() }
    }

    #[test]
    fn defaults() {
        let s = EnvironmentSpec::default();
        assert_eq!(s.setup_timeout_seconds, 120);
        assert_eq!(s.networking_type, NetworkingType::Unrestricted);
        let stored: EnvironmentSpec = serde_json::from_str("{}").unwrap();
        assert_eq!(stored, s);
        assert!(fields(&s, &[]).is_empty());
    }

    #[test]
    fn names_and_timeouts_are_bounded() {
        let s = EnvironmentSpec::default();
        assert!(validate(&"x".repeat(200), &s, &BTreeSet::new()).is_ok());
        assert!(validate(&"x".repeat(201), &s, &BTreeSet::new()).is_err());
        assert!(validate(" ", &s, &BTreeSet::new()).is_err());
        for (t, ok) in [(0, false), (1, true), (900, true), (901, false), (-1, false)] {
            let s = EnvironmentSpec { setup_timeout_seconds: t, ..Default::default() };
            assert_eq!(fields(&s, &[]).is_empty(), ok, "{t}");
        }
        let s = EnvironmentSpec { setup_script: "x".repeat(MAX_SETUP_SCRIPT), ..Default::default() };
        assert!(fields(&s, &[]).is_empty());
        let s = EnvironmentSpec { setup_script: "x".repeat(MAX_SETUP_SCRIPT + 1), ..Default::default() };
        assert_eq!(fields(&s, &[]), ["setup_script"]);
    }

    #[test]
    fn variable_names_and_values() {
        let mut v = Validator::default();
        for ok in ["A", "_", "a_1", "PATH", &"A".repeat(256)] {
            check_var_name(&mut v, ok, ok);
        }
        assert!(v.finish().is_ok());
        for bad in ["", "1A", "A-B", "A B", "É", &"A".repeat(257)] {
            let mut v = Validator::default();
            check_var_name(&mut v, "k", bad);
            assert!(v.finish().is_err(), "{bad}");
        }
        let vars = |k: &str, n: usize| EnvironmentSpec {
            env_vars: [(k.to_owned(), "v".repeat(n))].into_iter().collect(),
            ..Default::default()
        };
        assert!(fields(&vars("OK", MAX_VAR_VALUE), &[]).is_empty());
        assert_eq!(fields(&vars("OK", MAX_VAR_VALUE + 1), &[]), ["env_vars.OK"]);
        assert_eq!(fields(&vars("9X", 1), &[]), ["env_vars.9X"]);
    }

    #[test]
    fn secrets_need_a_name_and_a_bounded_value() {
        assert!(check_secret("TOKEN", "v", 10).is_ok());
        assert!(check_secret("TOKEN", &"v".repeat(10), 10).is_ok());
        assert!(check_secret("TOKEN", &"v".repeat(11), 10).is_err());
        assert!(check_secret("TOKEN", "", 10).is_err());
        assert!(check_secret("1TOKEN", "v", 10).is_err());
    }

    #[test]
    fn repository_urls() {
        assert!(fields(&with_repo(repo("https://github.com/a/b.git", "/workspace/b")), &[]).is_empty());
        for bad in [
            "http://github.com/a/b",
            "git@github.com:a/b.git",
            "https://",
            "https:///path",
            "https://user:pass@github.com/a/b",
            "https://token@github.com/a/b",
            "HTTPS://github.com/a/b",
            "https://exa mple.com/",
            "",
        ] {
            assert_eq!(fields(&with_repo(repo(bad, "/w")), &[]), ["repositories[0].url"], "{bad}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL - 20));
        assert_eq!(long.len(), MAX_URL);
        assert!(fields(&with_repo(repo(&long, "/w")), &[]).is_empty());
        assert!(!fields(&with_repo(repo(&format!("{long}a"), "/w")), &[]).is_empty());
    }

    #[test]
    fn mount_paths() {
        for ok in ["/", "/workspace", "/a/b.c/..d", "/a/./b"] {
            assert!(fields(&with_repo(repo("https://h.io/r", ok)), &[]).is_empty(), "{ok}");
        }
        for bad in ["", "workspace", "./w", "/a/../b", "/..", "/a/.."] {
            assert_eq!(fields(&with_repo(repo("https://h.io/r", bad)), &[]), ["repositories[0].mount_path"], "{bad}");
        }
        let two = EnvironmentSpec {
            repositories: vec![repo("https://h.io/a", "/w/a"), repo("https://h.io/b", "/w/a/")],
            ..Default::default()
        };
        assert_eq!(fields(&two, &[]), ["repositories[1].mount_path"]);
    }

    #[test]
    fn refs_and_secret_keys() {
        for ok in ["main", "release/1.2", "v1.0.0", "feature-x_y"] {
            assert!(is_git_ref(ok), "{ok}");
        }
        for bad in ["", "-b", "--upload-pack=x", "a..b", "a b", "a~1", "x.lock", "/a", "a/", "@", "a@{1}", "a:b"] {
            assert!(!is_git_ref(bad), "{bad}");
        }
        let mut r = repo("https://h.io/r", "/w");
        r.secret_key = Some("TOKEN".into());
        assert_eq!(fields(&with_repo(r.clone()), &[]), ["repositories[0].secret_key"]);
        assert!(fields(&with_repo(r), &["TOKEN"]).is_empty());
    }

    #[test]
    fn hosts() {
        for ok in ["example.com", "*.example.com", "localhost", "a-b.c0.io", "API.GitHub.com", "1password.com"] {
            assert!(is_host_pattern(ok), "{ok}");
        }
        for bad in [
            "",
            "*.",
            "*",
            "*.*.a.com",
            "a.*.com",
            "-a.com",
            "a-.com",
            "a..com",
            ".a.com",
            "a.com.",
            "a_b.com",
            "https://a.com",
            "a.com:443",
            "a.com/x",
            "10.0.0.1",
            "[::1]",
            "é.com",
        ] {
            assert!(!is_host_pattern(bad), "{bad}");
        }
        let label = "a".repeat(63);
        assert!(!is_host_pattern(&format!("{label}a.com")), "a label over 63");
        // 63 + 1 + 63 + 1 + 63 + 1 + 61 = 253
        let max = format!("{label}.{label}.{label}.{}", "b".repeat(61));
        assert_eq!(max.len(), 253);
        assert!(is_host_pattern(&max));
        assert!(!is_host_pattern(&format!("{max}b")));
        let s = EnvironmentSpec {
            networking_config: NetworkingConfig { allowed_hosts: Some(vec!["ok.com".into(), "bad host".into()]) },
            ..Default::default()
        };
        assert_eq!(fields(&s, &[]), ["networking_config.allowed_hosts[1]"]);
    }

    #[test]
    fn unknown_networking_keys_are_refused() {
        assert!(serde_json::from_str::<NetworkingConfig>(r#"{"allowed_hosts": ["a.com"]}"#).is_ok());
        assert!(serde_json::from_str::<NetworkingConfig>(r#"{"blocked_hosts": ["a.com"]}"#).is_err());
    }

    #[test]
    fn fingerprint_follows_build_inputs_only() {
        let base = EnvironmentSpec::default();
        let fp = fingerprint(&base);
        assert_eq!(fp.len(), 64);
        assert_eq!(fp, fingerprint(&base.clone()), "stable");

        let mut s = base.clone();
        s.env_vars.insert("A".into(), "1".into());
        s.metadata.insert("team".into(), json!("x"));
        s.setup_timeout_seconds = 900;
        assert_eq!(fingerprint(&s), fp, "variables, metadata and timeout do not change the disk");

        let changed = [
            EnvironmentSpec { setup_script: "echo".into(), ..base.clone() },
            EnvironmentSpec { packages: json!({"apt": ["jq"]}).as_object().unwrap().clone(), ..base.clone() },
            EnvironmentSpec { repositories: vec![repo("https://h.io/r", "/w")], ..base.clone() },
            EnvironmentSpec { networking_type: NetworkingType::Limited, ..base.clone() },
            EnvironmentSpec {
                networking_config: NetworkingConfig { allowed_hosts: Some(vec!["a.com".into()]) },
                ..base.clone()
            },
        ];
        for s in &changed {
            assert_ne!(fingerprint(s), fp, "{s:?}");
        }
    }

    #[test]
    fn fingerprint_ignores_key_order() {
        let a: Map<String, Value> = serde_json::from_str(r#"{"apt": ["jq"], "npm": {"x": 1, "y": 2}}"#).unwrap();
        let b: Map<String, Value> = serde_json::from_str(r#"{"npm": {"y": 2, "x": 1}, "apt": ["jq"]}"#).unwrap();
        let fa = fingerprint(&EnvironmentSpec { packages: a, ..Default::default() });
        let fb = fingerprint(&EnvironmentSpec { packages: b, ..Default::default() });
        assert_eq!(fa, fb);
        let mut out = String::new();
        canonical_json(&json!({"b": [1, {"d": "x", "c": null}], "a": true}), &mut out);
        assert_eq!(out, r#"{"a":true,"b":[1,{"c":null,"d":"x"}]}"#);
    }

    #[test]
    fn fingerprint_time_moves_only_with_the_fingerprint() {
        assert_eq!(fingerprint_at("aa", 5, "aa", 9), 5);
        assert_eq!(fingerprint_at("aa", 5, "bb", 9), 9);
    }

    #[test]
    fn merge_keeps_omitted_fields() {
        let current = EnvironmentSpec { setup_script: "echo".into(), setup_timeout_seconds: 30, ..Default::default() };
        let (name, spec) =
            merge("old".into(), current, EnvironmentUpdate { setup_timeout_seconds: Some(60), ..Default::default() });
        assert_eq!(name, "old");
        assert_eq!(spec.setup_script, "echo");
        assert_eq!(spec.setup_timeout_seconds, 60);
        let (name, _) = merge("old".into(), spec, EnvironmentUpdate { name: Some("new".into()), ..Default::default() });
        assert_eq!(name, "new");
    }
}
