//! Machine names (spec 2.1 `machine_name`, DESIGN section 1):
//! `acs-<account slug>-<suffix>`, the slug being the first 8 hex digits of
//! the account id, so names never collide across accounts.

use axum::http::StatusCode;
use uuid::Uuid;

use crate::error::ApiError;

/// Longest suffix a caller may choose.
pub const MAX_SUFFIX: usize = 40;

const SERVICE: &str = "acs";

/// First 8 hex digits (lowercase) of the account id.
pub fn account_slug(account: Uuid) -> String {
    short_hex(account)
}

/// The machine name of a new sandbox. `None` derives the suffix from the
/// sandbox id; a requested value already carrying this account's prefix is
/// kept as is (its suffix is still checked), any other value is a suffix.
pub fn machine_name(account: Uuid, requested: Option<&str>, sandbox: Uuid) -> Result<String, ApiError> {
    let prefix = format!("{SERVICE}-{}-", account_slug(account));
    let Some(requested) = requested else {
        return Ok(format!("{prefix}{}", random_hex(sandbox)));
    };
    let suffix = requested.strip_prefix(&prefix).unwrap_or(requested);
    if !valid_suffix(suffix) {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_machine_name",
            format!(
                "machine_name must be 1 to {MAX_SUFFIX} characters of ASCII letters, digits, `-` or `_`, \
                 starting with a letter or digit (the server adds the `{prefix}` prefix)"
            ),
        ));
    }
    Ok(format!("{prefix}{suffix}"))
}

/// 1 to 40 ASCII letters, digits, `-`, `_`; the first a letter or digit.
fn valid_suffix(suffix: &str) -> bool {
    let bytes = suffix.as_bytes();
    match bytes.first() {
        Some(first) if first.is_ascii_alphanumeric() => {}
        _ => return false,
    }
    bytes.len() <= MAX_SUFFIX && bytes.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_')
}

/// The last 12 hex digits: a v7 id starts with its time, so its head is
/// shared by every sandbox made in the same minute.
fn random_hex(id: Uuid) -> String {
    let hex = id.simple().to_string();
    hex[hex.len() - 12..].to_owned()
}

fn short_hex(id: Uuid) -> String {
    let mut hex = id.simple().to_string();
    hex.truncate(8);
    hex
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACCOUNT: Uuid = Uuid::from_u128(0x0123_abcd_4567_89ef_0123_4567_89ab_cdef);
    const OTHER: Uuid = Uuid::from_u128(0xfedc_ba98_7654_3210_fedc_ba98_7654_3210);
    const SANDBOX: Uuid = Uuid::from_u128(0x9a8b_7c6d_0000_0000_0000_0000_0000_0001);

    fn name(requested: Option<&str>) -> Result<String, ApiError> {
        machine_name(ACCOUNT, requested, SANDBOX)
    }

    fn refused(requested: &str) {
        let err = name(Some(requested)).expect_err(requested);
        assert_eq!(err.status, StatusCode::UNPROCESSABLE_ENTITY, "{requested}");
        assert_eq!(err.error, "invalid_machine_name", "{requested}");
        assert!(err.message.as_deref().unwrap_or("").contains("1 to 40"), "{requested}");
    }

    #[test]
    fn slug_is_the_first_eight_hex_digits() {
        assert_eq!(account_slug(ACCOUNT), "0123abcd");
        assert_eq!(account_slug(OTHER), "fedcba98");
        assert_eq!(account_slug(Uuid::nil()), "00000000");
    }

    #[test]
    fn no_request_derives_the_suffix_from_the_sandbox_id() {
        assert_eq!(name(None).unwrap(), "acs-0123abcd-000000000001");
    }

    #[test]
    fn a_suffix_gets_the_account_prefix() {
        assert_eq!(name(Some("a")).unwrap(), "acs-0123abcd-a");
        assert_eq!(name(Some("9")).unwrap(), "acs-0123abcd-9");
        assert_eq!(name(Some("Dev_box-2")).unwrap(), "acs-0123abcd-Dev_box-2");
        assert_eq!(name(Some("a--__")).unwrap(), "acs-0123abcd-a--__");
    }

    #[test]
    fn suffix_length_boundaries() {
        refused("");
        let forty = "a".repeat(40);
        assert_eq!(name(Some(&forty)).unwrap(), format!("acs-0123abcd-{forty}"));
        refused(&"a".repeat(41));
    }

    #[test]
    fn suffix_characters() {
        refused("-a");
        refused("_a");
        refused("a b");
        refused(" a");
        refused("a.b");
        refused("a/b");
        refused("a\0b");
        refused("é");
        refused("aé");
        refused("ａ");
    }

    #[test]
    fn own_prefix_is_kept_and_its_suffix_checked() {
        assert_eq!(name(Some("acs-0123abcd-work")).unwrap(), "acs-0123abcd-work");
        let forty = format!("acs-0123abcd-{}", "b".repeat(40));
        assert_eq!(name(Some(&forty)).unwrap(), forty);
        refused(&format!("acs-0123abcd-{}", "b".repeat(41)));
        refused("acs-0123abcd-");
        refused("acs-0123abcd--x");
    }

    #[test]
    fn another_accounts_prefix_is_only_a_suffix() {
        // Fits in 40 characters, so it becomes a suffix under our own prefix.
        assert_eq!(name(Some("acs-fedcba98-work")).unwrap(), "acs-0123abcd-acs-fedcba98-work");
        refused(&format!("acs-fedcba98-{}", "c".repeat(28)));
        // The same prefix in another case is not ours either.
        assert_eq!(name(Some("ACS-0123ABCD-x")).unwrap(), "acs-0123abcd-ACS-0123ABCD-x");
        // A bare prefix without the trailing dash is a plain suffix.
        assert_eq!(name(Some("acs-0123abcd")).unwrap(), "acs-0123abcd-acs-0123abcd");
    }
}
