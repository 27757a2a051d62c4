//! Device login rules: user codes, statuses, and what a poll gets.

/// Seconds between polls (RFC 8628 `interval`).
pub const INTERVAL_SECONDS: u64 = 5;
/// Seconds a login waits for approval.
pub const EXPIRES_IN_SECONDS: u64 = 15 * 60;

/// Consonants only (RFC 8628 section 6.1): no vowels to spell words, no
/// look-alikes; 20^8 codes, about 34 bits.
const ALPHABET: &[u8] = b"BCDFGHJKLMNPQRSTVWXZ";

/// A new user code, `XXXX-XXXX`.
pub fn user_code() -> String {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the operating system's random source failed");
    // 256 is not a multiple of 20; rejection would remove a bias of under
    // 1 in 12 per character, which matters little for a code that lives 15
    // minutes behind a signed-in page and a failed-attempt limit.
    let chars: String = bytes.iter().map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char).collect();
    format!("{}-{}", &chars[..4], &chars[4..])
}

/// A typed user code as stored: upper case, `XXXX-XXXX`; `None` when it
/// cannot be one (so no lookup is spent on it).
pub fn normalize_user_code(given: &str) -> Option<String> {
    let chars: String =
        given.chars().filter(|c| !c.is_whitespace() && *c != '-').map(|c| c.to_ascii_uppercase()).collect();
    (chars.len() == 8 && chars.bytes().all(|b| ALPHABET.contains(&b)))
        .then(|| format!("{}-{}", &chars[..4], &chars[4..]))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Pending,
    Approved,
    Denied,
    /// The key was issued.
    Consumed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Approved => "approved",
            Status::Denied => "denied",
            Status::Consumed => "consumed",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        [Status::Pending, Status::Approved, Status::Denied, Status::Consumed].into_iter().find(|v| v.as_str() == s)
    }
}

/// What a poll gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Poll {
    Unknown,
    Pending,
    SlowDown,
    Denied,
    Expired,
    Spent,
    Issue,
}

/// The answer to a poll at `now` of a login in `status` (times in microseconds).
pub fn poll(status: Status, last_polled_at: Option<i64>, expires_at: i64, now: i64) -> Poll {
    if now >= expires_at {
        return Poll::Expired;
    }
    // A spent code is final whatever the pace, so a client stops at once.
    if status == Status::Consumed {
        return Poll::Spent;
    }
    if last_polled_at.is_some_and(|t| now - t < INTERVAL_SECONDS as i64 * 1_000_000) {
        return Poll::SlowDown;
    }
    match status {
        Status::Pending => Poll::Pending,
        Status::Approved => Poll::Issue,
        Status::Denied => Poll::Denied,
        Status::Consumed => Poll::Spent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000;

    #[test]
    fn user_codes_are_typed_forgivingly() {
        let code = user_code();
        assert_eq!(code.len(), 9);
        assert_eq!(normalize_user_code(&code).as_deref(), Some(code.as_str()));
        assert_eq!(normalize_user_code(" bcdf ghjk ").as_deref(), Some("BCDF-GHJK"));
        assert_eq!(normalize_user_code("bcdf-ghj"), None);
        assert_eq!(normalize_user_code("BCDF-GHJA"), None, "vowels are never in a code");
        assert_eq!(normalize_user_code("BCDF-GHJKL"), None);
    }

    #[test]
    fn polls_at_their_boundaries() {
        let exp = 900 * S;
        assert_eq!(poll(Status::Pending, None, exp, 0), Poll::Pending);
        assert_eq!(poll(Status::Pending, Some(0), exp, 5 * S - 1), Poll::SlowDown);
        assert_eq!(poll(Status::Pending, Some(0), exp, 5 * S), Poll::Pending);
        assert_eq!(poll(Status::Approved, Some(0), exp, 5 * S), Poll::Issue);
        assert_eq!(poll(Status::Approved, None, exp, exp - 1), Poll::Issue);
        assert_eq!(poll(Status::Approved, None, exp, exp), Poll::Expired);
        assert_eq!(poll(Status::Denied, None, exp, 0), Poll::Denied);
        assert_eq!(poll(Status::Consumed, None, exp, 0), Poll::Spent);
        assert_eq!(poll(Status::Consumed, Some(0), exp, 1), Poll::Spent);
        for s in [Status::Pending, Status::Approved, Status::Denied, Status::Consumed] {
            assert_eq!(Status::parse(s.as_str()), Some(s));
        }
    }
}
