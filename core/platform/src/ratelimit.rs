//! Fixed-window rate limits of spec section 8, counted per replica.
//!
//! Three counters: requests per API key, failed authentications per client
//! address, and a coarse ceiling on every request from one address counted
//! before authentication (so it also counts failed and over-quota requests);
//! when the coarse ceiling is spent every key at that address is refused
//! until the window ends.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use uuid::Uuid;

use crate::config::LimitsConfig;

/// Outcome of counting one request: allowed, or refused with seconds to wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Deny { retry_after: u64 },
}

struct Windows<K> {
    limit: u32,
    counts: Mutex<(u64, HashMap<K, u32>)>,
}

impl<K: Hash + Eq> Windows<K> {
    fn new(limit: u32) -> Self {
        Windows { limit, counts: Mutex::new((0, HashMap::new())) }
    }

    /// Counts one event in window `window` and says whether it is within the limit.
    fn hit(&self, key: K, window: u64) -> bool {
        let mut guard = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let (current, map) = &mut *guard;
        if *current != window {
            // A new window starts every counter at zero; dropping the old map
            // also bounds memory to the addresses and keys seen in one window.
            *current = window;
            map.clear();
        }
        let n = map.entry(key).or_insert(0);
        *n = n.saturating_add(1);
        *n <= self.limit
    }

    fn spent(&self, key: &K, window: u64) -> bool {
        let guard = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        guard.0 == window && guard.1.get(key).is_some_and(|n| *n >= self.limit)
    }
}

pub struct RateLimiter {
    window_seconds: u64,
    per_key: Windows<Uuid>,
    failed_auth: Windows<IpAddr>,
    per_address: Windows<IpAddr>,
}

impl RateLimiter {
    pub fn new(cfg: &LimitsConfig) -> Self {
        RateLimiter {
            window_seconds: cfg.window_seconds.max(1),
            per_key: Windows::new(cfg.requests_per_key),
            failed_auth: Windows::new(cfg.failed_auth_per_address),
            per_address: Windows::new(cfg.requests_per_address),
        }
    }

    fn now(&self) -> (u64, u64) {
        let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let window = secs / self.window_seconds;
        let retry_after = (window + 1) * self.window_seconds - secs;
        (window, retry_after.max(1))
    }

    fn verdict(&self, ok: bool, retry_after: u64) -> Verdict {
        if ok { Verdict::Allow } else { Verdict::Deny { retry_after } }
    }

    /// Counts a request from `ip` before authentication (the coarse ceiling).
    pub fn address(&self, ip: IpAddr) -> Verdict {
        let (w, retry) = self.now();
        self.verdict(self.per_address.hit(ip, w), retry)
    }

    /// Counts an authenticated request by key `key_id`.
    pub fn key(&self, key_id: Uuid) -> Verdict {
        let (w, retry) = self.now();
        self.verdict(self.per_key.hit(key_id, w), retry)
    }

    /// Whether `ip` already spent its failed-authentication allowance.
    pub fn failed_auth_spent(&self, ip: IpAddr) -> Verdict {
        let (w, retry) = self.now();
        self.verdict(!self.failed_auth.spent(&ip, w), retry)
    }

    /// Counts one failed authentication from `ip`.
    pub fn failed_auth(&self, ip: IpAddr) -> Verdict {
        let (w, retry) = self.now();
        self.verdict(self.failed_auth.hit(ip, w), retry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(n: u32) -> LimitsConfig {
        LimitsConfig {
            requests_per_key: n,
            failed_auth_per_address: n,
            requests_per_address: n,
            window_seconds: 3600,
            ..LimitsConfig::default()
        }
    }

    #[test]
    fn key_limit_allows_exactly_the_limit() {
        let l = RateLimiter::new(&limits(3));
        let k = Uuid::new_v4();
        for _ in 0..3 {
            assert_eq!(l.key(k), Verdict::Allow);
        }
        assert!(matches!(l.key(k), Verdict::Deny { retry_after } if (1..=3600).contains(&retry_after)));
        assert_eq!(l.key(Uuid::new_v4()), Verdict::Allow, "other keys have their own window");
    }

    #[test]
    fn failed_auth_is_spent_after_the_limit() {
        let l = RateLimiter::new(&limits(2));
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        assert_eq!(l.failed_auth_spent(ip), Verdict::Allow);
        l.failed_auth(ip);
        l.failed_auth(ip);
        assert!(matches!(l.failed_auth_spent(ip), Verdict::Deny { .. }));
        assert_eq!(l.failed_auth_spent("10.0.0.2".parse().unwrap()), Verdict::Allow);
    }

    #[test]
    fn a_new_window_resets_counts() {
        let w: Windows<u8> = Windows::new(1);
        assert!(w.hit(1, 10));
        assert!(!w.hit(1, 10));
        assert!(w.hit(1, 11));
    }
}
