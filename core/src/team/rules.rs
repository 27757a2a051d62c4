//! The rules of schedule bodies (spec 2.6, 8) and of their next run.

use uuid::Uuid;

use super::cron;
use super::model::{TeamScheduleCreateRequest, TeamScheduleUpdateRequest};
use super::store::ScheduleRow;
use crate::error::ApiResult;
use crate::http::extract::Validator;

pub const MAX_PROMPT: usize = 20_000;
pub const MAX_NAME: usize = 120;

/// What a run's outcome says when the teammate's conversation was mid-turn.
pub const BUSY: &str = "teammate was busy";

/// When an enabled schedule runs next after `now`; null while disabled.
pub fn next_run(enabled: bool, schedule: &cron::Schedule, now: i64) -> Option<i64> {
    if enabled { schedule.next_after(now) } else { None }
}

fn check_prompt(v: &mut Validator, prompt: &str) {
    let n = prompt.chars().count();
    v.check(n >= 1, "prompt", "should be at least 1 character(s)");
    v.check(n <= MAX_PROMPT, "prompt", "should be at most 20000 character(s)");
    v.check(n == 0 || !prompt.trim().is_empty(), "prompt", "can't be blank");
}

fn check_name(v: &mut Validator, name: Option<&str>) {
    v.check(name.is_none_or(|n| n.chars().count() <= MAX_NAME), "name", "should be at most 120 character(s)");
}

fn check_cron(v: &mut Validator, expr: &str) -> Option<cron::Schedule> {
    match cron::parse(expr) {
        Ok(s) => Some(s),
        Err(msg) => {
            v.check(false, "cron", &msg);
            None
        }
    }
}

/// A new schedule from a create body, or 422 naming each bad field.
pub fn new_schedule(
    req: TeamScheduleCreateRequest,
    (account_id, agent_id): (Uuid, Uuid),
    now: i64,
) -> ApiResult<ScheduleRow> {
    let mut v = Validator::default();
    let schedule = check_cron(&mut v, &req.cron);
    check_prompt(&mut v, &req.prompt);
    check_name(&mut v, req.name.as_deref());
    v.finish()?;
    let enabled = req.enabled.unwrap_or(true);
    Ok(ScheduleRow {
        id: Uuid::now_v7(),
        account_id,
        agent_id,
        name: req.name,
        cron: req.cron.trim().to_owned(),
        prompt: req.prompt,
        one_off: req.one_off.unwrap_or(false),
        enabled,
        next_run_at: schedule.and_then(|s| next_run(enabled, &s, now)),
        last_run_at: None,
        last_conversation_id: None,
        last_error: None,
        inserted_at: now,
        updated_at: now,
    })
}

/// The schedule with a PATCH applied (an omitted field unchanged), its next
/// run worked out again from `now`, or 422 naming each bad field.
pub fn updated_schedule(mut s: ScheduleRow, req: TeamScheduleUpdateRequest, now: i64) -> ApiResult<ScheduleRow> {
    let mut v = Validator::default();
    let schedule = check_cron(&mut v, req.cron.as_deref().unwrap_or(&s.cron));
    if let Some(p) = &req.prompt {
        check_prompt(&mut v, p);
    }
    if let Some(n) = &req.name {
        check_name(&mut v, n.as_deref());
    }
    v.finish()?;
    if let Some(c) = req.cron {
        s.cron = c.trim().to_owned();
    }
    if let Some(p) = req.prompt {
        s.prompt = p;
    }
    if let Some(n) = req.name {
        s.name = n;
    }
    if let Some(o) = req.one_off {
        s.one_off = o;
    }
    if let Some(e) = req.enabled {
        s.enabled = e;
    }
    s.next_run_at = schedule.and_then(|c| next_run(s.enabled, &c, now));
    s.updated_at = now;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    const NOW: i64 = 1_773_480_413_000_000; // 2026-03-14 09:26:53 UTC

    fn create(body: serde_json::Value) -> ApiResult<ScheduleRow> {
        new_schedule(serde_json::from_value(body).unwrap(), (Uuid::nil(), Uuid::nil()), NOW)
    }

    fn fields(r: ApiResult<ScheduleRow>) -> Vec<String> {
        r.unwrap_err().errors.take().unwrap_or_default().into_keys().collect()
    }

    #[test]
    fn the_now_used_is_what_the_tests_say() {
        assert_eq!(crate::time_fmt::from_micros(NOW), datetime!(2026-03-14 09:26:53 UTC));
    }

    #[test]
    fn a_new_schedule_takes_its_defaults_and_its_next_minute() {
        let s = create(serde_json::json!({"cron": " */5 * * * * ", "prompt": "hi"})).unwrap();
        assert!(s.enabled && !s.one_off);
        assert_eq!(s.cron, "*/5 * * * *");
        assert_eq!(s.next_run_at.map(crate::time_fmt::from_micros), Some(datetime!(2026-03-14 09:30 UTC)));
        let s = create(serde_json::json!({"cron": "@daily", "prompt": "hi", "enabled": false})).unwrap();
        assert_eq!(s.next_run_at, None);
    }

    #[test]
    fn prompt_and_name_are_held_to_their_bounds() {
        let at = |n: usize| "p".repeat(n);
        assert!(create(serde_json::json!({"cron": "@daily", "prompt": at(1)})).is_ok());
        assert!(create(serde_json::json!({"cron": "@daily", "prompt": at(MAX_PROMPT)})).is_ok());
        assert_eq!(fields(create(serde_json::json!({"cron": "@daily", "prompt": at(MAX_PROMPT + 1)}))), ["prompt"]);
        assert_eq!(fields(create(serde_json::json!({"cron": "@daily", "prompt": ""}))), ["prompt"]);
        assert_eq!(fields(create(serde_json::json!({"cron": "@daily", "prompt": "  "}))), ["prompt"]);
        let named = |n: usize| create(serde_json::json!({"cron": "@daily", "prompt": "p", "name": "é".repeat(n)}));
        assert!(named(MAX_NAME).is_ok());
        assert_eq!(fields(named(MAX_NAME + 1)), ["name"]);
        assert_eq!(fields(create(serde_json::json!({"cron": "@reboot", "prompt": ""}))), ["cron", "prompt"]);
    }

    #[test]
    fn an_update_changes_what_it_names_and_moves_the_next_run() {
        let s = create(serde_json::json!({"cron": "@daily", "prompt": "hi", "name": "n"})).unwrap();
        let patch = |b: serde_json::Value| serde_json::from_value::<TeamScheduleUpdateRequest>(b).unwrap();
        let off = updated_schedule(s.clone(), patch(serde_json::json!({"enabled": false})), NOW).unwrap();
        assert_eq!((off.next_run_at, off.name.as_deref(), off.prompt.as_str()), (None, Some("n"), "hi"));
        let on =
            updated_schedule(off, patch(serde_json::json!({"enabled": true, "name": null, "cron": "@hourly"})), NOW)
                .unwrap();
        assert_eq!(on.name, None);
        assert_eq!(on.next_run_at.map(crate::time_fmt::from_micros), Some(datetime!(2026-03-14 10:00 UTC)));
        assert_eq!(fields(updated_schedule(on, patch(serde_json::json!({"cron": "1 2 3"})), NOW)), ["cron"]);
    }
}
