//! The rules of claimable principals, free of storage and HTTP: the
//! `Idempotency-Key` header, and who may do what with a claim grant.

use axum::http::{HeaderValue, StatusCode};
use uuid::Uuid;

use crate::error::ApiError;
use crate::http::extract::Validator;

pub const HEADER: &str = "Idempotency-Key";
pub const MAX_IDEMPOTENCY_KEY: usize = 200;

/// The `Idempotency-Key` of a create: required, 1 to 200 characters of
/// UTF-8, no NUL. Any refusal is 422 `validation_failed` naming the header.
pub fn idempotency_key(value: Option<&HeaderValue>) -> Result<String, ApiError> {
    let Some(value) = value else { return Err(ApiError::invalid(HEADER, "is required")) };
    let Ok(key) = std::str::from_utf8(value.as_bytes()) else {
        return Err(ApiError::invalid(HEADER, "must be UTF-8"));
    };
    let n = key.chars().count();
    let mut v = Validator::default();
    v.check(n >= 1, HEADER, "should be at least 1 character(s)");
    v.check(n <= MAX_IDEMPOTENCY_KEY, HEADER, "should be at most 200 character(s)");
    v.check(!key.contains('\0'), HEADER, "must not contain NUL bytes");
    v.finish()?;
    Ok(key.to_owned())
}

/// What a claim grant says about its principal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub id: Uuid,
    /// The principal's own account.
    pub account_id: Uuid,
    /// The application until the claim, the claimer after it.
    pub owner_id: Uuid,
    pub claimed: bool,
}

impl Grant {
    /// Only the current owner sees a grant: to anyone else (the
    /// application once the principal is claimed) it does not exist.
    pub fn visible_to(&self, caller: Uuid) -> bool {
        self.owner_id == caller
    }
}

/// 403 `principal_not_allowed`: a principal neither opens nor claims
/// principals; only an account with an email (a person, or an application's
/// own account) does.
pub fn principal_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "principal_not_allowed",
        "A claimable principal cannot open or claim principals; use the key of an account with an email address.",
    )
}

/// Whether `caller` may claim the grant (read under the claim's write lock).
/// A claimed grant is the claimer's: claiming it again is 409
/// `already_claimed` for the claimer and 404 for everyone else, the
/// application included. The application claiming the principal it still
/// owns is 409 `already_owner` (the state, not the request, is wrong).
pub fn check_claim(grant: Option<&Grant>, caller: Uuid) -> Result<(), ApiError> {
    match grant {
        None => Err(not_found()),
        Some(g) if g.claimed && g.owner_id == caller => {
            Err(ApiError::conflict("already_claimed", "This principal is already claimed, by this account."))
        }
        Some(g) if g.claimed => Err(not_found()),
        Some(g) if g.owner_id == caller => Err(ApiError::conflict(
            "already_owner",
            "This account opened the principal and owns it already; the claim is for another account.",
        )),
        Some(_) => Ok(()),
    }
}

/// A create repeated with an idempotency key whose principal was claimed
/// since: the application no longer owns it and gets no key for it.
pub fn check_repeat(grant: &Grant) -> Result<(), ApiError> {
    if grant.claimed { Err(claimed_since_opened()) } else { Ok(()) }
}

/// 409 `already_claimed` for the application repeating a create.
pub fn claimed_since_opened() -> ApiError {
    ApiError::conflict(
        "already_claimed",
        "The principal opened with this Idempotency-Key was claimed; it belongs to its claimer now.",
    )
}

pub fn not_found() -> ApiError {
    ApiError::not_found("Claimable user")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_errors(e: &ApiError) -> Vec<String> {
        assert_eq!(e.status, StatusCode::UNPROCESSABLE_ENTITY);
        e.errors.as_ref().unwrap()[HEADER].clone()
    }

    #[test]
    fn idempotency_keys_are_required_and_bounded() {
        assert_eq!(field_errors(&idempotency_key(None).unwrap_err()), ["is required"]);
        let empty = HeaderValue::from_static("");
        assert_eq!(field_errors(&idempotency_key(Some(&empty)).unwrap_err()), ["should be at least 1 character(s)"]);
        let one = HeaderValue::from_static("a");
        assert_eq!(idempotency_key(Some(&one)).unwrap(), "a");
        let at_limit = HeaderValue::from_str(&"k".repeat(200)).unwrap();
        assert_eq!(idempotency_key(Some(&at_limit)).unwrap().len(), 200);
        let over = HeaderValue::from_str(&"k".repeat(201)).unwrap();
        assert_eq!(field_errors(&idempotency_key(Some(&over)).unwrap_err()), ["should be at most 200 character(s)"]);
    }

    #[test]
    fn idempotency_keys_count_characters_and_refuse_bad_bytes() {
        // 200 two-byte characters are 400 bytes but 200 characters.
        let wide = HeaderValue::from_bytes("é".repeat(200).as_bytes()).unwrap();
        assert_eq!(idempotency_key(Some(&wide)).unwrap().chars().count(), 200);
        let latin1 = HeaderValue::from_bytes(&[b'a', 0xe9]).unwrap();
        assert_eq!(field_errors(&idempotency_key(Some(&latin1)).unwrap_err()), ["must be UTF-8"]);
    }

    fn grant(owner: Uuid, claimed: bool) -> Grant {
        Grant { id: Uuid::new_v4(), account_id: Uuid::new_v4(), owner_id: owner, claimed }
    }

    #[test]
    fn claims_follow_ownership() {
        let (app, person, other) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let open = grant(app, false);
        assert!(check_claim(Some(&open), person).is_ok());
        assert_eq!(check_claim(Some(&open), app).unwrap_err().error, "already_owner");
        assert_eq!(check_claim(None, person).unwrap_err().status, StatusCode::NOT_FOUND);

        let claimed = grant(person, true);
        assert_eq!(check_claim(Some(&claimed), person).unwrap_err().error, "already_claimed");
        assert_eq!(check_claim(Some(&claimed), app).unwrap_err().status, StatusCode::NOT_FOUND);
        assert_eq!(check_claim(Some(&claimed), other).unwrap_err().status, StatusCode::NOT_FOUND);
        assert!(claimed.visible_to(person) && !claimed.visible_to(app));
    }

    #[test]
    fn a_repeat_after_the_claim_is_refused() {
        assert!(check_repeat(&grant(Uuid::new_v4(), false)).is_ok());
        assert_eq!(check_repeat(&grant(Uuid::new_v4(), true)).unwrap_err().error, "already_claimed");
    }
}
