//! What the compiled-in extensions registered with the host (extension.rs):
//! hooks core consults and fields core answers carry. Kept in the server
//! state, so these types sit beside it.

use std::sync::Arc;

use utoipa::PartialSchema;
use utoipa::openapi::{RefOr, Schema};
use uuid::Uuid;

use super::AppState;
use crate::boxed::{BoxError, BoxFuture};
use crate::principal::Principal;

/// A field an extension adds to a core answer (`GET /api/auth/me`,
/// `GET /api/catalog`), present whether its flag is on or not; its schema is
/// added to the document's schema of that answer.
#[derive(Clone)]
pub struct Field {
    pub name: &'static str,
    pub description: &'static str,
    pub schema: fn() -> RefOr<Schema>,
    pub value: FieldValue,
}

/// How a [`Field`]'s value is computed for one caller.
pub type FieldValue = Arc<dyn Fn(&AppState, &Principal) -> serde_json::Value + Send + Sync>;

impl Field {
    /// A boolean field, the common case (`<name>_enabled`).
    pub fn boolean(name: &'static str, description: &'static str, value: fn(&AppState, &Principal) -> bool) -> Self {
        Field {
            name,
            description,
            schema: <bool as PartialSchema>::schema,
            value: Arc::new(move |state, p| serde_json::Value::Bool(value(state, p))),
        }
    }
}

/// A source of provider credentials for inference credential sets: consulted,
/// in extension order, for a provider the set holds no stored value for
/// (for example a linked subscription standing in for an API key).
pub trait CredentialSource: Send + Sync {
    fn resolve<'a>(
        &'a self,
        state: &'a AppState,
        account_id: Uuid,
        set_id: Uuid,
        provider: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, BoxError>>;
}

/// A source of secret-binding values that core does not store (a
/// connection's OAuth tokens): a binding's `source` object names it by
/// [`BindingSource::key`] (`{"connection_id": ...}`). Consulted while the
/// contributing extension's flag is on; off, its records read as missing.
pub trait BindingSource: Send + Sync {
    /// The member of a binding's `source` object this source answers.
    fn key(&self) -> &'static str;

    /// Whether `id` names a record of this account (checked when a binding
    /// is created or retargeted to it).
    fn exists<'a>(&'a self, state: &'a AppState, account_id: Uuid, id: Uuid) -> BoxFuture<'a, Result<bool, BoxError>>;

    /// The value to attach now (refreshed first if it is about to expire);
    /// `None` when the record is gone, revoked or cannot be refreshed.
    fn value<'a>(
        &'a self,
        state: &'a AppState,
        account_id: Uuid,
        id: Uuid,
    ) -> BoxFuture<'a, Result<Option<SourceValue>, BoxError>>;
}

/// A value a [`BindingSource`] gives the broker.
#[derive(Clone)]
pub struct SourceValue {
    /// What the egress record names as the attached key (never the value).
    pub key: String,
    pub value: String,
    /// Host patterns (exact or `*.`) this value may be sent to; empty: any
    /// host the binding names.
    pub hosts: Vec<String>,
}

impl std::fmt::Debug for SourceValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceValue").field("key", &self.key).field("hosts", &self.hosts).finish_non_exhaustive()
    }
}

/// A vendor subscription an extension links by device-code sign-in (openai,
/// for codex; DESIGN 9.6). A credential set names one in
/// `<vendor>_grant_id`; core asks the extension about it through this.
/// Consulted while the extension's flag is on, and off too (a linked
/// subscription stays usable; only new links need the flag).
pub trait GrantSource: Send + Sync {
    /// The vendor (`openai`): a set's `<vendor>_grant_id` names its grants.
    fn vendor(&self) -> &'static str;

    /// The grant as a credential set shows it; `None` when the account has no such grant.
    fn grant<'a>(
        &'a self,
        state: &'a AppState,
        account_id: Uuid,
        grant_id: Uuid,
    ) -> BoxFuture<'a, Result<Option<GrantSummary>, BoxError>>;

    /// Whether a turn may start on the grant now. Exhaustion is checked with
    /// the vendor at most every 5 minutes; a failed check leaves it usable.
    fn usable<'a>(
        &'a self,
        state: &'a AppState,
        account_id: Uuid,
        grant_id: Uuid,
    ) -> BoxFuture<'a, Result<GrantUse, BoxError>>;

    /// The vendor's API hosts (exact or `*.`): where the broker attaches a grant's token.
    fn hosts(&self, state: &AppState) -> Vec<String>;

    /// What the broker puts on a request to one of [`GrantSource::hosts`]
    /// from a machine running on the grant: the access token (refreshed
    /// first when it expires within a minute), the use recorded.
    fn attach<'a>(
        &'a self,
        state: &'a AppState,
        account_id: Uuid,
        grant_id: Uuid,
    ) -> BoxFuture<'a, Result<GrantAttachment, BoxError>>;
}

/// A grant as a credential set names it (`<vendor>_grant`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GrantSummary {
    pub id: Uuid,
    pub name: String,
    /// `active`, `revoked`, `expired` or `disconnected`.
    pub status: String,
}

/// Whether a turn may run on a grant (spec 4.3, 409 `<vendor>_grant_unusable`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantUse {
    Usable,
    /// `reason`: `disconnected`, `revoked`, `expired`, `reconnect_required`,
    /// `exhausted` (with `until`), `not_found`, `owner_ineligible`.
    Unusable {
        reason: &'static str,
        until: Option<time::OffsetDateTime>,
    },
}

/// A header the broker attaches for a grant.
pub struct GrantAttachment {
    /// Such as `authorization`.
    pub header: String,
    /// The whole header value (`Bearer <token>`); `None` when the grant holds
    /// no usable token now (the request is refused with `credential_missing`).
    pub value: Option<String>,
    /// What the egress record names as the attached key (`openai_subscription`).
    pub key: String,
}

impl std::fmt::Debug for GrantAttachment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrantAttachment").field("header", &self.header).field("key", &self.key).finish_non_exhaustive()
    }
}

/// A field the interface specification names on a core answer but that an
/// extension supplies (for example a flag of an extension this build may not
/// have). The server assembly declares these with `inventory::submit!`; a
/// build in which no compiled-in extension supplies one reports it `false`,
/// so the answer keeps the specification's shape in every build.
pub struct SpecField {
    pub answer: Answer,
    pub name: &'static str,
    pub description: &'static str,
}

inventory::collect!(SpecField);

/// The core answers extensions add fields to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// `GET /api/auth/me`
    Me,
    /// `GET /api/catalog`
    Catalog,
}

/// What the enabled extensions registered with the host, kept in the
/// server's state for the core code that consults it.
#[derive(Default)]
pub struct Contributions {
    pub egress: crate::egress::hook::EgressHooks,
    pub credential_sources: Vec<Arc<dyn CredentialSource>>,
    pub binding_sources: Vec<Arc<dyn BindingSource>>,
    pub grant_sources: Vec<Arc<dyn GrantSource>>,
    pub me_fields: Vec<Field>,
    pub catalog_fields: Vec<Field>,
    /// The extensions' entries in the console's navigation, by extension name.
    pub console_links: Vec<(&'static str, ConsoleLink)>,
}

/// An entry an extension adds to the console's navigation: a page of its
/// session route group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsoleLink {
    pub label: &'static str,
    pub path: &'static str,
}

impl Contributions {
    /// The fields of one answer, as a JSON object to flatten into it.
    pub fn values(
        &self,
        answer: Answer,
        state: &AppState,
        p: &Principal,
    ) -> serde_json::Map<String, serde_json::Value> {
        let fields = match answer {
            Answer::Me => &self.me_fields,
            Answer::Catalog => &self.catalog_fields,
        };
        fields.iter().map(|f| (f.name.to_owned(), (f.value)(state, p))).collect()
    }

    /// A provider credential from the first source that has one.
    pub async fn credential(
        &self,
        state: &AppState,
        account_id: Uuid,
        set_id: Uuid,
        provider: &str,
    ) -> Result<Option<String>, BoxError> {
        for source in &self.credential_sources {
            if let Some(value) = source.resolve(state, account_id, set_id, provider).await? {
                return Ok(Some(value));
            }
        }
        Ok(None)
    }
}
