//! The link attempt's state machine (spec 3.1) and the sign-in limits
//! (spec 4.3, 8), as pure functions: the store and the poller act on what
//! these decide.

use uuid::Uuid;

/// Open sign-ins an account may have.
pub const MAX_OPEN_ATTEMPTS: u64 = 3;
/// Sign-ins an account may start per hour (cancelled ones count).
pub const MAX_STARTS_PER_HOUR: u64 = 10;
pub const HOUR_MICROS: i64 = 3_600_000_000;
/// `slow_down` (RFC 8628 3.5) adds this to the polling interval.
pub const SLOW_DOWN_SECONDS: u64 = 5;
pub const NAME_MAX: usize = 200;

/// What a create body asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Link { name: String },
    Reconnect { grant_id: Uuid },
}

/// Exactly one of `name` (1 to 200 characters) or `grant_id`; `Err` names the
/// field and what is wrong with it.
pub fn request(name: Option<&str>, grant_id: Option<Uuid>) -> Result<Request, (&'static str, String)> {
    match (name, grant_id) {
        (Some(_), Some(_)) => Err(("name", "give either name or grant_id, not both".into())),
        (None, None) => Err(("name", "give name (a new link) or grant_id (a reconnect)".into())),
        (Some(name), None) => Ok(Request::Link { name: check_name(name).map_err(|m| ("name", m))? }),
        (None, Some(grant_id)) => Ok(Request::Reconnect { grant_id }),
    }
}

/// A subscription's name, trimmed: 1 to 200 characters.
pub fn check_name(name: &str) -> Result<String, String> {
    let name = name.trim();
    if name.is_empty() {
        return Err("can't be blank".into());
    }
    if name.chars().count() > NAME_MAX {
        return Err(format!("should be at most {NAME_MAX} character(s)"));
    }
    Ok(name.to_owned())
}

/// Why a new attempt may not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartRefusal {
    /// The subscription already has an open sign-in.
    Pending {
        attempt_id: Uuid,
    },
    Exceeded {
        count: u64,
        limit: u64,
    },
    RateLimited {
        limit: u64,
        retry_after_seconds: u64,
    },
    GrantLimit {
        count: u64,
        limit: u64,
    },
}

/// What the limits look at when an attempt starts.
pub struct StartFacts {
    /// The open attempt of the subscription being reconnected, if any.
    pub pending_for_grant: Option<Uuid>,
    pub open: u64,
    /// Start times (µs) of the account's attempts in the last hour.
    pub starts_last_hour: Vec<i64>,
    /// Subscriptions held (for a new link), and the ceiling.
    pub grants: Option<(u64, u64)>,
    pub now: i64,
}

pub fn may_start(f: &StartFacts) -> Result<(), StartRefusal> {
    if let Some(attempt_id) = f.pending_for_grant {
        return Err(StartRefusal::Pending { attempt_id });
    }
    if f.open >= MAX_OPEN_ATTEMPTS {
        return Err(StartRefusal::Exceeded { count: f.open, limit: MAX_OPEN_ATTEMPTS });
    }
    let recent: Vec<i64> = f.starts_last_hour.iter().copied().filter(|at| *at > f.now - HOUR_MICROS).collect();
    if recent.len() as u64 >= MAX_STARTS_PER_HOUR {
        // A slot frees when the oldest start in the window leaves it.
        let oldest = recent.iter().copied().min().unwrap_or(f.now);
        let wait = (oldest + HOUR_MICROS - f.now).max(0);
        let retry_after_seconds = u64::try_from((wait + 999_999) / 1_000_000).unwrap_or(1).max(1);
        return Err(StartRefusal::RateLimited { limit: MAX_STARTS_PER_HOUR, retry_after_seconds });
    }
    if let Some((count, limit)) = f.grants
        && count >= limit
    {
        return Err(StartRefusal::GrantLimit { count, limit });
    }
    Ok(())
}

/// What the vendor's token endpoint answered one poll (RFC 8628 3.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PollAnswer {
    Pending,
    SlowDown,
    /// `expired_token`: the device code ran out.
    Expired,
    /// `access_denied`: the person refused.
    Denied,
    /// Any other OAuth error (`invalid_grant`, `invalid_client`, ...).
    OAuthError(String),
    /// No answer, or one that could not be read.
    Unreachable,
    /// Tokens: the sign-in was approved.
    Approved,
}

/// What happens to a pending attempt after one poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PollMove {
    /// Still pending: poll again after `interval` seconds; `unreachable` is
    /// the new `auth_unreachable`.
    Wait {
        interval: u64,
        unreachable: bool,
    },
    Expire,
    Fail(&'static str),
    /// Store the tokens (the completion decides the rest).
    Complete,
}

pub fn after_poll(answer: &PollAnswer, interval: u64) -> PollMove {
    match answer {
        PollAnswer::Pending => PollMove::Wait { interval, unreachable: false },
        PollAnswer::SlowDown => PollMove::Wait { interval: interval + SLOW_DOWN_SECONDS, unreachable: false },
        PollAnswer::Unreachable => PollMove::Wait { interval, unreachable: true },
        PollAnswer::Expired => PollMove::Expire,
        PollAnswer::Denied => PollMove::Fail("authorization_failed"),
        // The device code is not (or no longer) one the vendor knows.
        PollAnswer::OAuthError(e) if e == "invalid_grant" => PollMove::Fail("invalid_sign_in"),
        PollAnswer::OAuthError(_) => PollMove::Fail("exchange_failed"),
        PollAnswer::Approved => PollMove::Complete,
    }
}

/// What the completion of an approved sign-in looks at, read in its transaction.
#[derive(Clone, Copy)]
pub struct CompletionFacts<'a> {
    pub request: &'a Request,
    /// The reconnected subscription: its revision now and at the start, and its status.
    pub grant: Option<(i64, &'a str)>,
    pub revision_at_start: Option<i64>,
    /// Another of the account's subscriptions holding the same vendor account.
    pub linked_elsewhere: Option<Uuid>,
    pub name_taken: bool,
    pub grants: u64,
    pub limit: u64,
    pub linking_enabled: bool,
    pub owner_suspended: bool,
}

/// A completion that stores nothing: the attempt fails with this reason
/// (and the subscription it names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub reason: &'static str,
    pub grant_id: Option<Uuid>,
}

pub fn complete(f: &CompletionFacts) -> Result<(), Refused> {
    let refuse = |reason, grant_id| Err(Refused { reason, grant_id });
    if f.owner_suspended {
        return refuse("owner_ineligible", None);
    }
    match f.request {
        Request::Link { .. } => {
            if !f.linking_enabled {
                return refuse("linking_disabled", None);
            }
            if let Some(other) = f.linked_elsewhere {
                return refuse("account_already_linked", Some(other));
            }
            if f.grants >= f.limit {
                return refuse("grant_limit_reached", None);
            }
            if f.name_taken {
                return refuse("name_taken", None);
            }
        }
        Request::Reconnect { grant_id } => {
            let Some((revision, _status)) = f.grant else { return refuse("grant_not_found", Some(*grant_id)) };
            // Reconnected or disconnected since the attempt began: what is there is left alone.
            if Some(revision) != f.revision_at_start {
                return refuse("stale_grant", Some(*grant_id));
            }
            if let Some(other) = f.linked_elsewhere {
                return refuse("account_already_linked", Some(other));
            }
        }
    }
    Ok(())
}

/// The state an attempt shows: a pending one past its expiry reads `expired`
/// before the poller writes so.
pub fn state_now(state: &str, expires_at: i64, now: i64) -> &str {
    if state == "pending" && expires_at <= now { "expired" } else { state }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> StartFacts {
        StartFacts {
            pending_for_grant: None,
            open: 0,
            starts_last_hour: vec![],
            grants: Some((0, 5)),
            now: 10 * HOUR_MICROS,
        }
    }

    #[test]
    fn a_request_names_exactly_one_target() {
        let id = Uuid::new_v4();
        assert!(request(Some("a"), Some(id)).is_err());
        assert!(request(None, None).is_err());
        assert!(request(Some("  "), None).is_err());
        assert!(request(Some(&"x".repeat(201)), None).is_err());
        assert_eq!(request(Some(&"é".repeat(200)), None), Ok(Request::Link { name: "é".repeat(200) }));
        assert_eq!(request(None, Some(id)), Ok(Request::Reconnect { grant_id: id }));
    }

    #[test]
    fn limits_at_their_boundaries() {
        let mut f = facts();
        f.open = 2;
        assert_eq!(may_start(&f), Ok(()));
        f.open = 3;
        assert_eq!(may_start(&f), Err(StartRefusal::Exceeded { count: 3, limit: 3 }));
        let mut f = facts();
        f.pending_for_grant = Some(Uuid::nil());
        assert_eq!(may_start(&f), Err(StartRefusal::Pending { attempt_id: Uuid::nil() }));
        let mut f = facts();
        f.starts_last_hour = (0..9).map(|i| f.now - i * 1_000_000).collect();
        assert_eq!(may_start(&f), Ok(()));
        f.starts_last_hour.push(f.now - HOUR_MICROS + 30_000_000);
        assert_eq!(may_start(&f), Err(StartRefusal::RateLimited { limit: 10, retry_after_seconds: 30 }));
        // A start older than an hour no longer counts.
        f.starts_last_hour.pop();
        f.starts_last_hour.push(f.now - HOUR_MICROS);
        assert_eq!(may_start(&f), Ok(()));
        let mut f = facts();
        f.grants = Some((5, 5));
        assert_eq!(may_start(&f), Err(StartRefusal::GrantLimit { count: 5, limit: 5 }));
        f.grants = None;
        assert_eq!(may_start(&f), Ok(()));
    }

    #[test]
    fn polls_move_the_attempt() {
        assert_eq!(after_poll(&PollAnswer::Pending, 5), PollMove::Wait { interval: 5, unreachable: false });
        assert_eq!(after_poll(&PollAnswer::SlowDown, 5), PollMove::Wait { interval: 10, unreachable: false });
        assert_eq!(after_poll(&PollAnswer::Unreachable, 5), PollMove::Wait { interval: 5, unreachable: true });
        assert_eq!(after_poll(&PollAnswer::Expired, 5), PollMove::Expire);
        assert_eq!(after_poll(&PollAnswer::Denied, 5), PollMove::Fail("authorization_failed"));
        assert_eq!(after_poll(&PollAnswer::OAuthError("invalid_grant".into()), 5), PollMove::Fail("invalid_sign_in"));
        assert_eq!(after_poll(&PollAnswer::OAuthError("invalid_client".into()), 5), PollMove::Fail("exchange_failed"));
        assert_eq!(after_poll(&PollAnswer::Approved, 5), PollMove::Complete);
    }

    #[test]
    fn completions_refuse_what_changed() {
        let link = Request::Link { name: "a".into() };
        let base = CompletionFacts {
            request: &link,
            grant: None,
            revision_at_start: None,
            linked_elsewhere: None,
            name_taken: false,
            grants: 0,
            limit: 5,
            linking_enabled: true,
            owner_suspended: false,
        };
        assert_eq!(complete(&base), Ok(()));
        let reason = |f: CompletionFacts| complete(&f).unwrap_err().reason;
        assert_eq!(reason(CompletionFacts { linking_enabled: false, ..base }), "linking_disabled");
        let base = CompletionFacts { linking_enabled: true, ..base };
        let other = Uuid::new_v4();
        let refused = complete(&CompletionFacts { linked_elsewhere: Some(other), ..base }).unwrap_err();
        assert_eq!(refused, Refused { reason: "account_already_linked", grant_id: Some(other) });
        let base = CompletionFacts { linked_elsewhere: None, ..base };
        assert_eq!(reason(CompletionFacts { grants: 5, ..base }), "grant_limit_reached");
        let base = CompletionFacts { grants: 0, ..base };
        assert_eq!(reason(CompletionFacts { name_taken: true, ..base }), "name_taken");
        let base = CompletionFacts { name_taken: false, ..base };
        assert_eq!(reason(CompletionFacts { owner_suspended: true, ..base }), "owner_ineligible");

        let id = Uuid::new_v4();
        let reconnect = Request::Reconnect { grant_id: id };
        let base = CompletionFacts {
            request: &reconnect,
            grant: Some((2, "active")),
            revision_at_start: Some(2),
            linking_enabled: false,
            owner_suspended: false,
            ..base
        };
        // A reconnect needs no flag.
        assert_eq!(complete(&base), Ok(()));
        assert_eq!(reason(CompletionFacts { grant: Some((3, "disconnected")), ..base }), "stale_grant");
        let base = CompletionFacts { grant: Some((2, "active")), ..base };
        assert_eq!(reason(CompletionFacts { grant: None, ..base }), "grant_not_found");
    }

    #[test]
    fn a_pending_attempt_past_expiry_reads_expired() {
        assert_eq!(state_now("pending", 10, 10), "expired");
        assert_eq!(state_now("pending", 11, 10), "pending");
        assert_eq!(state_now("cancelled", 1, 10), "cancelled");
    }
}
