//! Environments (spec 2.4): what a sandbox is built from (packages,
//! repositories, setup script, network policy) plus its variables and
//! write-only secrets. Each keeps a build fingerprint so a later launch can
//! tell whether an existing disk still matches.

pub mod rules;
pub mod secrets;

use std::collections::{BTreeMap, BTreeSet};

use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use serde_json::{Map, Value};
use sqlx::any::AnyRow;
use sqlx::{Any, Row};
use time::OffsetDateTime;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::audit::{self, Actor};
use crate::auth::Principal;
use crate::db::RowExt;
use crate::error::{ApiError, ApiResult};
use crate::http::{Data, Json, Path, created, ok};
use crate::state::AppState;
use crate::time_fmt::{from_micros, now_micros};
pub use rules::{EnvironmentSpec, EnvironmentUpdate, NetworkingConfig, NetworkingType, Repository};
pub use secrets::secret_values;

/// An environment as read back.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Environment {
    pub id: Uuid,
    pub name: String,
    pub env_vars: BTreeMap<String, String>,
    pub metadata: Map<String, Value>,
    pub packages: Map<String, Value>,
    pub repositories: Vec<Repository>,
    pub setup_script: String,
    pub setup_timeout_seconds: i64,
    pub networking_type: NetworkingType,
    pub networking_config: NetworkingConfig,
    /// Hex SHA-256 of packages, repositories, setup script and network policy.
    pub build_fingerprint: String,
    /// When `build_fingerprint` last changed.
    #[serde(with = "time::serde::rfc3339")]
    pub fingerprint_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub inserted_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl Environment {
    fn new(id: Uuid, name: String, spec: EnvironmentSpec, fingerprint: String, times: [i64; 3]) -> Environment {
        let [fingerprint_at, inserted_at, updated_at] = times.map(from_micros);
        Environment {
            id,
            name,
            env_vars: spec.env_vars,
            metadata: spec.metadata,
            packages: spec.packages,
            repositories: spec.repositories,
            setup_script: spec.setup_script,
            setup_timeout_seconds: spec.setup_timeout_seconds,
            networking_type: spec.networking_type,
            networking_config: spec.networking_config,
            build_fingerprint: fingerprint,
            fingerprint_at,
            inserted_at,
            updated_at,
        }
    }
}

/// A stored row: the name, the parsed spec and the fingerprint with its time.
struct Stored {
    name: String,
    spec: EnvironmentSpec,
    fingerprint: String,
    fingerprint_at: i64,
    created_at: i64,
    updated_at: i64,
}

const COLUMNS: &str = "name, spec, build_fingerprint, fingerprint_at, created_at, updated_at";

fn stored_from_row(row: &AnyRow) -> Result<Stored, sqlx::Error> {
    let spec = row.json("spec")?.unwrap_or_default();
    Ok(Stored {
        name: row.try_get("name")?,
        spec: serde_json::from_value(spec)
            .map_err(|e| sqlx::Error::ColumnDecode { index: "spec".into(), source: Box::new(e) })?,
        fingerprint: row.try_get("build_fingerprint")?,
        fingerprint_at: row.try_get("fingerprint_at")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

fn from_row(row: &AnyRow) -> Result<Environment, sqlx::Error> {
    let s = stored_from_row(row)?;
    Ok(Environment::new(row.uuid("id")?, s.name, s.spec, s.fingerprint, [s.fingerprint_at, s.created_at, s.updated_at]))
}

async fn load<'e, E: sqlx::Executor<'e, Database = Any>>(ex: E, account_id: Uuid, id: Uuid) -> ApiResult<Stored> {
    let sql = sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM environments WHERE id = $1 AND account_id = $2"));
    let row = sqlx::query(sql)
        .bind(id.to_string())
        .bind(account_id.to_string())
        .fetch_optional(ex)
        .await?
        .ok_or_else(|| ApiError::not_found("Environment"))?;
    Ok(stored_from_row(&row)?)
}

/// Takes the environment's row lock first thing in a transaction (a no-op
/// write), so checks made next against its secrets and repositories hold
/// until commit on both databases. 404 when the account has no such environment.
async fn lock(tx: &mut sqlx::Transaction<'_, Any>, account_id: Uuid, id: Uuid) -> ApiResult<()> {
    let done = sqlx::query("UPDATE environments SET updated_at = updated_at WHERE id = $1 AND account_id = $2")
        .bind(id.to_string())
        .bind(account_id.to_string())
        .execute(&mut **tx)
        .await?;
    if done.rows_affected() == 0 {
        return Err(ApiError::not_found("Environment"));
    }
    Ok(())
}

fn spec_json(spec: &EnvironmentSpec) -> String {
    serde_json::to_string(spec).expect("an environment spec always serializes")
}

/// The account's environments, newest first.
#[utoipa::path(get, path = "/api/environments", operation_id = "listEnvironments", tag = "environments",
    responses((status = 200, description = "The account's environments, newest first", body = Data<Vec<Environment>>)))]
async fn list(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<Environment>>> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT id, {COLUMNS} FROM environments WHERE account_id = $1 ORDER BY created_at DESC, id DESC"
    ));
    let rows = sqlx::query(sql).bind(p.account_id.to_string()).fetch_all(&state.db.pool).await?;
    Ok(ok(rows.iter().map(from_row).collect::<Result<_, _>>()?))
}

acs_platform::create_body!(
    /// The documented body of an environment create (the handler reads an `EnvironmentUpdate`).
    EnvironmentCreate from EnvironmentUpdate, required ["name"],
    "Body of create: `name` is required; the rest as in an update."
);

/// Creates an environment; `name` is required.
#[utoipa::path(post, path = "/api/environments", operation_id = "createEnvironment", tag = "environments", request_body = EnvironmentCreate,
    responses((status = 201, description = "Created", body = Data<Environment>)))]
async fn create_environment(
    State(state): State<AppState>,
    p: Principal,
    Json(req): Json<EnvironmentUpdate>,
) -> ApiResult<(StatusCode, Data<Environment>)> {
    let (name, spec) = rules::merge(String::new(), EnvironmentSpec::default(), req);
    // A new environment holds no secrets yet, so no repository may name one.
    rules::validate(&name, &spec, &BTreeSet::new())?;
    let name = name.trim().to_owned();
    let id = Uuid::now_v7();
    let now = now_micros();
    let fingerprint = rules::fingerprint(&spec);
    let mut tx = state.db.begin().await?;
    sqlx::query(
        "INSERT INTO environments (id, account_id, name, spec, build_fingerprint, fingerprint_at, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $6, $6)",
    )
    .bind(id.to_string())
    .bind(p.account_id.to_string())
    .bind(name.clone())
    .bind(spec_json(&spec))
    .bind(fingerprint.clone())
    .bind(now)
    .execute(&mut *tx)
    .await?;
    audit::record(&mut *tx, &Actor::key(&p), "environment.created", Some(("environment", id))).await?;
    tx.commit().await?;
    Ok(created(Environment::new(id, name, spec, fingerprint, [now; 3])))
}

/// One environment.
#[utoipa::path(get, path = "/api/environments/{id}", operation_id = "getEnvironment", tag = "environments", params(("id" = Uuid, Path)),
    responses((status = 200, description = "The environment", body = Data<Environment>)))]
async fn get_one(State(state): State<AppState>, p: Principal, Path(id): Path<Uuid>) -> ApiResult<Data<Environment>> {
    Ok(ok(get_environment(&state, p.account_id, id).await?))
}

/// One of the account's environments; 404 otherwise.
pub async fn get_environment(state: &AppState, account_id: Uuid, id: Uuid) -> ApiResult<Environment> {
    let s = load(&state.db.pool, account_id, id).await?;
    Ok(Environment::new(id, s.name, s.spec, s.fingerprint, [s.fingerprint_at, s.created_at, s.updated_at]))
}

/// Updates an environment: omitted fields are unchanged and the result is checked whole.
/// `fingerprint_at` moves only when the build inputs change.
#[utoipa::path(patch, path = "/api/environments/{id}", operation_id = "updateEnvironment", tag = "environments", params(("id" = Uuid, Path)),
    request_body = EnvironmentUpdate,
    responses((status = 200, description = "The updated environment", body = Data<Environment>)))]
async fn update_environment(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<EnvironmentUpdate>,
) -> ApiResult<Data<Environment>> {
    let mut tx = state.db.begin().await?;
    lock(&mut tx, p.account_id, id).await?;
    let current = load(&mut *tx, p.account_id, id).await?;
    let (name, spec) = rules::merge(current.name, current.spec, req);
    let keys = secrets::keys(&mut *tx, id).await?;
    rules::validate(&name, &spec, &keys)?;
    let name = name.trim().to_owned();
    let fingerprint = rules::fingerprint(&spec);
    let now = now_micros();
    let fingerprint_at = rules::fingerprint_at(&current.fingerprint, current.fingerprint_at, &fingerprint, now);
    sqlx::query(
        "UPDATE environments SET name = $1, spec = $2, build_fingerprint = $3, fingerprint_at = $4, updated_at = $5 \
         WHERE id = $6 AND account_id = $7",
    )
    .bind(name.clone())
    .bind(spec_json(&spec))
    .bind(fingerprint.clone())
    .bind(fingerprint_at)
    .bind(now)
    .bind(id.to_string())
    .bind(p.account_id.to_string())
    .execute(&mut *tx)
    .await?;
    audit::record(&mut *tx, &Actor::key(&p), "environment.updated", Some(("environment", id))).await?;
    tx.commit().await?;
    Ok(ok(Environment::new(id, name, spec, fingerprint, [fingerprint_at, current.created_at, now])))
}

/// Deletes an environment and its secrets.
#[utoipa::path(delete, path = "/api/environments/{id}", operation_id = "deleteEnvironment", tag = "environments", params(("id" = Uuid, Path)),
    responses((status = 204, description = "Deleted"),
        (status = 404, description = "No such environment", body = crate::error::ErrorBody)))]
async fn delete_environment(
    State(state): State<AppState>,
    p: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    let mut tx = state.db.begin().await?;
    // Secrets go with it (ON DELETE CASCADE).
    let done = sqlx::query("DELETE FROM environments WHERE id = $1 AND account_id = $2")
        .bind(id.to_string())
        .bind(p.account_id.to_string())
        .execute(&mut *tx)
        .await?;
    if done.rows_affected() == 0 {
        return Err(ApiError::not_found("Environment"));
    }
    audit::record(&mut *tx, &Actor::key(&p), "environment.deleted", Some(("environment", id))).await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create_environment))
        .routes(routes!(get_one, update_environment, delete_environment))
        .routes(routes!(secrets::list_secrets))
        .routes(routes!(secrets::put_secret, secrets::delete_secret))
}

#[cfg(test)]
pub(crate) mod testing {
    //! A real server state over a fresh SQLite file, for unit tests of
    //! functions that later issues call directly.

    use figment::providers::Serialized;
    use uuid::Uuid;

    use crate::state::AppState;
    use crate::time_fmt::now_micros;

    pub struct TestState {
        pub state: AppState,
        pub account_id: Uuid,
        dir: std::path::PathBuf,
    }

    impl Drop for TestState {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// Builds the state (migrated database, key file) and inserts one account.
    pub async fn state() -> TestState {
        let dir = std::env::temp_dir().join(format!("acs-unit-{}", Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let fig = crate::extension::config::figment(None)
            .merge(Serialized::default("database.url", format!("sqlite://{}", dir.join("acs.db").display())))
            .merge(Serialized::default("secrets.master_key_file", dir.join("acs.key").display().to_string()));
        let loaded = crate::extension::config::from_figment(fig).unwrap();
        let state = crate::server::build(loaded).await.unwrap().state;
        let account_id = Uuid::now_v7();
        sqlx::query(
            "INSERT INTO accounts (id, email, password_hash, created_at, updated_at) VALUES ($1, $2, 'x', $3, $3)",
        )
        .bind(account_id.to_string())
        .bind(format!("{account_id}@example.com"))
        .bind(now_micros())
        .execute(&state.db.pool)
        .await
        .unwrap();
        TestState { state, account_id, dir }
    }
}
