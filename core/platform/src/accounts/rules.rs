//! Plain rules for account input.

use crate::auth::password;
use crate::http::extract::Validator;

pub const MAX_EMAIL: usize = 254;

pub fn normalize_email(email: &str) -> String {
    email.trim().to_lowercase()
}

/// A pragmatic address check: one `@`, a non-empty local part, a dotted
/// domain, no spaces or control characters.
pub fn valid_email(email: &str) -> bool {
    let Some((local, domain)) = email.split_once('@') else { return false };
    !local.is_empty()
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        && email.len() <= MAX_EMAIL
}

pub fn check_email(v: &mut Validator, field: &str, email: &str) {
    if email.is_empty() {
        v.check(false, field, "can't be blank");
    } else {
        v.check(valid_email(email), field, "has invalid format");
    }
}

pub fn check_password(v: &mut Validator, field: &str, pw: &str) {
    let n = pw.chars().count();
    v.check(n >= password::MIN_LEN, field, "should be at least 8 character(s)");
    v.check(n <= password::MAX_LEN, field, "should be at most 256 character(s)");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails() {
        assert!(valid_email("a@example.com"));
        assert!(!valid_email("a@example"));
        assert!(!valid_email("@example.com"));
        assert!(!valid_email("a b@example.com"));
        assert!(!valid_email("a@@example.com"));
        assert_eq!(normalize_email("  A@Example.COM "), "a@example.com");
    }

    #[test]
    fn password_bounds() {
        let mut v = Validator::default();
        check_password(&mut v, "p", &"x".repeat(7));
        assert!(v.finish().is_err());
        let mut v = Validator::default();
        check_password(&mut v, "p", &"x".repeat(8));
        check_password(&mut v, "p", &"x".repeat(256));
        assert!(v.finish().is_ok());
        let mut v = Validator::default();
        check_password(&mut v, "p", &"x".repeat(257));
        assert!(v.finish().is_err());
    }
}
