//! The runtime flags (`features.<name>`) as this server sees them now: the
//! configuration's values with the operators' stored choices over them
//! (`crate::features`), refreshed while the server runs.

use std::collections::BTreeMap;
use std::sync::RwLock;

#[derive(Debug, Default)]
pub struct Flags(RwLock<BTreeMap<String, bool>>);

impl Flags {
    pub fn new(flags: BTreeMap<String, bool>) -> Self {
        Flags(RwLock::new(flags))
    }

    /// Off for a name no compiled-in extension has.
    pub fn enabled(&self, name: &str) -> bool {
        self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner).get(name).copied().unwrap_or(false)
    }

    pub fn all(&self) -> BTreeMap<String, bool> {
        self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Sets a known flag; returns whether its value changed.
    pub fn set(&self, name: &str, on: bool) -> bool {
        let mut flags = self.0.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        match flags.get_mut(name) {
            Some(v) if *v != on => {
                *v = on;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_known_flags_change() {
        let flags = Flags::new(BTreeMap::from([("a".to_owned(), false)]));
        assert!(flags.set("a", true));
        assert!(!flags.set("a", true), "the same value is no change");
        assert!(!flags.set("b", true), "an unknown name is not added");
        assert!(flags.enabled("a") && !flags.enabled("b"));
    }
}
