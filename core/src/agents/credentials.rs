//! Which credential set a launch runs on (spec 4.3): plain rules.

use uuid::Uuid;

/// The resolution order: the launch's selection, then the agent's set, then
/// the account default. `None` leaves platform credentials to decide.
pub fn resolve_credential_set(
    launch: Option<Uuid>,
    agent: Option<Uuid>,
    account_default: Option<Uuid>,
) -> Option<Uuid> {
    launch.or(agent).or(account_default)
}

/// Whether an agent permits running on `chosen`: `allowed` null permits any
/// owned set, `[]` forbids any set other than the agent's own, a list permits
/// those; the agent's own selection always stays allowed.
pub fn credential_set_allowed(allowed: Option<&[Uuid]>, agent_own: Option<Uuid>, chosen: Uuid) -> bool {
    if agent_own == Some(chosen) {
        return true;
    }
    match allowed {
        None => true,
        Some(list) => list.contains(&chosen),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_then_agent_then_default() {
        let (l, a, d) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        assert_eq!(resolve_credential_set(Some(l), Some(a), Some(d)), Some(l));
        assert_eq!(resolve_credential_set(None, Some(a), Some(d)), Some(a));
        assert_eq!(resolve_credential_set(None, None, Some(d)), Some(d));
        assert_eq!(resolve_credential_set(None, None, None), None);
    }

    #[test]
    fn allowed_lists() {
        let (own, other, listed) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        assert!(credential_set_allowed(None, Some(own), other), "null permits any");
        assert!(!credential_set_allowed(Some(&[]), Some(own), other), "[] forbids a different one");
        assert!(credential_set_allowed(Some(&[]), Some(own), own), "the agent's own stays allowed");
        assert!(credential_set_allowed(Some(&[listed]), Some(own), listed));
        assert!(!credential_set_allowed(Some(&[listed]), Some(own), other));
        assert!(credential_set_allowed(Some(&[listed]), None, listed));
        assert!(!credential_set_allowed(Some(&[]), None, other));
    }
}
