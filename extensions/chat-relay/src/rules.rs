//! The field rules of identities and whom an identity answers: plain
//! functions, no state.

use acs_platform::error::ApiError;
use acs_platform::http::extract::Validator;
use nostr_sdk::prelude::{FromBech32, Keys, SecretKey};

use crate::model::{ChatRelayIdentityProvision, ChatRelayIdentityUpdate, RespondTo};

/// `name` is 1 to 200 characters.
pub const MAX_NAME: usize = 200;

/// Whether `name` has 1 to 200 characters.
pub fn name_ok(name: &str) -> bool {
    (1..=MAX_NAME).contains(&name.chars().count())
}

/// A relay address: `wss://host...`, or `ws://` too when the instance allows it.
pub fn check_relay_url(url: &str, allow_insecure: bool) -> Result<(), &'static str> {
    let rest = match (url.strip_prefix("wss://"), url.strip_prefix("ws://")) {
        (Some(rest), _) => rest,
        (None, Some(rest)) if allow_insecure => rest,
        (None, Some(_)) => return Err("must start with wss://"),
        _ => return Err(if allow_insecure { "must start with wss:// or ws://" } else { "must start with wss://" }),
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() || host.contains('@') || url.chars().any(char::is_whitespace) {
        return Err("must name a host, without credentials or spaces");
    }
    Ok(())
}

/// A public key as 64 hexadecimal digits, lowercased; `None` when it is not one.
pub fn hex_key(key: &str) -> Option<String> {
    (key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit())).then(|| key.to_ascii_lowercase())
}

/// Why a private key was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum KeyProblem {
    NotNsec,
    Mismatch,
}

/// The keys of a bech32 `nsec1...`, checked against the `pubkey` given beside it.
pub fn keys_of(nsec: &str, pubkey: &str) -> Result<Keys, KeyProblem> {
    let secret = SecretKey::from_bech32(nsec.trim()).map_err(|_| KeyProblem::NotNsec)?;
    let keys = Keys::new(secret);
    if keys.public_key().to_hex() == pubkey { Ok(keys) } else { Err(KeyProblem::Mismatch) }
}

/// The owner named by an `auth_tag`: a JSON array of strings whose first
/// element is `"auth"` and whose second is the owner's public key in hex;
/// further elements (conditions, a signature) are kept as given.
pub fn owner_of(auth_tag: &str) -> Option<String> {
    let parts: Vec<String> = serde_json::from_str(auth_tag).ok()?;
    match parts.as_slice() {
        [kind, owner, ..] if kind == "auth" => hex_key(owner),
        _ => None,
    }
}

/// The allowlist checked: every entry a 64-hex key (lowercased, duplicates
/// dropped), and at least one in allowlist mode.
pub fn allowlist(mode: RespondTo, keys: &[String]) -> Result<Vec<String>, &'static str> {
    let mut out: Vec<String> = Vec::with_capacity(keys.len());
    for key in keys {
        let key = hex_key(key).ok_or("entries must be 64 hexadecimal characters")?;
        if !out.contains(&key) {
            out.push(key);
        }
    }
    if mode == RespondTo::Allowlist && out.is_empty() {
        return Err("must not be empty when respond_to is allowlist");
    }
    Ok(out)
}

/// Whether an identity answers `sender`.
pub fn answers(mode: RespondTo, owner: &str, allowlist: &[String], sender: &str) -> bool {
    match mode {
        RespondTo::Nobody => false,
        RespondTo::Anyone => true,
        RespondTo::OwnerOnly => sender == owner,
        RespondTo::Allowlist => sender == owner || allowlist.iter().any(|k| k == sender),
    }
}

/// A provision request as checked: the keys lowercased, the owner out of the auth tag.
pub struct Provision {
    pub pubkey: String,
    pub owner: String,
    pub respond_to: RespondTo,
    pub allowlist: Vec<String>,
}

/// Every rule of a provision request, all its problems at once (422 `validation_failed`).
pub fn check_provision(req: &ChatRelayIdentityProvision, allow_insecure: bool) -> Result<Provision, ApiError> {
    let mut v = Validator::default();
    check_names(&mut v, Some(&req.name), req.display_name.as_deref());
    check_relay(&mut v, &req.relay_url, allow_insecure);
    let pubkey = hex_key(&req.pubkey);
    match &pubkey {
        None => v.check(false, "pubkey", "must be 64 hexadecimal characters"),
        Some(pubkey) => match keys_of(&req.private_key_nsec, pubkey) {
            Ok(_) => {}
            Err(KeyProblem::NotNsec) => v.check(false, "private_key_nsec", "must be a bech32 nsec1 key"),
            Err(KeyProblem::Mismatch) => v.check(false, "pubkey", "is not the public key of private_key_nsec"),
        },
    }
    let owner = owner_of(&req.auth_tag);
    v.check(owner.is_some(), "auth_tag", "must be a JSON array [\"auth\", \"<owner pubkey hex>\", ...]");
    let respond_to = req.respond_to.unwrap_or_default();
    let allowlist = check_allowlist(&mut v, respond_to, req.respond_to_allowlist.as_deref().unwrap_or_default());
    v.finish()?;
    match (pubkey, owner) {
        (Some(pubkey), Some(owner)) => Ok(Provision { pubkey, owner, respond_to, allowlist }),
        _ => Err(ApiError::internal()),
    }
}

/// The rules of the fields a change names; the allowlist that will hold
/// (`current` when the change names none).
pub fn check_update(
    req: &ChatRelayIdentityUpdate,
    current: &[String],
    current_mode: RespondTo,
    allow_insecure: bool,
) -> Result<Vec<String>, ApiError> {
    let mut v = Validator::default();
    check_names(&mut v, req.name.as_deref(), req.display_name.clone().flatten().as_deref());
    if let Some(url) = &req.relay_url {
        check_relay(&mut v, url, allow_insecure);
    }
    let mode = req.respond_to.unwrap_or(current_mode);
    let allowlist = check_allowlist(&mut v, mode, req.respond_to_allowlist.as_deref().unwrap_or(current));
    v.finish()?;
    Ok(allowlist)
}

fn check_names(v: &mut Validator, name: Option<&str>, display_name: Option<&str>) {
    v.check(name.is_none_or(name_ok), "name", "should be 1 to 200 character(s)");
    v.check(display_name.is_none_or(name_ok), "display_name", "should be 1 to 200 character(s)");
}

fn check_relay(v: &mut Validator, url: &str, allow_insecure: bool) {
    if let Err(msg) = check_relay_url(url, allow_insecure) {
        v.check(false, "relay_url", msg);
    }
}

fn check_allowlist(v: &mut Validator, mode: RespondTo, keys: &[String]) -> Vec<String> {
    allowlist(mode, keys).unwrap_or_else(|msg| {
        v.check(false, "respond_to_allowlist", msg);
        Vec::new()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nostr_sdk::prelude::ToBech32;

    #[test]
    fn relays_are_wss_unless_insecure_ones_are_allowed() {
        assert!(check_relay_url("wss://relay.example", false).is_ok());
        assert!(check_relay_url("ws://127.0.0.1:7000", false).is_err());
        assert!(check_relay_url("ws://127.0.0.1:7000", true).is_ok());
        assert!(check_relay_url("https://relay.example", true).is_err());
        assert!(check_relay_url("wss://", false).is_err());
        assert!(check_relay_url("wss://u:p@relay.example", false).is_err());
    }

    #[test]
    fn the_nsec_must_be_the_pubkeys() {
        let keys = Keys::generate();
        let nsec = keys.secret_key().to_bech32().unwrap();
        let hex = keys.public_key().to_hex();
        assert!(keys_of(&nsec, &hex).is_ok());
        assert_eq!(keys_of(&nsec, &Keys::generate().public_key().to_hex()).err(), Some(KeyProblem::Mismatch));
        assert_eq!(keys_of(&keys.secret_key().to_secret_hex(), &hex).err(), Some(KeyProblem::NotNsec));
    }

    #[test]
    fn the_owner_is_the_second_element_of_an_auth_tag() {
        let owner = "a".repeat(64);
        assert_eq!(owner_of(&format!(r#"["auth","{owner}"]"#)), Some(owner.clone()));
        assert_eq!(owner_of(&format!(r#"["auth","{}","cond","sig"]"#, owner.to_uppercase())), Some(owner.clone()));
        assert_eq!(owner_of(&format!(r#"["p","{owner}"]"#)), None);
        assert_eq!(owner_of(r#"["auth","abc"]"#), None);
        assert_eq!(owner_of("auth"), None);
    }

    #[test]
    fn respond_to_decides_who_is_answered() {
        let (owner, friend, stranger) = ("o".to_owned(), "f".to_owned(), "s");
        let list = [friend.clone()];
        assert!(answers(RespondTo::OwnerOnly, &owner, &list, &owner));
        assert!(!answers(RespondTo::OwnerOnly, &owner, &list, &friend));
        assert!(answers(RespondTo::Allowlist, &owner, &list, &friend));
        assert!(answers(RespondTo::Allowlist, &owner, &list, &owner));
        assert!(!answers(RespondTo::Allowlist, &owner, &list, stranger));
        assert!(answers(RespondTo::Anyone, &owner, &list, stranger));
        assert!(!answers(RespondTo::Nobody, &owner, &list, &owner));
    }

    #[test]
    fn allowlist_mode_needs_a_key() {
        assert!(allowlist(RespondTo::Allowlist, &[]).is_err());
        assert!(allowlist(RespondTo::Anyone, &[]).is_ok());
        assert!(allowlist(RespondTo::Anyone, &["xyz".into()]).is_err());
        let k = "B".repeat(64);
        assert_eq!(allowlist(RespondTo::Allowlist, &[k.clone(), k]).unwrap(), vec!["b".repeat(64)]);
    }
}
