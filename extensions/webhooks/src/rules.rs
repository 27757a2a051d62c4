//! Plain rules of webhook endpoints: which event types exist, filter syntax
//! and matching, URL checks at save, and the retry schedule.

/// Stages sent as webhooks and the states each may carry (spec 6.1).
pub const STAGES: &[(&str, &[&str])] = &[
    ("provision", &["started", "done", "failed"]),
    ("clone", &["started", "done", "failed"]),
    ("packages", &["started", "done", "failed"]),
    ("network", &["started", "done", "failed"]),
    ("broker", &["started", "done", "failed"]),
    ("setup", &["started", "done", "failed"]),
    ("checkpoint_restore", &["started", "done", "failed"]),
    ("checkpoint", &["done", "failed"]),
    ("connection", &["started", "done"]),
    ("reattach", &["started", "done", "failed", "interrupted"]),
    ("wake", &["failed"]),
    ("turn", &["started", "done", "failed", "interrupted"]),
    ("request", &["started", "done"]),
    ("model", &["done", "failed"]),
    ("session", &["done"]),
    ("sandbox", &["done"]),
    ("configuration", &["done", "failed"]),
    ("terminate", &["done"]),
];

/// Retired filters: still accepted at save, never sent.
pub const RETIRED: &[&str] =
    &["conversation.caller_tool.started", "conversation.caller_tool.done", "conversation.caller_tool.*"];

/// Filters of an endpoint created without `event_types`.
pub const DEFAULT_TYPES: &[&str] =
    &["conversation.turn.done", "conversation.turn.failed", "conversation.provision.failed"];

/// The type of a test event (`POST /api/webhooks/{id}/test`).
pub const TEST_TYPE: &str = "webhook.test";

pub const MAX_ATTEMPTS: i64 = 8;
/// Events in a row that exhaust their attempts before an endpoint is disabled.
pub const DISABLE_AFTER: i64 = 5;
/// Bytes of each answer kept in the delivery log.
pub const BODY_KEPT: usize = 4096;
pub const MAX_DESCRIPTION: usize = 500;
pub const MAX_URL: usize = 2048;
pub const MAX_FILTERS: usize = 64;

/// The webhook type of a stage event, when that stage and state are sent.
pub fn event_type(stage: &str, state: &str) -> Option<String> {
    STAGES
        .iter()
        .any(|(s, states)| *s == stage && states.contains(&state))
        .then(|| format!("conversation.{stage}.{state}"))
}

/// Whether `filter` may be saved: `*`, a known `conversation.<stage>.*`, a known exact type, or a retired one.
pub fn valid_filter(filter: &str) -> bool {
    if filter == "*" || RETIRED.contains(&filter) {
        return true;
    }
    let Some(rest) = filter.strip_prefix("conversation.") else { return false };
    let Some((stage, state)) = rest.split_once('.') else { return false };
    if state == "*" { STAGES.iter().any(|(s, _)| *s == stage) } else { event_type(stage, state).is_some() }
}

/// Whether an event of `event_type` goes to an endpoint with `filters`.
pub fn matches(filters: &[String], event_type: &str) -> bool {
    filters.iter().any(|f| {
        f == "*"
            || f == event_type
            || f.strip_suffix('*').is_some_and(|prefix| prefix.ends_with('.') && event_type.starts_with(prefix))
    })
}

/// Checks an endpoint URL at save: absolute http(s) with a host and no credentials.
pub fn check_url(url: &str, allow_http: bool) -> Result<(), &'static str> {
    if url.len() > MAX_URL {
        return Err("should be at most 2048 characters");
    }
    let parsed = reqwest::Url::parse(url).map_err(|_| "is not a valid URL")?;
    match parsed.scheme() {
        "https" => {}
        "http" if allow_http => {}
        "http" => return Err("must use https:// (http:// is not permitted on this instance)"),
        _ => return Err("must be an https:// URL"),
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("must name a host");
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("must not carry credentials");
    }
    Ok(())
}

/// Seconds to wait after failed attempt `attempt` (1-based) before the next.
pub fn retry_delay(schedule: &[f64], attempt: i64) -> f64 {
    let i = (attempt.max(1) - 1) as usize;
    schedule.get(i).or(schedule.last()).copied().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_at_save() {
        for ok in ["*", "conversation.turn.done", "conversation.turn.*", "conversation.wake.failed"] {
            assert!(valid_filter(ok), "{ok}");
        }
        for retired in RETIRED {
            assert!(valid_filter(retired), "{retired}");
        }
        for bad in [
            "conversation.turn.don",
            "conversation.nope.*",
            "conversation.wake.done",
            "conversation.*",
            "turn.done",
            "conversation.turn",
            "",
            "conversation.caller_tool.failed",
        ] {
            assert!(!valid_filter(bad), "{bad}");
        }
    }

    #[test]
    fn matching() {
        let f = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(matches(&f(&["*"]), "conversation.turn.done"));
        assert!(matches(&f(&["conversation.turn.*"]), "conversation.turn.failed"));
        assert!(!matches(&f(&["conversation.turn.*"]), "conversation.turnover.done"));
        assert!(matches(&f(&["conversation.turn.done"]), "conversation.turn.done"));
        assert!(!matches(&f(&["conversation.turn.done"]), "conversation.turn.failed"));
        assert!(!matches(&f(RETIRED), "conversation.turn.done"));
        assert!(!matches(&f(&[]), "conversation.turn.done"));
    }

    #[test]
    fn sent_types() {
        assert_eq!(event_type("turn", "done").as_deref(), Some("conversation.turn.done"));
        assert_eq!(event_type("config", "done"), None);
        assert_eq!(event_type("checkpoint", "started"), None);
        assert_eq!(event_type("admission_refused", "failed"), None);
    }

    #[test]
    fn urls_at_save() {
        assert!(check_url("https://example.com/hook", false).is_ok());
        assert!(check_url("http://example.com/hook", false).is_err());
        assert!(check_url("http://example.com/hook", true).is_ok());
        assert!(check_url("https://user:pw@example.com/", false).is_err());
        assert!(check_url("https://user@example.com/", false).is_err());
        assert!(check_url("ftp://example.com/", true).is_err());
        assert!(check_url("not a url", true).is_err());
        assert!(check_url(&format!("https://example.com/{}", "a".repeat(2048)), false).is_err());
    }

    #[test]
    fn schedule_repeats_its_last_delay() {
        let s = [1.0, 2.0];
        assert_eq!(retry_delay(&s, 1), 1.0);
        assert_eq!(retry_delay(&s, 2), 2.0);
        assert_eq!(retry_delay(&s, 7), 2.0);
    }
}
