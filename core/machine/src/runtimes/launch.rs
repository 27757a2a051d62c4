//! How a machine starts an installed runtime: its argv (paths under
//! [`MOUNT`]), the variables it needs, and the files some read their settings
//! from (Codex's `config.toml`, the system prompt of Gemini and OpenCode),
//! written by a `sh -c` wrapper just before the program starts, so they always
//! match this turn's settings.

use std::collections::BTreeMap;

use super::{MOUNT, Pinned};
use acs_store::config::BaseUrls;

/// Gemini's model when neither the conversation nor the agent names one: its
/// own default (`auto`) routes every turn through a classifier model first.
pub const GEMINI_DEFAULT_MODEL: &str = "gemini-2.5-flash";

/// Where Codex keeps its state: a home under /tmp makes it refuse helper binaries.
pub const CODEX_HOME: &str = "/home/agent/.codex";

/// Gemini CLI's home while acs runs it (`GEMINI_CLI_HOME`): its global context
/// file there carries the agent's system prompt, and the user's own
/// `~/.gemini` is left alone.
pub const GEMINI_HOME: &str = "/home/agent/.acs/gemini";

/// The instructions file OpenCode's inline configuration names when the agent
/// has a system prompt (OpenCode adds such files to its own system prompt).
pub const OPENCODE_INSTRUCTIONS: &str = "/home/agent/.acs/opencode/instructions.md";

/// What a launch depends on besides the runtime.
#[derive(Debug, Clone, Copy)]
pub struct LaunchInputs<'a> {
    /// `provider/model_id` (the conversation's, else the agent's).
    pub model: Option<&'a str>,
    /// The agent's `system_prompt`.
    pub system_prompt: Option<&'a str>,
    pub base_urls: &'a BaseUrls,
}

/// The program of one runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub argv: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// `_meta` of `session/new` (Claude's adapter takes the system prompt there).
    pub session_meta: Option<serde_json::Value>,
}

fn path(runtime: &str, rel: &str) -> String {
    format!("{MOUNT}/{runtime}/node_modules/{rel}")
}

fn set(url: &str) -> Option<&str> {
    Some(url.trim()).filter(|u| !u.is_empty())
}

/// The model id without its `provider/` prefix.
fn model_id(model: Option<&str>) -> Option<&str> {
    model.map(|m| m.split_once('/').map_or(m, |(_, id)| id)).filter(|m| !m.is_empty())
}

pub fn launch(runtime: &Pinned, inputs: LaunchInputs<'_>) -> Launch {
    let mut env = BTreeMap::new();
    let session_meta = session_meta(runtime.name, inputs.system_prompt);
    let urls = inputs.base_urls;
    let argv = match runtime.name {
        "claude" => {
            // The CLI refuses to run as root unless IS_SANDBOX is exactly "1".
            for (k, v) in [
                ("IS_SANDBOX", "1"),
                ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
                ("DISABLE_TELEMETRY", "1"),
                ("DISABLE_AUTOUPDATER", "1"),
            ] {
                env.insert(k.to_owned(), v.to_owned());
            }
            if let Some(url) = set(&urls.anthropic) {
                env.insert("ANTHROPIC_BASE_URL".into(), url.to_owned());
            }
            vec!["node".into(), path("claude", "@zed-industries/claude-agent-acp/dist/index.js")]
        }
        "codex" => {
            env.insert("CODEX_HOME".into(), CODEX_HOME.into());
            let config = codex_config(model_id(inputs.model), set(&urls.openai), inputs.system_prompt);
            let file = WrittenFile { var: "ACS_CODEX_CONFIG", path: format!("{CODEX_HOME}/config.toml") };
            writing_files(&mut env, &[(file, Some(config))], vec![path("codex", ".bin/codex-acp")])
        }
        "gemini" => {
            if let Some(url) = set(&urls.google) {
                env.insert("GOOGLE_GEMINI_BASE_URL".into(), url.to_owned());
            }
            env.insert("GEMINI_CLI_HOME".into(), GEMINI_HOME.into());
            let model = model_id(inputs.model).unwrap_or(GEMINI_DEFAULT_MODEL);
            // Its global context file goes into the system instruction beside Gemini's own.
            let file = WrittenFile { var: "ACS_SYSTEM_PROMPT", path: format!("{GEMINI_HOME}/.gemini/GEMINI.md") };
            let program = vec![
                "node".into(),
                path("gemini", "@google/gemini-cli/bundle/gemini.js"),
                "--acp".into(),
                "-m".into(),
                model.to_owned(),
            ];
            writing_files(&mut env, &[(file, inputs.system_prompt.map(str::to_owned))], program)
        }
        _ => {
            env.insert("OPENCODE_CONFIG_CONTENT".into(), opencode_config(inputs.model, inputs.system_prompt, urls));
            let file = WrittenFile { var: "ACS_SYSTEM_PROMPT", path: OPENCODE_INSTRUCTIONS.into() };
            let program = vec![path("opencode", ".bin/opencode"), "acp".into()];
            writing_files(&mut env, &[(file, inputs.system_prompt.map(str::to_owned))], program)
        }
    };
    Launch { argv, env, session_meta }
}

/// Where OpenCode's own HTTP server listens in its machine when the port is
/// free (`opencode acp` tries it first; each machine has its own network).
pub const OPENCODE_PORT: u16 = 4096;

/// A command a warm pool runs in the machine once the runtime's ACP session
/// is open, so that the first prompt finds the work the runtime does lazily
/// already done, without a model call or anything in the session.
///
/// OpenCode builds its per-directory services (file watcher, the built-in
/// provider plugins, the model catalog) at the first prompt, about 0.8 s of
/// its only JavaScript thread; a file search of its HTTP server for the
/// session's directory does the same (docs/runtimes.md). Best effort: when
/// the port is not OpenCode's, the first prompt pays as before.
pub fn warm_up(runtime: &str) -> Option<Vec<String>> {
    (runtime == "opencode").then(|| http_get(OPENCODE_PORT, &opencode_warm_up_path()))
}

/// The file search that makes OpenCode build its services for the session's directory.
fn opencode_warm_up_path() -> String {
    format!("/find/file?query=a&directory={}", crate::acp::client::WORKSPACE.replace('/', "%2F"))
}

/// A GET of `path` on the machine's loopback, through bash's `/dev/tcp` (the machine's `/usr`
/// may have no HTTP client); it exits 0 once the whole answer is read. The request is an
/// argument of `printf %s`, never its format (a query's `%2F` would be a conversion there).
fn http_get(port: u16, path: &str) -> Vec<String> {
    let script = format!(
        "exec 3<>/dev/tcp/127.0.0.1/{port} && printf '%s\\r\\n%s\\r\\n%s\\r\\n\\r\\n' \"GET $1 HTTP/1.1\" \
         'Host: 127.0.0.1' 'Connection: close' >&3 && cat <&3"
    );
    ["bash", "-c", &script, "bash", path].into_iter().map(String::from).collect()
}

/// A file the wrapper writes from a variable before the program starts.
struct WrittenFile {
    var: &'static str,
    path: String,
}

/// `sh -c` that writes each file whose content is given (from its variable)
/// and removes each whose content is not (a prompt dropped by a reapply), then
/// execs `program` (passed as the script's arguments, so nothing is re-quoted).
fn writing_files(
    env: &mut BTreeMap<String, String>,
    files: &[(WrittenFile, Option<String>)],
    program: Vec<String>,
) -> Vec<String> {
    let mut script = String::new();
    for (WrittenFile { var, path }, content) in files {
        match content {
            Some(text) => {
                env.insert((*var).to_owned(), text.clone());
                let dir = path.rsplit_once('/').map_or(".", |(d, _)| d);
                script.push_str(&format!("mkdir -p '{dir}' && printf '%s' \"${var}\" > '{path}' && "));
            }
            None => script.push_str(&format!("rm -f '{path}' && ")),
        }
    }
    script.push_str("exec \"$@\"");
    ["sh", "-c", &script, "sh"].into_iter().map(String::from).chain(program).collect()
}

/// `_meta` of `session/new` for a runtime: Claude's adapter takes the system prompt there,
/// appended to Claude Code's own (which carries its tools' instructions).
pub fn session_meta(runtime: &str, system_prompt: Option<&str>) -> Option<serde_json::Value> {
    let prompt = system_prompt.filter(|_| runtime == "claude")?;
    Some(serde_json::json!({"systemPrompt": {"append": prompt}}))
}

/// A TOML basic string (JSON's escapes are a subset of TOML's).
fn toml_str(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// Codex's `config.toml`: the model, the system prompt (as developer
/// instructions, beside Codex's own), and a provider at the configured OpenAI
/// base URL (Codex ignores `OPENAI_BASE_URL`).
pub fn codex_config(model: Option<&str>, base_url: Option<&str>, instructions: Option<&str>) -> String {
    let mut out = String::new();
    if let Some(m) = model {
        out.push_str(&format!("model = {}\n", toml_str(m)));
    }
    if let Some(text) = instructions {
        out.push_str(&format!("developer_instructions = {}\n", toml_str(text)));
    }
    if let Some(url) = base_url {
        out.push_str("model_provider = \"acs\"\n\n[model_providers.acs]\nname = \"acs\"\n");
        out.push_str(&format!("base_url = {}\n", toml_str(url)));
        out.push_str("env_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n");
    }
    out
}

/// opencode's inline configuration: the model (already `provider/model`, its
/// own form), the instructions file when there is a system prompt, and each
/// configured base URL, with the version path its AI SDK providers expect
/// (`/v1` for Anthropic, `/v1beta` for Google; OpenAI's has it).
pub fn opencode_config(model: Option<&str>, system_prompt: Option<&str>, urls: &BaseUrls) -> String {
    // No title agent: its model call per session names the session in OpenCode's own
    // store, which acs never shows, and spends the account's tokens. No snapshots: OpenCode
    // records the workspace in a git store of its own at each step, for its undo, which ACP
    // does not offer (acs's checkpoints do this); in a git workspace it added about 80 ms to
    // every turn's end.
    let mut config = serde_json::json!({
        "$schema": "https://opencode.ai/config.json",
        "agent": {"title": {"disable": true}},
        "snapshot": false,
    });
    if let Some(m) = model {
        config["model"] = m.into();
    }
    if system_prompt.is_some() {
        config["instructions"] = serde_json::json!([OPENCODE_INSTRUCTIONS]);
    }
    for (provider, url, suffix) in
        [("anthropic", &urls.anthropic, "/v1"), ("openai", &urls.openai, ""), ("google", &urls.google, "/v1beta")]
    {
        if let Some(url) = set(url) {
            config["provider"][provider]["options"]["baseURL"] =
                format!("{}{suffix}", url.trim_end_matches('/')).into();
        }
    }
    config.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtimes::pinned;

    fn urls(anthropic: &str, openai: &str, google: &str) -> BaseUrls {
        BaseUrls { anthropic: anthropic.into(), openai: openai.into(), google: google.into() }
    }

    fn run(name: &str, model: Option<&str>, u: &BaseUrls) -> Launch {
        launch(pinned(name).unwrap(), LaunchInputs { model, system_prompt: None, base_urls: u })
    }

    #[test]
    fn claude_runs_the_adapter_with_its_sandbox_variables() {
        let l = run("claude", Some("anthropic/claude-sonnet-4-5"), &urls("http://10.0.0.1:9", "", ""));
        assert_eq!(
            l.argv,
            ["node", "/opt/acs/runtimes/claude/node_modules/@zed-industries/claude-agent-acp/dist/index.js"]
        );
        assert_eq!(l.env["IS_SANDBOX"], "1");
        assert_eq!(l.env["ANTHROPIC_BASE_URL"], "http://10.0.0.1:9");
        assert!(!run("claude", None, &urls(" ", "", "")).env.contains_key("ANTHROPIC_BASE_URL"));
    }

    #[test]
    fn claude_appends_the_system_prompt_through_session_meta() {
        let inputs = LaunchInputs { model: None, system_prompt: Some("Be brief."), base_urls: &urls("", "", "") };
        let l = launch(pinned("claude").unwrap(), inputs);
        assert_eq!(l.session_meta, Some(serde_json::json!({"systemPrompt": {"append": "Be brief."}})));
        assert_eq!(run("claude", None, &urls("", "", "")).session_meta, None);
        assert_eq!(launch(pinned("gemini").unwrap(), inputs).session_meta, None);
    }

    #[test]
    fn gemini_pins_a_model() {
        let u = urls("", "", "http://g");
        let l = run("gemini", Some("google/gemini-2.5-pro"), &u);
        assert_eq!(l.argv[l.argv.len() - 3..], ["--acp", "-m", "gemini-2.5-pro"]);
        assert_eq!(l.env["GOOGLE_GEMINI_BASE_URL"], "http://g");
        assert_eq!(run("gemini", None, &u).argv.last().unwrap(), GEMINI_DEFAULT_MODEL);
    }

    /// Runs a launch's wrapper on this host with its paths moved under `root`
    /// and the program replaced by `true`; returns whether it succeeded.
    fn run_wrapper(l: &Launch, root: &std::path::Path) -> bool {
        let script = l.argv[2].replace("'/home/agent/", &format!("'{}/", root.display()));
        std::process::Command::new("sh").args(["-c", &script, "sh", "true"]).envs(&l.env).status().unwrap().success()
    }

    #[test]
    fn gemini_and_opencode_get_the_system_prompt_as_a_file_and_lose_it_when_it_goes() {
        let root = std::env::temp_dir().join(format!("acs-launch-{}", uuid::Uuid::new_v4().simple()));
        let u = urls("", "", "");
        for (name, file) in
            [("gemini", format!("{GEMINI_HOME}/.gemini/GEMINI.md")), ("opencode", OPENCODE_INSTRUCTIONS.into())]
        {
            let on_host = root.join(file.strip_prefix("/home/agent/").unwrap());
            let with = launch(
                pinned(name).unwrap(),
                LaunchInputs { model: None, system_prompt: Some("Be 'brief'.\n$HOME"), base_urls: &u },
            );
            assert_eq!(with.argv[..2], ["sh", "-c"]);
            assert!(run_wrapper(&with, &root), "{name}");
            assert_eq!(std::fs::read_to_string(&on_host).unwrap(), "Be 'brief'.\n$HOME", "{name}: written as given");
            let without = run(name, None, &u);
            assert!(run_wrapper(&without, &root), "{name}");
            assert!(!on_host.exists(), "{name}: a dropped prompt is removed");
        }
        let with =
            launch(pinned("gemini").unwrap(), LaunchInputs { model: None, system_prompt: Some("x"), base_urls: &u });
        assert_eq!(with.env["GEMINI_CLI_HOME"], GEMINI_HOME);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn codex_writes_its_config_then_execs() {
        let l = run("codex", Some("openai/gpt-5-codex"), &urls("", "http://h:1/v1", ""));
        assert_eq!(l.argv[..2], ["sh", "-c"]);
        assert_eq!(l.argv[3..], ["sh", "/opt/acs/runtimes/codex/node_modules/.bin/codex-acp"]);
        assert!(l.argv[2].contains("> '/home/agent/.codex/config.toml'"), "{}", l.argv[2]);
        assert_eq!(l.env["CODEX_HOME"], CODEX_HOME);
        let config: toml::Value = toml::from_str(&l.env["ACS_CODEX_CONFIG"]).unwrap();
        assert_eq!(config["model"].as_str(), Some("gpt-5-codex"));
        assert_eq!(config["model_provider"].as_str(), Some("acs"));
        assert_eq!(config["model_providers"]["acs"]["base_url"].as_str(), Some("http://h:1/v1"));
        assert_eq!(config["model_providers"]["acs"]["env_key"].as_str(), Some("OPENAI_API_KEY"));
    }

    #[test]
    fn codex_config_quotes_values_and_omits_what_is_not_set() {
        assert_eq!(codex_config(None, None, None), "");
        let c = codex_config(Some("a\"b"), None, Some("Be brief.\nAlways \"cite\"."));
        let v: toml::Value = toml::from_str(&c).unwrap();
        assert_eq!(v["model"].as_str(), Some("a\"b"));
        assert_eq!(v["developer_instructions"].as_str(), Some("Be brief.\nAlways \"cite\"."));
        assert!(v.get("model_provider").is_none());
    }

    #[test]
    fn only_opencode_is_warmed_up_and_with_its_sessions_directory() {
        for runtime in ["acp", "claude", "codex", "gemini"] {
            assert_eq!(warm_up(runtime), None);
        }
        let argv = warm_up("opencode").unwrap();
        assert_eq!(argv, http_get(4096, "/find/file?query=a&directory=%2Fworkspace"));
    }

    #[test]
    fn the_warm_up_get_sends_its_path_as_written_and_reads_the_answer() {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (conn, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut head = Vec::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" || line.is_empty() {
                    break;
                }
                head.push(line);
            }
            (&conn).write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n[]").unwrap();
            head
        });
        let argv = http_get(port, &opencode_warm_up_path());
        let out = std::process::Command::new(&argv[0]).args(&argv[1..]).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        assert!(String::from_utf8_lossy(&out.stdout).ends_with("[]"), "{out:?}");
        let head = server.join().unwrap();
        assert_eq!(head[0], "GET /find/file?query=a&directory=%2Fworkspace HTTP/1.1\r\n");
        assert!(head.contains(&"Host: 127.0.0.1\r\n".to_owned()), "{head:?}");
    }

    #[test]
    fn opencode_gets_its_model_and_base_urls_inline() {
        let l = run("opencode", Some("openai/gpt-5"), &urls("http://a/", "http://o/v1", ""));
        assert_eq!(l.argv[3..], ["sh", "/opt/acs/runtimes/opencode/node_modules/.bin/opencode", "acp"]);
        let c: serde_json::Value = serde_json::from_str(&l.env["OPENCODE_CONFIG_CONTENT"]).unwrap();
        assert_eq!(c["model"], "openai/gpt-5");
        assert_eq!(c["agent"]["title"]["disable"], true);
        assert_eq!(c["snapshot"], false);
        assert_eq!(c["provider"]["openai"]["options"]["baseURL"], "http://o/v1");
        assert_eq!(c["provider"]["anthropic"]["options"]["baseURL"], "http://a/v1");
        assert!(c["provider"].get("google").is_none());
        assert!(c.get("instructions").is_none());
        let with: serde_json::Value =
            serde_json::from_str(&opencode_config(None, Some("Be brief."), &urls("", "", ""))).unwrap();
        assert_eq!(with["instructions"], serde_json::json!([OPENCODE_INSTRUCTIONS]));
    }
}
