//! A small time-bounded cache for hot lookups (resolved API keys, account
//! identity). Entries live at most `ttl`; the owner of a record removes its
//! entry on every change made by this process, so staleness exists only
//! across replicas and is bounded by `ttl`.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct TtlCache<K, V> {
    ttl: Duration,
    max_entries: usize,
    map: Mutex<HashMap<K, (Instant, V)>>,
}

impl<K: Hash + Eq, V: Clone> TtlCache<K, V> {
    pub fn new(ttl: Duration, max_entries: usize) -> Self {
        TtlCache { ttl, max_entries, map: Mutex::new(HashMap::new()) }
    }

    pub fn get(&self, key: &K) -> Option<V> {
        if self.ttl.is_zero() {
            return None;
        }
        let map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.get(key).filter(|(at, _)| at.elapsed() < self.ttl).map(|(_, v)| v.clone())
    }

    pub fn insert(&self, key: K, value: V) {
        if self.ttl.is_zero() {
            return;
        }
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= self.max_entries {
            // Dropping expired entries first keeps live ones; a full clear
            // bounds memory when everything is live.
            let ttl = self.ttl;
            map.retain(|_, (at, _)| at.elapsed() < ttl);
            if map.len() >= self.max_entries {
                map.clear();
            }
        }
        map.insert(key, (Instant::now(), value));
    }

    pub fn remove(&self, key: &K) {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).remove(key);
    }

    /// Removes every entry whose value matches `pred`.
    pub fn remove_where(&self, pred: impl Fn(&V) -> bool) {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).retain(|_, (_, v)| !pred(v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_and_can_be_removed() {
        let c = TtlCache::new(Duration::from_millis(30), 10);
        c.insert(1, "a");
        assert_eq!(c.get(&1), Some("a"));
        c.remove(&1);
        assert_eq!(c.get(&1), None);
        c.insert(2, "b");
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(c.get(&2), None);
        c.insert(3, "c");
        c.remove_where(|v| *v == "c");
        assert_eq!(c.get(&3), None);
    }

    #[test]
    fn size_is_bounded() {
        let c = TtlCache::new(Duration::from_secs(60), 3);
        for i in 0..10 {
            c.insert(i, i);
        }
        assert!(c.map.lock().unwrap().len() <= 3);
        assert_eq!(c.get(&9), Some(9));
    }

    #[test]
    fn zero_ttl_disables() {
        let c = TtlCache::new(Duration::ZERO, 3);
        c.insert(1, 1);
        assert_eq!(c.get(&1), None);
    }
}
