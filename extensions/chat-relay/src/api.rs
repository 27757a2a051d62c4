//! Core's API in process (`acs_platform::console::Api`): the extension
//! checks references, makes vaults and runs turns through the same requests
//! a program would send, so core's rules (ownership, limits, audit) hold and
//! no core code is called.

use std::net::{IpAddr, Ipv4Addr};

use acs_platform::console::{Answer, Api};
use acs_platform::error::{ApiError, FieldErrors};
use acs_platform::principal::{Principal, Scope, Via};
use acs_platform::state::AppState;
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

/// The server's in-process API, kept in the state's slots by the server assembly.
pub fn of(state: &AppState) -> Option<Api> {
    state.get::<Api>().map(|api| api.as_ref().clone())
}

/// The harness acting for an identity's account: a full-scope caller whose
/// key id is the identity's (its own per-credential limit, and the audit
/// log names the identity), from the loopback address.
pub fn identity_caller(account_id: Uuid, identity_id: Uuid) -> Principal {
    Principal {
        account_id,
        key_id: identity_id,
        via: Via::Key,
        scope: Scope::Full,
        sandbox_id: None,
        ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
    }
}

/// The refusal core answered, passed on as it was (status, code, message, field errors).
pub fn refusal(answer: &Answer) -> ApiError {
    let code = answer.body.get("error").and_then(Value::as_str).unwrap_or("request_failed");
    let message = answer.body.get("message").and_then(Value::as_str).unwrap_or("The request failed.");
    let mut e = ApiError::new(answer.status, code, message);
    if let Some(fields) = answer.body.get("errors").and_then(|f| serde_json::from_value::<FieldErrors>(f.clone()).ok())
    {
        e.errors = Some(fields);
    }
    e
}

/// Checks that the caller's `kind` (`agents`, `environments`) `id` exists, with core's answer when not.
pub async fn check_exists(api: &Api, caller: &Principal, kind: &str, id: Uuid) -> Result<(), ApiError> {
    let answer = api.call(caller.clone(), caller.ip, Method::GET, &format!("/api/{kind}/{id}"), None).await;
    if answer.ok() { Ok(()) } else { Err(refusal(&answer)) }
}

/// Makes the vault an identity's conversations run with.
pub async fn create_vault(api: &Api, caller: &Principal, name: &str) -> Result<Uuid, ApiError> {
    let name: String = format!("chat-relay {name}").chars().take(200).collect();
    let body = json!({"name": name, "description": "Made for a chat-relay identity: its conversations run with it."});
    let answer = api.call(caller.clone(), caller.ip, Method::POST, "/api/vaults", Some(&body)).await;
    if !answer.ok() {
        return Err(refusal(&answer));
    }
    answer.data().get("id").and_then(Value::as_str).and_then(|s| s.parse().ok()).ok_or_else(|| {
        tracing::error!("the vault create answer had no id");
        ApiError::internal()
    })
}

/// The identity's vault `vault_id`, or a new one when its owner deleted it.
pub async fn vault_or_new(api: &Api, caller: &Principal, vault_id: Uuid, name: &str) -> Result<Uuid, ApiError> {
    let answer = api.call(caller.clone(), caller.ip, Method::GET, &format!("/api/vaults/{vault_id}"), None).await;
    match answer.status {
        s if s.is_success() => Ok(vault_id),
        StatusCode::NOT_FOUND => create_vault(api, caller, name).await,
        _ => Err(refusal(&answer)),
    }
}

/// Deletes an identity's vault; a failure is logged (the vault stays, the owner may delete it).
pub async fn delete_vault(api: &Api, caller: &Principal, vault_id: Uuid) {
    let answer = api.call(caller.clone(), caller.ip, Method::DELETE, &format!("/api/vaults/{vault_id}"), None).await;
    if !answer.ok() && answer.status != StatusCode::NOT_FOUND {
        tracing::warn!(%vault_id, status = %answer.status, "chat relay: the identity's vault was not deleted: {}", answer.message());
    }
}
