//! Permission policies (spec 2.1 `PermissionPolicy`, 4.1 create rule 4): a
//! launch may only narrow the agent's policy, and each permission request a
//! runtime makes is decided by title, then ACP tool kind, then `default`.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{Map, Value};

use crate::acp::types::{PermissionOption, PermissionOutcome};
use crate::error::{ApiError, ApiResult};

/// Session config values that put a runtime in a mode where it never asks
/// (Claude `bypassPermissions`/`dontAsk`, Codex `full-access`, Gemini `yolo`).
const NEVER_ASKS: [&str; 4] = ["bypassPermissions", "dontAsk", "full-access", "yolo"];

/// The session config option that selects a runtime's mode.
const MODE_OPTION: &str = "mode";

/// A verdict, ordered from loosest to strictest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    AutoAllow,
    Ask,
    AutoDeny,
}

impl Verdict {
    fn parse(s: &str) -> Option<Verdict> {
        match s {
            "auto_allow" => Some(Verdict::AutoAllow),
            "ask" => Some(Verdict::Ask),
            "auto_deny" => Some(Verdict::AutoDeny),
            _ => None,
        }
    }
}

/// One stored policy (validated when saved; anything unreadable is skipped).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Policy {
    verdicts: BTreeMap<String, Verdict>,
    ask_timeout: Option<u64>,
}

impl Policy {
    pub fn from_map(map: Option<&Map<String, Value>>) -> Policy {
        let mut policy = Policy::default();
        for (key, value) in map.into_iter().flatten() {
            if key == "ask_timeout" {
                policy.ask_timeout = value.as_u64();
            } else if let Some(v) = value.as_str().and_then(Verdict::parse) {
                policy.verdicts.insert(key.clone(), v);
            }
        }
        policy
    }

    /// The verdict for a key on its own: the key, else `default`, else `ask`.
    fn for_key(&self, key: &str) -> Verdict {
        self.verdicts.get(key).or_else(|| self.verdicts.get("default")).copied().unwrap_or(Verdict::Ask)
    }

    /// The verdict this policy names for a tool: its title first, then its kind, then `default`.
    fn named(&self, title: Option<&str>, kind: Option<&str>) -> Option<Verdict> {
        [title, kind]
            .into_iter()
            .flatten()
            .find_map(|k| self.verdicts.get(k))
            .or_else(|| self.verdicts.get("default"))
            .copied()
    }
}

/// The policy a turn runs under: the agent's and the launch's, the stricter
/// winning for each request (so no launch key can loosen anything); a tool
/// neither names (nor covers by `default`) is `ask`.
#[derive(Debug, Clone, PartialEq)]
pub struct Effective {
    pub agent: Policy,
    pub launch: Policy,
    /// `conversations.permission_timeout_seconds`, for when neither sets `ask_timeout`.
    pub global_timeout: u64,
}

impl Effective {
    pub fn decide(&self, title: Option<&str>, kind: Option<&str>) -> Verdict {
        let agent = self.agent.named(title, kind).unwrap_or(Verdict::Ask);
        agent.max(self.launch.named(title, kind).unwrap_or(agent))
    }

    /// How long an `ask` request waits: the shorter `ask_timeout` of the two
    /// policies (else the global timeout), shortened, never lengthened, by
    /// the request's `_meta.service.timeout` (whole seconds, at least 1).
    pub fn ask_wait(&self, request_meta: Option<&Value>) -> Duration {
        let set = [self.agent.ask_timeout, self.launch.ask_timeout].into_iter().flatten().min();
        let requested =
            request_meta.and_then(|m| m.pointer("/service/timeout")).and_then(Value::as_u64).filter(|&s| s >= 1);
        let seconds = [Some(set.unwrap_or(self.global_timeout)), requested].into_iter().flatten().min();
        Duration::from_secs(seconds.unwrap_or(self.global_timeout))
    }
}

fn widens(message: String) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "permission_policy_widens", message)
}

/// Create rule 4: every key of the launch's policy must be at least as
/// strict as the agent's verdict for that key, and its `ask_timeout` no
/// longer than the agent's (or the global timeout when the agent sets none);
/// a nonempty launch policy is refused when the effective session config
/// puts the runtime in a mode that never asks.
pub fn check_launch(
    agent: Option<&Map<String, Value>>,
    launch: Option<&Map<String, Value>>,
    session_config: &Map<String, Value>,
    global_timeout: u64,
) -> ApiResult<()> {
    let Some(launch) = launch.filter(|m| !m.is_empty()) else { return Ok(()) };
    let (agent, narrowing) = (Policy::from_map(agent), Policy::from_map(Some(launch)));
    for (key, verdict) in &narrowing.verdicts {
        if *verdict < agent.for_key(key) {
            return Err(widens(format!(
                "The launch's `{key}` verdict is looser than the agent's; a launch may only narrow."
            )));
        }
    }
    let limit = agent.ask_timeout.unwrap_or(global_timeout);
    if narrowing.ask_timeout.is_some_and(|t| t > limit) {
        return Err(widens(format!("`ask_timeout` may not be longer than the agent's {limit} seconds.")));
    }
    if let Some(mode) = session_config.get(MODE_OPTION).and_then(Value::as_str).filter(|m| NEVER_ASKS.contains(m)) {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "permission_policy_unenforceable",
            format!("The runtime never asks for permission in mode `{mode}`, so a permission policy would not apply."),
        ));
    }
    Ok(())
}

/// The option a policy (or an expiry) answers with: for an allow, an
/// `allow_once` option, else `allow_always`; for a deny, `reject_once`,
/// else `reject_always`. `None` when the request offers no such option.
pub fn pick_option(options: &[PermissionOption], allow: bool) -> Option<&PermissionOption> {
    let kinds: [&str; 2] = if allow { ["allow_once", "allow_always"] } else { ["reject_once", "reject_always"] };
    kinds.iter().find_map(|k| options.iter().find(|o| o.kind == *k))
}

/// The answer that denies a request: its reject option, else the cancelled outcome.
pub fn deny(options: &[PermissionOption]) -> PermissionOutcome {
    match pick_option(options, false) {
        Some(o) => PermissionOutcome::Selected { option_id: o.option_id.clone() },
        None => PermissionOutcome::Cancelled,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    fn effective(agent: Value, launch: Value) -> Effective {
        Effective {
            agent: Policy::from_map(Some(&map(agent))),
            launch: Policy::from_map(Some(&map(launch))),
            global_timeout: 3600,
        }
    }

    fn code(r: ApiResult<()>) -> String {
        r.err().map(|e| e.error.clone()).unwrap_or_default()
    }

    fn check(agent: Value, launch: Value, config: Value) -> String {
        code(check_launch(Some(&map(agent)), Some(&map(launch)), &map(config), 3600))
    }

    #[test]
    fn title_wins_over_kind_and_kind_over_default() {
        let p = effective(json!({"rm -rf": "auto_deny", "execute": "auto_allow", "default": "ask"}), json!({}));
        assert_eq!(p.decide(Some("rm -rf"), Some("execute")), Verdict::AutoDeny);
        assert_eq!(p.decide(Some("ls"), Some("execute")), Verdict::AutoAllow);
        assert_eq!(p.decide(Some("ls"), Some("read")), Verdict::Ask);
        assert_eq!(effective(json!({}), json!({})).decide(None, None), Verdict::Ask);
    }

    #[test]
    fn the_stricter_of_agent_and_launch_wins() {
        let p = effective(json!({"default": "auto_allow"}), json!({"execute": "auto_deny"}));
        assert_eq!(p.decide(Some("ls"), Some("execute")), Verdict::AutoDeny);
        assert_eq!(p.decide(Some("cat"), Some("read")), Verdict::AutoAllow);
        // A title the launch allows cannot undo the agent's deny by kind.
        let p = effective(json!({"default": "auto_allow", "execute": "auto_deny"}), json!({"rm": "auto_allow"}));
        assert_eq!(p.decide(Some("rm"), Some("execute")), Verdict::AutoDeny);
    }

    #[test]
    fn a_launch_may_narrow_but_not_widen() {
        assert_eq!(check(json!({"execute": "auto_allow"}), json!({"execute": "ask"}), json!({})), "");
        assert_eq!(check(json!({}), json!({"execute": "auto_deny", "default": "ask"}), json!({})), "");
        assert_eq!(check(json!({}), json!({"execute": "auto_allow"}), json!({})), "permission_policy_widens");
        assert_eq!(
            check(json!({"default": "auto_deny"}), json!({"read": "ask"}), json!({})),
            "permission_policy_widens"
        );
        assert_eq!(check(json!({"read": "auto_deny"}), json!({"default": "ask"}), json!({})), "");
    }

    #[test]
    fn a_launch_ask_timeout_may_only_shorten() {
        assert_eq!(check(json!({"ask_timeout": 60}), json!({"ask_timeout": 60}), json!({})), "");
        assert_eq!(
            check(json!({"ask_timeout": 60}), json!({"ask_timeout": 61}), json!({})),
            "permission_policy_widens"
        );
        assert_eq!(check(json!({}), json!({"ask_timeout": 3600}), json!({})), "");
        assert_eq!(check(json!({}), json!({"ask_timeout": 3601}), json!({})), "permission_policy_widens");
    }

    #[test]
    fn a_policy_is_unenforceable_in_a_mode_that_never_asks() {
        for mode in NEVER_ASKS {
            let got = check(json!({}), json!({"execute": "auto_deny"}), json!({"mode": mode}));
            assert_eq!(got, "permission_policy_unenforceable", "{mode}");
        }
        assert_eq!(check(json!({}), json!({"execute": "auto_deny"}), json!({"mode": "acceptEdits"})), "");
        // No launch policy, nothing to enforce.
        assert_eq!(code(check_launch(None, Some(&map(json!({}))), &map(json!({"mode": "yolo"})), 3600)), "");
    }

    #[test]
    fn ask_wait_takes_the_shortest_and_meta_only_shortens() {
        let secs = |p: &Effective, meta: Value| p.ask_wait(Some(&meta)).as_secs();
        let p = effective(json!({"ask_timeout": 60}), json!({"ask_timeout": 30}));
        assert_eq!(p.ask_wait(None).as_secs(), 30);
        assert_eq!(secs(&p, json!({"service": {"timeout": 5}})), 5);
        assert_eq!(secs(&p, json!({"service": {"timeout": 500}})), 30);
        assert_eq!(secs(&p, json!({"service": {"timeout": 0}})), 30);
        assert_eq!(effective(json!({}), json!({})).ask_wait(None).as_secs(), 3600);
    }

    #[test]
    fn answers_prefer_once_options_and_deny_falls_back_to_cancelled() {
        let opt = |id: &str, kind: &str| PermissionOption {
            option_id: id.into(),
            kind: kind.into(),
            ..PermissionOption::default()
        };
        let options = [opt("always", "allow_always"), opt("once", "allow_once"), opt("no", "reject_once")];
        assert_eq!(pick_option(&options, true).map(|o| o.option_id.as_str()), Some("once"));
        assert_eq!(deny(&options), PermissionOutcome::Selected { option_id: "no".into() });
        assert_eq!(deny(&options[..2]), PermissionOutcome::Cancelled);
        assert!(pick_option(&[opt("no", "reject_once")], true).is_none());
    }
}
