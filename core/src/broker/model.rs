//! A secret binding (DESIGN 9.5) and its request bodies.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

/// Where a binding's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A secret of one of the account's vaults.
    Vault { vault_id: Uuid, key: String },
    /// A secret of one of the account's environments.
    Environment { environment_id: Uuid, key: String },
    /// A record of a source an extension supplies, by its key (`connection_id`).
    External { kind: String, id: Uuid },
}

impl Source {
    /// As stored: kind, record id, key.
    pub fn parts(&self) -> (&str, Uuid, Option<&str>) {
        match self {
            Source::Vault { vault_id, key } => ("vault_id", *vault_id, Some(key)),
            Source::Environment { environment_id, key } => ("environment_id", *environment_id, Some(key)),
            Source::External { kind, id } => (kind, *id, None),
        }
    }

    pub fn from_parts(kind: &str, id: Uuid, key: Option<String>) -> Option<Source> {
        Some(match (kind, key) {
            ("vault_id", Some(key)) => Source::Vault { vault_id: id, key },
            ("environment_id", Some(key)) => Source::Environment { environment_id: id, key },
            ("vault_id" | "environment_id", None) => return None,
            (kind, _) => Source::External { kind: kind.to_owned(), id },
        })
    }

    pub fn body(&self) -> SourceBody {
        match self {
            Source::Vault { vault_id, key } => {
                SourceBody { vault_id: Some(*vault_id), key: Some(key.clone()), ..Default::default() }
            }
            Source::Environment { environment_id, key } => {
                SourceBody { environment_id: Some(*environment_id), key: Some(key.clone()), ..Default::default() }
            }
            Source::External { id, .. } => SourceBody { connection_id: Some(*id), ..Default::default() },
        }
    }
}

/// A binding's source on the wire: exactly one of `{vault_id, key}`,
/// `{environment_id, key}`, `{connection_id}`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[schema(as = SecretBindingSource)]
pub struct SourceBody {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vault_id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<Uuid>,
    /// The secret's key in the vault or environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// A connection (the connections extension): its access token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_id: Option<Uuid>,
}

impl SourceBody {
    /// The source it names, or why it names none.
    pub fn source(&self) -> Result<Source, &'static str> {
        let key = self.key.as_deref().map(str::trim).filter(|k| !k.is_empty());
        match (self.vault_id, self.environment_id, self.connection_id) {
            (Some(vault_id), None, None) => match key {
                Some(key) => Ok(Source::Vault { vault_id, key: key.to_owned() }),
                None => Err("a vault source needs `key`"),
            },
            (None, Some(environment_id), None) => match key {
                Some(key) => Ok(Source::Environment { environment_id, key: key.to_owned() }),
                None => Err("an environment source needs `key`"),
            },
            (None, None, Some(id)) if self.key.is_none() => Ok(Source::External { kind: "connection_id".into(), id }),
            (None, None, Some(_)) => Err("a connection source takes no `key`"),
            _ => Err("must name exactly one of vault_id (with key), environment_id (with key) or connection_id"),
        }
    }
}

/// A secret binding: the broker adds `header: template` (with the source's
/// value in place of `{value}`) to requests from the account's brokered
/// machines to `host`. The value is never returned.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = SecretBinding)]
pub struct Binding {
    pub id: Uuid,
    pub name: String,
    /// `api.example.com`, or `*.example.com` for its subdomains.
    pub host: String,
    pub header: String,
    pub template: String,
    #[serde(serialize_with = "serialize_source")]
    #[schema(value_type = SourceBody)]
    pub source: Source,
    pub enabled: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

fn serialize_source<S: serde::Serializer>(source: &Source, s: S) -> Result<S::Ok, S::Error> {
    source.body().serialize(s)
}

/// `POST /api/secret-bindings`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = SecretBindingCreate)]
pub struct CreateBody {
    /// 1 to 200 characters, unique in the account; the egress record's `service`.
    pub name: String,
    pub host: String,
    /// Such as `authorization` or `x-api-key`.
    pub header: String,
    /// Contains `{value}` once, such as `Bearer {value}`.
    pub template: String,
    pub source: SourceBody,
    /// Default true.
    pub enabled: Option<bool>,
}

/// `PATCH /api/secret-bindings/{id}`: omitted fields stay.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = SecretBindingUpdate)]
pub struct UpdateBody {
    pub name: Option<String>,
    pub host: Option<String>,
    pub header: Option<String>,
    pub template: Option<String>,
    pub source: Option<SourceBody>,
    pub enabled: Option<bool>,
}

impl UpdateBody {
    /// Whether the change needs brokerage on (spec 4.5): it retargets the
    /// binding or turns it on. Setting only `enabled: false` (or renaming)
    /// stays open.
    pub fn needs_brokerage(&self) -> bool {
        self.host.is_some()
            || self.header.is_some()
            || self.template.is_some()
            || self.source.is_some()
            || self.enabled == Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn source(v: serde_json::Value) -> Result<Source, &'static str> {
        serde_json::from_value::<SourceBody>(v).unwrap().source()
    }

    #[test]
    fn sources() {
        let id = Uuid::now_v7();
        assert_eq!(
            source(json!({"vault_id": id, "key": "TOKEN"})),
            Ok(Source::Vault { vault_id: id, key: "TOKEN".into() })
        );
        assert!(source(json!({"vault_id": id})).is_err());
        assert!(source(json!({"environment_id": id, "key": " "})).is_err());
        assert!(source(json!({"connection_id": id, "key": "x"})).is_err());
        assert!(source(json!({"vault_id": id, "environment_id": id, "key": "K"})).is_err());
        assert!(source(json!({})).is_err());
        assert!(serde_json::from_value::<SourceBody>(json!({"url": "x"})).is_err(), "unknown members refused");
        let external = source(json!({"connection_id": id})).unwrap();
        let (kind, got, key) = external.parts();
        assert_eq!((kind, got, key), ("connection_id", id, None));
        assert_eq!(Source::from_parts(kind, got, None), Some(external));
    }

    #[test]
    fn what_needs_brokerage() {
        assert!(!UpdateBody { enabled: Some(false), ..Default::default() }.needs_brokerage());
        assert!(!UpdateBody { name: Some("n".into()), ..Default::default() }.needs_brokerage());
        assert!(UpdateBody { enabled: Some(true), ..Default::default() }.needs_brokerage());
        assert!(UpdateBody { host: Some("a.example.com".into()), ..Default::default() }.needs_brokerage());
    }
}
