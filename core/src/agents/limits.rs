//! Execution limits (spec 4.1 create rule 7; the agent field
//! `execution_limits`, docs/conversations.md "Execution limits"). A limit
//! map names some of [`KEYS`], each an integer above zero. Requests inherit
//! the host ceilings (`[limits.execution]`; this server has no per-account
//! ceilings), the stricter value winning. Keys the deployment configures as
//! policy may not be set by a request at all. This server enforces no limit
//! yet, so a conversation whose effective limits are not empty is refused.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use serde_json::{Map, Value};

use crate::config::ExecutionLimitsConfig;
use crate::error::{ApiError, ApiResult};

/// The limit keys a map may hold.
pub const KEYS: [&str; 3] = ["max_turn_seconds", "max_output_tokens", "max_turns"];

/// Limits by key.
pub type Limits = BTreeMap<String, u64>;

fn error(code: &str, message: String) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
}

/// A limit map as sent: known keys with integers above zero
/// (422 `execution_limits_invalid` otherwise).
pub fn parse(map: &Map<String, Value>) -> ApiResult<Limits> {
    map.iter()
        .map(|(k, v)| {
            if !KEYS.contains(&k.as_str()) {
                let known = KEYS.join(", ");
                return Err(error("execution_limits_invalid", format!("`{k}` is not a limit; known: {known}.")));
            }
            match v.as_u64().filter(|n| *n > 0 && i64::try_from(*n).is_ok()) {
                Some(n) => Ok((k.clone(), n)),
                None => Err(error("execution_limits_invalid", format!("`{k}` must be an integer above zero."))),
            }
        })
        .collect()
}

/// The host ceilings of the configuration.
pub fn ceilings(cfg: &ExecutionLimitsConfig) -> Limits {
    [
        ("max_turn_seconds", cfg.max_turn_seconds),
        ("max_output_tokens", cfg.max_output_tokens),
        ("max_turns", cfg.max_turns),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.filter(|n| *n > 0).map(|n| (k.to_owned(), n)))
    .collect()
}

/// A key the deployment sets as policy may not be requested (422 `execution_limits_invalid`).
pub fn check_policy(limits: &Limits, policy: &[String]) -> ApiResult<()> {
    match limits.keys().find(|k| policy.contains(k)) {
        Some(k) => Err(error(
            "execution_limits_invalid",
            format!("`{k}` is set by this deployment's policy and cannot be requested."),
        )),
        None => Ok(()),
    }
}

/// A request above an inherited ceiling is 422 `execution_limits_widen`.
pub fn check_widen(limits: &Limits, ceilings: &Limits) -> ApiResult<()> {
    for (k, v) in limits {
        if let Some(c) = ceilings.get(k).filter(|c| v > c) {
            return Err(error("execution_limits_widen", format!("`{k}` = {v} is above the ceiling of {c}.")));
        }
    }
    Ok(())
}

/// The request merged with the ceilings, the stricter value of each key winning.
pub fn effective(limits: &Limits, ceilings: &Limits) -> Limits {
    let mut out = ceilings.clone();
    for (k, v) in limits {
        out.entry(k.clone()).and_modify(|c| *c = (*c).min(*v)).or_insert(*v);
    }
    out
}

/// The checks of an agent's map at create and PATCH: well formed, no policy
/// key, within the ceilings. An agent may hold limits this server cannot
/// enforce yet; its conversations are refused ([`check_launch`]).
pub fn check_agent(cfg: &ExecutionLimitsConfig, map: Option<&Map<String, Value>>) -> ApiResult<Limits> {
    let limits = map.map(parse).transpose()?.unwrap_or_default();
    check_policy(&limits, &cfg.policy)?;
    check_widen(&limits, &ceilings(cfg))?;
    Ok(limits)
}

/// The checks of a conversation start on an agent with `map`: those of
/// [`check_agent`], then 422 `execution_limits_unsupported` when the
/// effective limits are not empty (none is enforced by this server).
pub fn check_launch(cfg: &ExecutionLimitsConfig, map: Option<&Map<String, Value>>) -> ApiResult<()> {
    let limits = check_agent(cfg, map)?;
    let effective = effective(&limits, &ceilings(cfg));
    if effective.is_empty() {
        return Ok(());
    }
    let keys: Vec<&str> = effective.keys().map(String::as_str).collect();
    Err(error(
        "execution_limits_unsupported",
        format!("This server enforces no execution limit yet; the effective limits name {}.", keys.join(", ")),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn code(r: ApiResult<impl std::fmt::Debug>) -> String {
        r.unwrap_err().error.clone()
    }

    fn limits(pairs: &[(&str, u64)]) -> Limits {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }

    #[test]
    fn known_keys_with_positive_integers_parse() {
        let l = parse(&map(json!({"max_turn_seconds": 600, "max_output_tokens": 1}))).unwrap();
        assert_eq!(l, limits(&[("max_turn_seconds", 600), ("max_output_tokens", 1)]));
        assert!(parse(&Map::new()).unwrap().is_empty());
    }

    #[test]
    fn unknown_keys_and_wrong_values_are_invalid() {
        for bad in [
            json!({"max_memory": 1}),
            json!({"max_turns": 0}),
            json!({"max_turns": -1}),
            json!({"max_turns": 1.5}),
            json!({"max_turns": "10"}),
            json!({"max_turns": null}),
            json!({"max_turns": u64::MAX}),
        ] {
            assert_eq!(code(parse(&map(bad.clone()))), "execution_limits_invalid", "{bad}");
        }
    }

    #[test]
    fn ceilings_skip_unset_and_zero() {
        let cfg = ExecutionLimitsConfig { max_turn_seconds: Some(60), max_turns: Some(0), ..Default::default() };
        assert_eq!(ceilings(&cfg), limits(&[("max_turn_seconds", 60)]));
    }

    #[test]
    fn a_policy_key_is_invalid_in_a_request() {
        let policy = vec!["max_turns".to_owned()];
        assert_eq!(code(check_policy(&limits(&[("max_turns", 3)]), &policy)), "execution_limits_invalid");
        assert!(check_policy(&limits(&[("max_turn_seconds", 3)]), &policy).is_ok());
    }

    #[test]
    fn above_a_ceiling_widens_at_or_below_does_not() {
        let c = limits(&[("max_turn_seconds", 60)]);
        assert_eq!(code(check_widen(&limits(&[("max_turn_seconds", 61)]), &c)), "execution_limits_widen");
        assert!(check_widen(&limits(&[("max_turn_seconds", 60), ("max_turns", 9)]), &c).is_ok());
    }

    #[test]
    fn the_stricter_value_wins() {
        let c = limits(&[("max_turn_seconds", 60), ("max_turns", 5)]);
        let e = effective(&limits(&[("max_turn_seconds", 30), ("max_output_tokens", 100)]), &c);
        assert_eq!(e, limits(&[("max_turn_seconds", 30), ("max_turns", 5), ("max_output_tokens", 100)]));
    }

    #[test]
    fn a_launch_with_any_effective_limit_is_unsupported() {
        let none = ExecutionLimitsConfig::default();
        assert!(check_launch(&none, None).is_ok());
        assert!(check_launch(&none, Some(&Map::new())).is_ok());
        let asked = map(json!({"max_turns": 2}));
        assert_eq!(code(check_launch(&none, Some(&asked))), "execution_limits_unsupported");
        let ceiling = ExecutionLimitsConfig { max_turns: Some(4), ..Default::default() };
        assert_eq!(code(check_launch(&ceiling, None)), "execution_limits_unsupported", "a ceiling is inherited");
        assert!(check_agent(&ceiling, None).unwrap().is_empty(), "an agent without limits is fine");
    }
}
