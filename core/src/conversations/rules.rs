//! Plain rules of the conversation bodies and queries (spec 2.1, 4.1, 8):
//! create rule 1 (prompt and images), bounds of titles, channels and
//! `client_request_id`, labels and their filters, and the checks a channel
//! resume makes.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::engine::Image;
use super::model::{ConversationCreateRequest, ImageInput};
use super::store::{ConversationRow, Labels};
use crate::agents::{Runtime, rules as agent_rules};
use crate::error::{ApiError, ApiResult, FieldErrors, Kind};
use crate::http::extract::Validator;
use crate::sandboxes::names;
use crate::sandboxes::redact::Redactor;

pub const MAX_TITLE: usize = 120;
pub const MAX_CHANNEL_ID: usize = 255;
pub const MAX_CLIENT_REQUEST_ID: usize = 200;
pub const MAX_LABELS: usize = 32;
pub const MAX_LABEL_KEY_BYTES: usize = 64;
pub const MAX_LABEL_VALUE_BYTES: usize = 256;
/// Largest image, decoded (10 MB).
pub const MAX_IMAGE_BYTES: usize = 10 * 1024 * 1024;
pub const IMAGE_MEDIA_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Standard alphabet; padding optional, since clients differ on it.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

fn invalid_prompt(message: &str) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_prompt", message)
}

fn invalid_images(message: String) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_images", message)
}

/// A prompt must contain non-whitespace words (422 `invalid_prompt`).
pub fn check_prompt(prompt: &str) -> ApiResult<()> {
    if prompt.trim().is_empty() {
        return Err(invalid_prompt("The prompt is blank; it must contain non-whitespace words."));
    }
    Ok(())
}

/// Create rule 1, run before anything is reserved: a given prompt is not
/// blank, images come with a prompt, and each image is well formed.
/// Returns the images for the engine.
pub fn check_first_prompt(prompt: Option<&str>, images: &[ImageInput]) -> ApiResult<Vec<Image>> {
    if let Some(p) = prompt {
        check_prompt(p)?;
    }
    if !images.is_empty() && prompt.is_none() {
        return Err(invalid_prompt("Images need a non-blank prompt."));
    }
    images.iter().enumerate().map(|(i, img)| check_image(i, img)).collect()
}

/// One image: a known media type and 1 byte to 10 MB of valid base64 (422 `invalid_images`).
pub fn check_image(index: usize, img: &ImageInput) -> ApiResult<Image> {
    if !IMAGE_MEDIA_TYPES.contains(&img.media_type.as_str()) {
        return Err(invalid_images(format!(
            "images[{index}]: media_type must be one of {}.",
            IMAGE_MEDIA_TYPES.join(", ")
        )));
    }
    // Base64 holds 3 bytes per 4 characters: a longer text cannot decode within the limit.
    if img.data.len() / 4 * 3 > MAX_IMAGE_BYTES + 3 {
        return Err(invalid_images(format!("images[{index}]: the image is over 10 MB.")));
    }
    let bytes = BASE64
        .decode(img.data.as_bytes())
        .map_err(|_| invalid_images(format!("images[{index}]: data is not valid base64.")))?;
    if bytes.is_empty() {
        return Err(invalid_images(format!("images[{index}]: the image is empty.")));
    }
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(invalid_images(format!("images[{index}]: the image is over 10 MB.")));
    }
    Ok(Image { data: img.data.clone(), media_type: img.media_type.clone() })
}

/// `client_request_id`: 1 to 200 characters, no NUL.
pub fn check_client_request_id(v: &mut Validator, id: &str) {
    let n = id.chars().count();
    v.check(n >= 1, "client_request_id", "should be at least 1 character(s)");
    v.check(n <= MAX_CLIENT_REQUEST_ID, "client_request_id", "should be at most 200 character(s)");
    v.check(!id.contains('\0'), "client_request_id", "must not contain NUL bytes");
}

/// The bounded fields of a create body (422 `validation_failed` naming each).
/// `client_request_id` is ignored without a prompt, so it is checked only with one.
pub fn check_create_fields(v: &mut Validator, req: &ConversationCreateRequest) {
    if let Some(title) = &req.title {
        v.check(title.chars().count() <= MAX_TITLE, "title", "should be at most 120 character(s)");
    }
    if let Some(channel) = &req.channel_id {
        v.check(channel.chars().count() <= MAX_CHANNEL_ID, "channel_id", "should be at most 255 character(s)");
    }
    if req.prompt.is_some()
        && let Some(id) = &req.client_request_id
    {
        check_client_request_id(v, id);
    }
    if let Some(policy) = &req.permission_policy
        && let Err(m) = agent_rules::validate_permission_policy(policy)
    {
        v.check(false, "permission_policy", &m);
    }
}

/// A session config as sent: null or absent is none, an object is checked
/// (an empty one is none), anything else is 422 `session_config_invalid`.
pub fn session_config(value: Option<Value>) -> ApiResult<Option<Map<String, Value>>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => {
            agent_rules::validate_session_config(&map).map_err(agent_rules::session_config_error)?;
            Ok((!map.is_empty()).then_some(map))
        }
        Some(_) => Err(agent_rules::session_config_error(
            "session_config must be an object mapping option ids to a string or a boolean.".into(),
        )),
    }
}

/// A model for this conversation, in the form the agent's runtime accepts (422 `model_invalid`).
pub fn check_model(runtime: Runtime, model: Option<&str>) -> ApiResult<()> {
    match model {
        Some(m) => agent_rules::check_model(runtime.as_str(), m)
            .map_err(|msg| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "model_invalid", msg)),
        None => Ok(()),
    }
}

/// The full machine name for a requested one, by the sandbox naming rules (422 `invalid_machine_name`).
pub fn machine_name(account_id: Uuid, requested: Option<&str>) -> ApiResult<Option<String>> {
    // The sandbox id only derives a name when none is requested, which never happens here.
    requested.map(|name| names::machine_name(account_id, Some(name), Uuid::nil())).transpose()
}

/// An override must be in the agent's allow-list when it has one (422 `<what>_not_allowed`).
pub fn check_allowed(allowed: Option<&[Uuid]>, id: Uuid, what: &str) -> ApiResult<()> {
    match allowed {
        Some(list) if !list.contains(&id) => Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            &format!("{what}_not_allowed"),
            format!("This agent's allowed_{what}_ids do not include {id}."),
        )),
        _ => Ok(()),
    }
}

/// A channel resume keeps the resumed conversation's model and session
/// config: a request asking for others is 409 (send `fresh: true` or reapply).
pub fn check_resume(
    existing: &ConversationRow,
    model: Option<&str>,
    session_config: Option<&Map<String, Value>>,
) -> ApiResult<()> {
    if existing.model.as_deref() != model {
        return Err(ApiError::conflict(
            "conversation_model_differs",
            "The channel's conversation runs another model; reapply it or send `fresh: true`.",
        ));
    }
    let stored = existing.session_config.as_ref().filter(|m| !m.is_empty());
    if stored != session_config {
        return Err(ApiError::conflict(
            "conversation_session_config_differs",
            "The channel's conversation has another session_config; reapply it or send `fresh: true`.",
        ));
    }
    Ok(())
}

/// A label key as shown in messages.
fn shown(key: &str) -> String {
    format!("{key:?}")
}

/// Label changes a machine sends (its agent's `_service/labels`, or its
/// callback key), with every secret of the machine in a key or a value read
/// `[REDACTED]`: labels reach lists, streams and every webhook payload. The
/// limits are checked afterwards, on what would be stored.
pub fn redact_labels(
    changes: BTreeMap<String, Option<String>>,
    redactor: &Redactor,
) -> BTreeMap<String, Option<String>> {
    if redactor.is_empty() {
        return changes;
    }
    changes.into_iter().map(|(k, v)| (redactor.redact_str(&k), v.map(|v| redactor.redact_str(&v)))).collect()
}

/// Applies label changes (a `None` value removes the key) to `existing`.
/// Each key set is checked (1 to 64 bytes, value at most 256 bytes, no NUL)
/// and the count is taken after the merge. A violation is 422
/// `validation_failed` with `errors.labels` naming keys that were sent, never
/// one that was already there.
pub fn merge_labels(existing: &Labels, changes: &BTreeMap<String, Option<String>>) -> ApiResult<Labels> {
    let mut problems = Vec::new();
    for (key, value) in changes {
        let Some(value) = value else { continue };
        if key.is_empty() {
            problems.push(format!("{}: the key can't be blank", shown(key)));
        }
        if key.len() > MAX_LABEL_KEY_BYTES {
            problems.push(format!("{}: the key should be at most 64 byte(s)", shown(key)));
        }
        if value.len() > MAX_LABEL_VALUE_BYTES {
            problems.push(format!("{}: the value should be at most 256 byte(s)", shown(key)));
        }
        if key.contains('\0') || value.contains('\0') {
            problems.push(format!("{}: must not contain NUL bytes", shown(key)));
        }
    }
    let mut merged = existing.clone();
    for (key, value) in changes {
        match value {
            Some(v) => merged.insert(key.clone(), v.clone()),
            None => merged.remove(key),
        };
    }
    if merged.len() > MAX_LABELS {
        // The keys this request added past the limit (in key order) are the offending ones.
        let added: Vec<&String> =
            changes.iter().filter(|(k, v)| v.is_some() && !existing.contains_key(*k)).map(|(k, _)| k).collect();
        let over = merged.len() - MAX_LABELS;
        for key in &added[added.len().saturating_sub(over)..] {
            problems.push(format!("{}: a conversation holds at most 32 labels", shown(key)));
        }
    }
    if problems.is_empty() {
        return Ok(merged);
    }
    let mut errors = FieldErrors::new();
    errors.insert("labels".into(), problems);
    Err(ApiError::validation(errors))
}

/// The body extractor names a bad label by its path (`labels.<key>`, for a
/// NUL or a wrong type); labels are reported under `labels`, naming the key.
pub fn label_errors_by_key(mut e: ApiError) -> ApiError {
    let Some(errors) = e.errors.take() else { return e };
    let mut out = FieldErrors::new();
    for (field, messages) in errors {
        match field.strip_prefix("labels.") {
            Some(key) => {
                let list = out.entry("labels".to_owned()).or_default();
                list.extend(messages.into_iter().map(|m| format!("\"{key}\": {m}")));
            }
            None => {
                out.insert(field, messages);
            }
        }
    }
    if e.kind == Kind::Invalid {
        let fields: Vec<&str> = out.keys().map(String::as_str).collect();
        e.message = Some(format!("Invalid value for: {}", fields.join(", ")));
    }
    e.errors = Some(out);
    e
}

/// `label=key:value` filters of a query string (repeatable; `label[]=` too),
/// split at the first colon. No colon or an empty key is 400 `invalid_label_filter`.
pub fn label_filters(query: Option<&str>) -> ApiResult<Vec<(String, String)>> {
    let mut filters = Vec::new();
    for (name, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        if name != "label" && name != "label[]" {
            continue;
        }
        match value.split_once(':') {
            Some((key, v)) if !key.is_empty() => filters.push((key.to_owned(), v.to_owned())),
            _ => {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_label_filter",
                    format!("label filter {value:?} must have the form key:value with a non-empty key."),
                ));
            }
        }
    }
    Ok(filters)
}

/// Whether `labels` satisfy every filter (AND).
pub fn matches_filters(labels: &Labels, filters: &[(String, String)]) -> bool {
    filters.iter().all(|(k, v)| labels.get(k) == Some(v))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn image(media_type: &str, bytes: usize) -> ImageInput {
        ImageInput { data: BASE64.encode(vec![7u8; bytes]), media_type: media_type.into() }
    }

    fn code(r: ApiResult<impl std::fmt::Debug>) -> String {
        r.unwrap_err().error.clone()
    }

    fn label_messages(e: ApiError) -> Vec<String> {
        assert_eq!(e.error, "validation_failed");
        e.errors.as_ref().unwrap()["labels"].clone()
    }

    fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, Option<String>> {
        pairs.iter().map(|(k, v)| (k.to_string(), Some(v.to_string()))).collect()
    }

    fn create(body: Value) -> ConversationCreateRequest {
        let mut body = body;
        body["agent_id"] = json!(Uuid::nil());
        serde_json::from_value(body).unwrap()
    }

    #[test]
    fn prompts_must_hold_words() {
        assert!(check_prompt("hi").is_ok());
        for blank in ["", " ", "\n\t "] {
            assert_eq!(code(check_prompt(blank)), "invalid_prompt");
        }
        assert_eq!(code(check_first_prompt(Some("  "), &[])), "invalid_prompt");
        assert!(check_first_prompt(None, &[]).unwrap().is_empty());
    }

    #[test]
    fn images_need_a_prompt_and_a_known_type() {
        let png = image("image/png", 3);
        assert_eq!(code(check_first_prompt(None, std::slice::from_ref(&png))), "invalid_prompt");
        assert_eq!(code(check_first_prompt(Some(" "), std::slice::from_ref(&png))), "invalid_prompt");
        let ok = check_first_prompt(Some("look"), std::slice::from_ref(&png)).unwrap();
        assert_eq!(ok, vec![Image { data: png.data.clone(), media_type: "image/png".into() }]);
        for t in IMAGE_MEDIA_TYPES {
            assert!(check_image(0, &image(t, 1)).is_ok(), "{t}");
        }
        for t in ["image/bmp", "IMAGE/PNG", "text/plain", ""] {
            assert_eq!(code(check_image(0, &image(t, 1))), "invalid_images", "{t}");
        }
    }

    #[test]
    fn image_bytes_are_one_to_ten_megabytes_of_base64() {
        assert_eq!(code(check_image(0, &image("image/png", 0))), "invalid_images");
        assert!(check_image(0, &image("image/png", MAX_IMAGE_BYTES)).is_ok());
        let e = check_image(2, &image("image/png", MAX_IMAGE_BYTES + 1)).unwrap_err();
        assert_eq!(e.error, "invalid_images");
        assert!(e.message.as_deref().unwrap().starts_with("images[2]"));
        let bad = ImageInput { data: "not base64!".into(), media_type: "image/gif".into() };
        assert_eq!(code(check_image(0, &bad)), "invalid_images");
        // Padding is optional.
        let unpadded = ImageInput { data: "AAE".into(), media_type: "image/gif".into() };
        assert!(check_image(0, &unpadded).is_ok());
    }

    #[test]
    fn client_request_id_bounds() {
        for (id, ok) in
            [("a".to_owned(), true), ("é".repeat(200), true), ("a".repeat(201), false), (String::new(), false)]
        {
            let mut v = Validator::default();
            check_client_request_id(&mut v, &id);
            assert_eq!(v.finish().is_ok(), ok, "{} chars", id.chars().count());
        }
        let mut v = Validator::default();
        check_client_request_id(&mut v, "a\0b");
        assert!(v.0.contains_key("client_request_id"));
    }

    #[test]
    fn create_fields_are_bounded() {
        let check = |body: Value| {
            let mut v = Validator::default();
            check_create_fields(&mut v, &create(body));
            v.0.keys().cloned().collect::<Vec<_>>()
        };
        assert!(check(json!({"title": "t".repeat(120), "channel_id": "c".repeat(255)})).is_empty());
        assert_eq!(check(json!({"title": "t".repeat(121)})), ["title"]);
        assert_eq!(check(json!({"channel_id": "c".repeat(256)})), ["channel_id"]);
        // client_request_id is ignored without a prompt.
        assert!(check(json!({"client_request_id": ""})).is_empty());
        assert_eq!(check(json!({"prompt": "p", "client_request_id": ""})), ["client_request_id"]);
        assert_eq!(check(json!({"permission_policy": {"execute": "sometimes"}})), ["permission_policy"]);
        assert!(check(json!({"permission_policy": {"execute": "ask", "ask_timeout": 60}})).is_empty());
    }

    #[test]
    fn session_configs() {
        assert_eq!(session_config(None).unwrap(), None);
        assert_eq!(session_config(Some(Value::Null)).unwrap(), None);
        assert_eq!(session_config(Some(json!({}))).unwrap(), None);
        assert_eq!(session_config(Some(json!({"effort": "high"}))).unwrap().unwrap()["effort"], "high");
        assert_eq!(code(session_config(Some(json!({"model": "x"})))), "session_config_invalid");
        assert_eq!(code(session_config(Some(json!(["effort"])))), "session_config_invalid");
    }

    #[test]
    fn models_follow_the_agents_runtime() {
        assert!(check_model(Runtime::Claude, None).is_ok());
        assert!(check_model(Runtime::Claude, Some("anthropic/claude-sonnet-4-5")).is_ok());
        assert_eq!(code(check_model(Runtime::Claude, Some("openai/gpt-5"))), "model_invalid");
        assert_eq!(code(check_model(Runtime::Acp, Some("openai/gpt-5"))), "model_invalid");
    }

    #[test]
    fn machine_names_use_the_sandbox_rules() {
        let account = Uuid::from_u128(0x0123_abcd_0000_0000_0000_0000_0000_0000);
        assert_eq!(machine_name(account, None).unwrap(), None);
        assert_eq!(machine_name(account, Some("box")).unwrap().as_deref(), Some("acs-0123abcd-box"));
        assert_eq!(code(machine_name(account, Some("-box"))), "invalid_machine_name");
    }

    #[test]
    fn allow_lists() {
        let a = Uuid::from_u128(1);
        let b = Uuid::from_u128(2);
        assert!(check_allowed(None, a, "environment").is_ok());
        assert!(check_allowed(Some(&[a]), a, "environment").is_ok());
        assert_eq!(code(check_allowed(Some(&[a]), b, "environment")), "environment_not_allowed");
        assert_eq!(code(check_allowed(Some(&[]), b, "vault")), "vault_not_allowed");
    }

    #[test]
    fn label_key_and_value_bounds_name_the_key() {
        assert!(merge_labels(&Labels::new(), &set(&[(&"k".repeat(64), &"v".repeat(256))])).is_ok());
        let long_key = "k".repeat(65);
        let m = label_messages(merge_labels(&Labels::new(), &set(&[(&long_key, "v")])).unwrap_err());
        assert_eq!(m.len(), 1);
        assert!(m[0].contains(&long_key) && m[0].contains("64 byte"), "{m:?}");
        let m = label_messages(merge_labels(&Labels::new(), &set(&[("team", &"v".repeat(257))])).unwrap_err());
        assert!(m[0].starts_with("\"team\"") && m[0].contains("256 byte"), "{m:?}");
        // Bytes, not characters: 33 two-byte characters are 66 bytes.
        assert!(merge_labels(&Labels::new(), &set(&[(&"é".repeat(33), "v")])).is_err());
        assert!(merge_labels(&Labels::new(), &set(&[("", "v")])).is_err());
        assert!(merge_labels(&Labels::new(), &set(&[("a\0", "v")])).is_err());
        assert!(merge_labels(&Labels::new(), &set(&[("a", "v\0")])).is_err());
        // An empty value is a value.
        assert_eq!(merge_labels(&Labels::new(), &set(&[("a", "")])).unwrap()["a"], "");
    }

    #[test]
    fn labels_from_a_machine_are_redacted_in_keys_and_values_then_bounded() {
        let r = Redactor::new(["s3cr3t-pw".to_owned(), "line-one-of-it\nline-two-of-it".to_owned()]);
        let mut changes = set(&[("token", "s3cr3t-pw"), ("s3cr3t-pw", "x"), ("note", r#"{"k": "line-two-of-it"}"#)]);
        changes.insert("gone".into(), None);
        let redacted = redact_labels(changes, &r);
        assert_eq!(
            redacted,
            BTreeMap::from([
                ("token".into(), Some("[REDACTED]".into())),
                ("[REDACTED]".into(), Some("x".into())),
                ("note".into(), Some(r#"{"k": "[REDACTED]"}"#.into())),
                ("gone".into(), None),
            ])
        );
        // The bounds apply to what would be stored: a value that grows past 256 bytes is refused.
        let r = Redactor::new(["k".to_owned()]);
        let grown = redact_labels(set(&[("v", &"k".repeat(26))]), &r);
        assert!(merge_labels(&Labels::new(), &grown).is_err());
        assert_eq!(redact_labels(set(&[("a", "b")]), &Redactor::default()), set(&[("a", "b")]));
    }

    #[test]
    fn labels_merge_remove_and_count_after_the_merge() {
        let existing: Labels = (0..31).map(|i| (format!("old{i:02}"), "x".to_owned())).collect();
        let mut changes = set(&[("new1", "a"), ("old00", "changed")]);
        changes.insert("old01".into(), None);
        changes.insert("never-there".into(), None);
        let merged = merge_labels(&existing, &changes).unwrap();
        assert_eq!(merged.len(), 31);
        assert_eq!(merged["old00"], "changed");
        assert!(!merged.contains_key("old01") && merged.contains_key("old02"));
        // 31 + 2 new = 33: the error names a key sent, never an existing one.
        let m = label_messages(merge_labels(&existing, &set(&[("zz1", "a"), ("zz2", "b")])).unwrap_err());
        assert_eq!(m, ["\"zz2\": a conversation holds at most 32 labels"]);
        // Removing one makes room for it.
        let mut changes = set(&[("zz1", "a"), ("zz2", "b")]);
        changes.insert("old05".into(), None);
        assert_eq!(merge_labels(&existing, &changes).unwrap().len(), 32);
        let fresh: BTreeMap<String, Option<String>> =
            (0..33).map(|i| (format!("k{i:02}"), Some("v".to_owned()))).collect();
        let m = label_messages(merge_labels(&Labels::new(), &fresh).unwrap_err());
        assert_eq!(m, ["\"k32\": a conversation holds at most 32 labels"]);
    }

    #[test]
    fn extractor_errors_on_labels_name_the_key() {
        let e = crate::http::extract::parse_json::<ConversationCreateRequest>(
            format!(r#"{{"agent_id":"{}","title":"t","labels":{{"team":"a\u0000b"}}}}"#, Uuid::nil()).as_bytes(),
        )
        .unwrap_err();
        let e = label_errors_by_key(e);
        let errors = e.errors.as_ref().unwrap();
        assert_eq!(errors.keys().collect::<Vec<_>>(), ["labels"]);
        assert!(errors["labels"][0].starts_with("\"team\""), "{errors:?}");
        assert_eq!(e.message.as_deref(), Some("Invalid value for: labels"));
        let other = label_errors_by_key(ApiError::invalid("title", "bad"));
        assert!(other.errors.as_ref().unwrap().contains_key("title"));
    }

    #[test]
    fn label_filters_split_at_the_first_colon() {
        assert_eq!(label_filters(None).unwrap(), vec![]);
        assert_eq!(
            label_filters(Some("label=a:b:c&label%5B%5D=team:&other=x&label[]=k:v")).unwrap(),
            vec![("a".into(), "b:c".into()), ("team".into(), String::new()), ("k".into(), "v".into())]
        );
        for bad in ["label=nocolon", "label=:v", "label[]=", "label="] {
            assert_eq!(code(label_filters(Some(bad))), "invalid_label_filter", "{bad}");
            assert_eq!(label_filters(Some(bad)).unwrap_err().status, StatusCode::BAD_REQUEST);
        }
        let labels: Labels = [("a".to_owned(), "b:c".to_owned()), ("x".to_owned(), "1".to_owned())].into();
        assert!(matches_filters(&labels, &[]));
        assert!(matches_filters(&labels, &[("a".into(), "b:c".into()), ("x".into(), "1".into())]));
        assert!(!matches_filters(&labels, &[("a".into(), "b:c".into()), ("x".into(), "2".into())]));
        assert!(!matches_filters(&labels, &[("missing".into(), String::new())]));
    }

    #[test]
    fn a_resume_keeps_model_and_session_config() {
        let mut row = ConversationRow {
            id: Uuid::nil(),
            account_id: Uuid::nil(),
            agent_id: Uuid::nil(),
            sandbox_id: None,
            runtime: "claude".into(),
            status: crate::sandboxes::model::ConversationStatus::Idle,
            title: None,
            labels: Labels::new(),
            model: Some("anthropic/a".into()),
            session_config: None,
            session_config_options: None,
            environment_id: None,
            vault_id: None,
            channel_id: Some("c".into()),
            permission_policy: None,
            sandbox_mode: None,
            machine_name: None,
            api_access: "owner".into(),
            inference_credential_id: None,
            acp_session_id: None,
            agent_offset: 0,
            pending_prompt: None,
            mid_turn: false,
            team: false,
            created_at: 0,
            updated_at: 0,
            ended_at: None,
        };
        assert!(check_resume(&row, Some("anthropic/a"), None).is_ok());
        assert_eq!(code(check_resume(&row, Some("anthropic/b"), None)), "conversation_model_differs");
        assert_eq!(code(check_resume(&row, None, None)), "conversation_model_differs");
        let config = session_config(Some(json!({"effort": "high"}))).unwrap();
        let e = check_resume(&row, Some("anthropic/a"), config.as_ref()).unwrap_err();
        assert_eq!((e.status, e.error.as_str()), (StatusCode::CONFLICT, "conversation_session_config_differs"));
        row.session_config = config.clone();
        assert!(check_resume(&row, Some("anthropic/a"), config.as_ref()).is_ok());
    }
}
