//! The queue's rules, free of storage: which starts may wait, places in a
//! line, the order in which accounts take turns, deadlines, and what a start
//! attempt's outcome makes of a request.

use uuid::Uuid;

use crate::conversations::StartError;
use crate::conversations::model::ConversationCreateRequest;
use crate::error::ApiError;
use crate::refusal::{Capacity, Refusal, Unavailable};

/// A request that waited longer than `queue.max_wait_seconds`.
pub const WAIT_EXPIRED: &str = "queue_wait_expired";
/// The conversation exists but whether its first prompt reached the agent is unknown.
pub const PROMPT_DELIVERY_UNKNOWN: &str = "prompt_delivery_unknown";
/// What a schedule is told of a request its owner cancelled.
pub const CANCELLED: &str = "cancelled";

/// Whether a start may wait in the queue at a ceiling: asked for (or forced,
/// for schedules), and neither carrying images nor naming a sandbox (spec 4.1
/// create rule 8).
pub fn may_queue(req: &ConversationCreateRequest, force: bool) -> bool {
    (force || req.queue == Some(true)) && req.images.as_ref().is_none_or(Vec::is_empty) && req.sandbox_id.is_none()
}

/// Which ceiling a refused start met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ceiling {
    Tenant,
    Fleet,
}

pub fn ceiling(e: &ApiError) -> Option<Ceiling> {
    match e.refusal()? {
        Refusal::Capacity(Capacity::Tenant { .. }) => Some(Ceiling::Tenant),
        Refusal::Capacity(Capacity::Fleet { .. }) => Some(Ceiling::Fleet),
        _ => None,
    }
}

/// Where a request stands in its account's line: `inserted_at`, the id breaking ties.
pub type Place = (i64, Uuid);

/// The one-based position of `me` among the places of its account's queued requests.
pub fn position(me: Place, line: &[Place]) -> i64 {
    1 + line.iter().filter(|p| **p < me).count() as i64
}

/// Round robin across accounts: heads of lines whose account had a start from the queue
/// longest ago go first (`served_at` 0: never), then the older request. An account with
/// many requests waiting thus gets one start per round, not all of them before the others.
pub fn fair_order<T>(heads: &mut [T], key: impl Fn(&T) -> (i64, Place)) {
    heads.sort_by_key(key);
}

/// When a request queued at `inserted_at` (microseconds) stops waiting.
pub fn expires_at(inserted_at: i64, max_wait_seconds: u64) -> i64 {
    inserted_at.saturating_add(i64::try_from(max_wait_seconds).unwrap_or(i64::MAX).saturating_mul(1_000_000))
}

pub fn expired(expires_at: i64, now: i64) -> bool {
    now >= expires_at
}

/// What a start attempt makes of its request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Stays queued for a later pass; `ends_pass` when nothing else can start now either.
    Wait {
        ends_pass: bool,
    },
    Started(Uuid),
    Failed {
        error: String,
        conversation_id: Option<Uuid>,
    },
}

/// Whether a refusal is one to wait out (and whether it ends the pass): a ceiling (the
/// fleet's holds for everyone), a busy or just-ended channel conversation, a machine still
/// being built, or the sandbox service or database out of reach.
fn waits(e: &ApiError) -> Option<bool> {
    match e.refusal()? {
        Refusal::Capacity(Capacity::Fleet { .. }) | Refusal::Unavailable(_) => Some(true),
        Refusal::Capacity(Capacity::Tenant { .. })
        | Refusal::Busy(_)
        | Refusal::Ended(_)
        | Refusal::Provisioning(_) => Some(false),
        Refusal::SelectionDeleted(_) => None,
    }
}

/// The outcome of a queued start (the conversation's id, or why not) as the request's fate.
/// A prompt whose delivery failed after the conversation was created, or failed on a resumed
/// conversation for any reason but a wait (busy, ceiling, machine service out of reach), is
/// `prompt_delivery_unknown`: never sent again.
pub fn verdict(outcome: &Result<Uuid, StartError>) -> Verdict {
    let failed = |error: &str, conversation_id| Verdict::Failed { error: error.to_owned(), conversation_id };
    match outcome {
        Ok(id) => Verdict::Started(*id),
        Err(StartError::Refused(e)) => match waits(e) {
            Some(ends_pass) => Verdict::Wait { ends_pass },
            None => failed(&e.error, None),
        },
        Err(StartError::Undelivered { conversation_id, resumed, error }) => {
            // A database that dropped the connection mid-delivery leaves the outcome unknown.
            let lost = error.refusal() == Some(&Refusal::Unavailable(Unavailable::Database));
            match waits(error) {
                Some(ends_pass) if *resumed && !lost => Verdict::Wait { ends_pass },
                _ => failed(PROMPT_DELIVERY_UNKNOWN, Some(*conversation_id)),
            }
        }
        // The worker never declines a launch.
        Err(StartError::LaunchDeclined) => failed("internal_error", None),
    }
}

/// What is known of a start whose server died after it began (its claim ran out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// The conversation was created and there was no prompt to lose.
    Started,
    /// A prompt may have reached a conversation: never sent again.
    Unknown,
    /// Nothing can have been opened or sent: start as if for the first time.
    Retry,
}

/// `left_conversation`: the conversation the start would have created exists;
/// `may_resume`: the start could have resumed a channel conversation instead.
pub fn recover(left_conversation: bool, has_prompt: bool, may_resume: bool) -> Recovery {
    match (left_conversation, has_prompt) {
        (true, false) => Recovery::Started,
        (true, true) => Recovery::Unknown,
        (false, true) if may_resume => Recovery::Unknown,
        (false, _) => Recovery::Retry,
    }
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;

    use super::*;
    use crate::conversations::model::ImageInput;
    use crate::refusal::{Building, Busy, Ended};

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn tenant() -> ApiError {
        Refusal::Capacity(Capacity::Tenant { active: 1, limit: 1 }).into()
    }

    fn fleet() -> ApiError {
        Refusal::Capacity(Capacity::Fleet { active: 5, limit: 5 }).into()
    }

    fn busy() -> ApiError {
        Refusal::Busy(Busy::Resume).into()
    }

    fn building() -> ApiError {
        Refusal::Provisioning(Building::Start).into()
    }

    fn down() -> ApiError {
        Refusal::Unavailable(Unavailable::Sandboxes).into()
    }

    fn code(status: StatusCode, code: &str) -> ApiError {
        ApiError::new(status, code, "x")
    }

    #[test]
    fn only_asked_for_starts_without_images_or_a_sandbox_may_queue() {
        let mut req = ConversationCreateRequest { queue: Some(true), ..Default::default() };
        assert!(may_queue(&req, false));
        req.images = Some(Vec::new());
        assert!(may_queue(&req, false), "an empty image list carries no image");
        req.images = Some(vec![ImageInput { data: "aGk=".into(), media_type: "image/png".into() }]);
        assert!(!may_queue(&req, false));
        assert!(!may_queue(&req, true), "not even a schedule queues images");
        let req = ConversationCreateRequest { queue: Some(true), sandbox_id: Some(id(1)), ..Default::default() };
        assert!(!may_queue(&req, false));
        let req = ConversationCreateRequest { queue: Some(false), ..Default::default() };
        assert!(!may_queue(&req, false));
        assert!(may_queue(&req, true), "a schedule queues without the flag");
        assert!(!may_queue(&ConversationCreateRequest::default(), false));
    }

    #[test]
    fn ceilings_are_told_apart_and_nothing_else_is_one() {
        assert_eq!(ceiling(&tenant()), Some(Ceiling::Tenant));
        assert_eq!(ceiling(&fleet()), Some(Ceiling::Fleet));
        assert_eq!(ceiling(&building()), None);
        assert_eq!(ceiling(&code(StatusCode::TOO_MANY_REQUESTS, "sandbox_quota_exceeded")), None, "codes are not read");
        assert_eq!(ceiling(&ApiError::rate_limited(5)), None);
    }

    #[test]
    fn positions_are_one_based_in_order_of_arrival_ties_broken_by_id() {
        let line = [(30, id(1)), (10, id(9)), (20, id(2)), (20, id(3))];
        assert_eq!(position((10, id(9)), &line), 1);
        assert_eq!(position((20, id(2)), &line), 2);
        assert_eq!(position((20, id(3)), &line), 3);
        assert_eq!(position((30, id(1)), &line), 4);
        assert_eq!(position((5, id(7)), &[]), 1);
    }

    #[test]
    fn accounts_take_turns_the_least_recently_served_first() {
        // (account, served_at, inserted_at)
        let mut heads = vec![("a", 500, 1), ("b", 0, 9), ("c", 300, 2), ("d", 0, 4)];
        fair_order(&mut heads, |h| (h.1, (h.2, id(h.2 as u128))));
        let order: Vec<&str> = heads.iter().map(|h| h.0).collect();
        assert_eq!(order, ["d", "b", "c", "a"], "never served first (older request first), then by last service");
    }

    #[test]
    fn a_request_expires_at_its_deadline_not_before() {
        let at = expires_at(1_000_000, 3600);
        assert_eq!(at, 3_601_000_000);
        assert!(!expired(at, at - 1));
        assert!(expired(at, at));
        assert_eq!(expires_at(i64::MAX - 5, 3600), i64::MAX, "saturates");
    }

    #[test]
    fn refusals_wait_at_ceilings_and_fail_otherwise() {
        assert_eq!(verdict(&Ok(id(4))), Verdict::Started(id(4)));
        assert_eq!(verdict(&Err(StartError::Refused(tenant()))), Verdict::Wait { ends_pass: false });
        assert_eq!(verdict(&Err(StartError::Refused(fleet()))), Verdict::Wait { ends_pass: true });
        assert_eq!(verdict(&Err(StartError::Refused(busy()))), Verdict::Wait { ends_pass: false });
        let ended = Refusal::Ended(Ended::Other).into();
        assert_eq!(verdict(&Err(StartError::Refused(ended))), Verdict::Wait { ends_pass: false });
        assert_eq!(verdict(&Err(StartError::Refused(building()))), Verdict::Wait { ends_pass: false });
        assert_eq!(verdict(&Err(StartError::Refused(down()))), Verdict::Wait { ends_pass: true });
        for (status, c) in [
            (StatusCode::PAYMENT_REQUIRED, "insufficient_credits"),
            (StatusCode::NOT_FOUND, "not_found"),
            (StatusCode::CONFLICT, "permission_policy_requires_fresh_conversation"),
            (StatusCode::UNPROCESSABLE_ENTITY, "validation_failed"),
        ] {
            assert_eq!(
                verdict(&Err(StartError::Refused(code(status, c)))),
                Verdict::Failed { error: c.into(), conversation_id: None }
            );
        }
    }

    #[test]
    fn a_failed_delivery_is_unknown_unless_a_resume_was_told_to_wait() {
        let unknown = |c| Verdict::Failed { error: PROMPT_DELIVERY_UNKNOWN.into(), conversation_id: Some(c) };
        let undelivered = |resumed, error| Err(StartError::Undelivered { conversation_id: id(7), resumed, error });
        let timeout = || code(StatusCode::GATEWAY_TIMEOUT, "prompt_delivery_timeout");
        let lost = || ApiError::from(Refusal::Unavailable(Unavailable::Database));
        for e in [timeout as fn() -> ApiError, lost, ApiError::internal] {
            assert_eq!(verdict(&undelivered(false, e())), unknown(id(7)));
            assert_eq!(verdict(&undelivered(true, e())), unknown(id(7)));
        }
        // A new conversation's first prompt never waits: the conversation exists.
        assert_eq!(verdict(&undelivered(false, tenant())), unknown(id(7)));
        assert_eq!(verdict(&undelivered(true, tenant())), Verdict::Wait { ends_pass: false });
        assert_eq!(verdict(&undelivered(true, fleet())), Verdict::Wait { ends_pass: true });
        assert_eq!(verdict(&undelivered(true, busy())), Verdict::Wait { ends_pass: false });
        assert_eq!(verdict(&undelivered(true, down())), Verdict::Wait { ends_pass: true });
    }

    #[test]
    fn a_start_cut_short_is_never_sent_twice() {
        assert_eq!(recover(true, false, false), Recovery::Started);
        assert_eq!(recover(true, true, true), Recovery::Unknown);
        assert_eq!(recover(false, true, true), Recovery::Unknown, "a resume may have taken the prompt");
        assert_eq!(recover(false, true, false), Recovery::Retry, "no conversation: nothing was sent");
        assert_eq!(recover(false, false, true), Recovery::Retry);
    }
}
