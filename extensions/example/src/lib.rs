//! The minimal example of an acs extension (docs/extensions.md walks
//! through it). It uses every part of the contract, so its tests
//! (`tests/contract.rs`) are the contract's tests:
//! - a typed `[example]` section, checked at load whatever the flag says;
//! - a table in its own migrations, per dialect;
//! - `init` state (the greeting);
//! - route groups by caller kind, gated and not;
//! - a field on `/api/auth/me` and one on `/api/catalog`;
//! - an egress hook (refuses one host), a credential source, a grant source (one
//!   openai subscription, from the section), an account-deleted hook;
//! - an `acs example` subcommand.
//!
//! It is not linked into the `acs` binary; its flag is off by default.

use std::sync::Arc;

use acs_platform::auth::Principal;
use acs_platform::config::{ConfigError, Loaded};
use acs_platform::db::{Backend, Db, RowExt};
use acs_platform::egress::Refusal;
use acs_platform::egress::Target;
use acs_platform::egress::hook::EgressHook;
use acs_platform::extension::{
    BoxError, BoxFuture, CliCommand, CredentialSource, Extension, ExtensionState, Field, GrantAttachment, GrantSource,
    GrantSummary, GrantUse, Registration, RouteGroup,
};
use acs_platform::http::{Data, Json, created, ok};
use acs_platform::time_fmt::now_micros;
use acs_platform::{ApiError, ApiResult, AppState};
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use sqlx::migrate::Migrator;
use utoipa::{PartialSchema, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The `[example]` section. `deny_unknown_fields`: a misspelt key stops the start.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExampleConfig {
    pub greeting: String,
    /// A host every machine's egress is refused (the egress hook).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_host: Option<String>,
    /// Supplied as `anthropic_api_key` to sets that hold none (the credential source).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anthropic_api_key: Option<String>,
    /// One openai subscription every account holds (the grant source).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grant: Option<ExampleGrant>,
}

/// The example's one subscription: what credential sets may name, and what
/// the broker attaches for it at `hosts`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExampleGrant {
    pub id: Uuid,
    pub name: String,
    pub token: String,
    pub hosts: Vec<String>,
    /// Set: turns may not run on it, for this reason (`exhausted`, `revoked`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unusable: Option<String>,
}

impl Default for ExampleConfig {
    fn default() -> Self {
        ExampleConfig { greeting: "hello".into(), blocked_host: None, anthropic_api_key: None, grant: None }
    }
}

/// What `init` builds: this server's copy of the section.
pub struct Greeter {
    pub greeting: String,
}

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("migrations/postgres");

pub struct Example;

inventory::submit! { Registration(&Example) }

impl Extension for Example {
    fn name(&self) -> &'static str {
        "example"
    }

    fn enabled_by_default(&self) -> bool {
        false
    }

    fn config_defaults(&self) -> Option<serde_json::Value> {
        serde_json::to_value(ExampleConfig::default()).ok()
    }

    fn check_config(&self, loaded: &Loaded) -> Result<(), ConfigError> {
        let config: ExampleConfig = loaded.section("example")?;
        if config.greeting.trim().is_empty() {
            return Err(ConfigError::Invalid { key: "example.greeting".into(), message: "must not be blank".into() });
        }
        Ok(())
    }

    fn migrations(&self, backend: Backend) -> Option<&'static Migrator> {
        Some(match backend {
            Backend::Sqlite => &SQLITE_MIGRATIONS,
            Backend::Postgres => &POSTGRES_MIGRATIONS,
        })
    }

    fn tags(&self) -> &'static [(&'static str, &'static str)] {
        &[("example", "The example extension: notes, whoami and hello")]
    }

    fn routes(&self) -> Vec<RouteGroup> {
        vec![
            RouteGroup::account(OpenApiRouter::new().routes(routes!(list_example_notes, create_example_note))),
            RouteGroup::sandbox(OpenApiRouter::new().routes(routes!(example_whoami))),
            RouteGroup::public(OpenApiRouter::new().routes(routes!(example_hello))).ungated(),
        ]
    }

    fn init<'a>(&'a self, state: &'a AppState) -> BoxFuture<'a, Result<Option<ExtensionState>, BoxError>> {
        Box::pin(async move {
            let config: ExampleConfig = state.loaded.section("example")?;
            Ok(Some(Arc::new(Greeter { greeting: config.greeting }) as ExtensionState))
        })
    }

    fn egress(&self, loaded: &Loaded) -> Option<Arc<dyn EgressHook>> {
        let config: ExampleConfig = loaded.section("example").ok()?;
        Some(Arc::new(BlockHost(config.blocked_host?)))
    }

    fn credential_source(&self) -> Option<Arc<dyn CredentialSource>> {
        Some(Arc::new(ConfiguredKey))
    }

    fn grant_source(&self) -> Option<Arc<dyn GrantSource>> {
        Some(Arc::new(ConfiguredGrant))
    }

    fn me_fields(&self) -> Vec<Field> {
        vec![Field::boolean("example_enabled", "The example extension is on.", |state, _| {
            state.feature_enabled("example")
        })]
    }

    fn catalog_fields(&self) -> Vec<Field> {
        vec![Field {
            name: "example_greeting",
            description: "What the example extension says.",
            schema: <String as PartialSchema>::schema,
            value: Arc::new(|state, _| serde_json::Value::String(greeting(state))),
        }]
    }

    fn commands(&self) -> Vec<CliCommand> {
        vec![CliCommand { command: cli, run: |loaded, matches| Box::pin(run_cli(loaded, matches)) }]
    }

    fn on_account_deleted<'a>(&'a self, state: &'a AppState, account_id: Uuid) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            sqlx::query("DELETE FROM example_notes WHERE account_id = $1")
                .bind(account_id.to_string())
                .execute(&state.db.pool)
                .await?;
            Ok(())
        })
    }
}

/// The greeting: `init`'s state while the flag is on, else the section itself
/// (the public route is ungated).
fn greeting(state: &AppState) -> String {
    match state.get::<Greeter>() {
        Some(g) => g.greeting.clone(),
        None => state.loaded.section::<ExampleConfig>("example").map(|c| c.greeting).unwrap_or_default(),
    }
}

struct BlockHost(String);

impl EgressHook for BlockHost {
    fn decide(&self, _sandbox_id: Uuid, _method: &hyper::Method, target: &Target) -> Option<Refusal> {
        (target.host() == self.0).then_some(Refusal::HostNotAllowed)
    }
}

struct ConfiguredKey;

impl CredentialSource for ConfiguredKey {
    fn resolve<'a>(
        &'a self,
        state: &'a AppState,
        _account_id: Uuid,
        _set_id: Uuid,
        provider: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, BoxError>> {
        Box::pin(async move {
            let config: ExampleConfig = state.loaded.section("example")?;
            Ok(config.anthropic_api_key.filter(|_| provider == "anthropic_api_key"))
        })
    }
}

struct ConfiguredGrant;

impl ConfiguredGrant {
    fn of(state: &AppState, grant_id: Uuid) -> Option<ExampleGrant> {
        let config: ExampleConfig = state.loaded.section("example").ok()?;
        config.grant.filter(|g| g.id == grant_id)
    }
}

impl GrantSource for ConfiguredGrant {
    fn vendor(&self) -> &'static str {
        "openai"
    }

    fn grant<'a>(
        &'a self,
        state: &'a AppState,
        _account_id: Uuid,
        grant_id: Uuid,
    ) -> BoxFuture<'a, Result<Option<GrantSummary>, BoxError>> {
        let summary = ConfiguredGrant::of(state, grant_id).map(|g| GrantSummary {
            id: g.id,
            name: g.name,
            status: if g.unusable.as_deref() == Some("revoked") { "revoked" } else { "active" }.into(),
        });
        Box::pin(async move { Ok(summary) })
    }

    fn usable<'a>(
        &'a self,
        state: &'a AppState,
        _account_id: Uuid,
        grant_id: Uuid,
    ) -> BoxFuture<'a, Result<GrantUse, BoxError>> {
        let verdict = match ConfiguredGrant::of(state, grant_id).and_then(|g| g.unusable) {
            // Any other reason reads as `revoked`.
            Some(reason) if reason == "exhausted" => GrantUse::Unusable {
                reason: "exhausted",
                until: Some(time::OffsetDateTime::UNIX_EPOCH + time::Duration::days(30_000)),
            },
            Some(_) => GrantUse::Unusable { reason: "revoked", until: None },
            None => GrantUse::Usable,
        };
        Box::pin(async move { Ok(verdict) })
    }

    fn hosts(&self, state: &AppState) -> Vec<String> {
        let config: Option<ExampleConfig> = state.loaded.section("example").ok();
        config.and_then(|c| c.grant).map(|g| g.hosts).unwrap_or_default()
    }

    fn attach<'a>(
        &'a self,
        state: &'a AppState,
        _account_id: Uuid,
        grant_id: Uuid,
    ) -> BoxFuture<'a, Result<GrantAttachment, BoxError>> {
        let value = ConfiguredGrant::of(state, grant_id).map(|g| format!("Bearer {}", g.token));
        Box::pin(async move {
            Ok(GrantAttachment { header: "authorization".into(), value, key: "example_subscription".into() })
        })
    }
}

#[derive(Serialize, ToSchema)]
pub struct ExampleNote {
    pub id: Uuid,
    pub body: String,
}

#[derive(Deserialize, ToSchema)]
pub struct ExampleNoteCreate {
    pub body: String,
}

#[derive(Serialize, ToSchema)]
pub struct ExampleHello {
    pub greeting: String,
}

#[derive(Serialize, ToSchema)]
pub struct ExampleWhoami {
    pub account_id: Uuid,
    /// Set when a sandbox's callback key called.
    pub sandbox_id: Option<Uuid>,
}

/// The caller's notes, newest first.
#[utoipa::path(get, path = "/api/example/notes", operation_id = "listExampleNotes", tag = "example",
    responses((status = 200, body = Data<Vec<ExampleNote>>)))]
async fn list_example_notes(State(state): State<AppState>, p: Principal) -> ApiResult<Data<Vec<ExampleNote>>> {
    let rows =
        sqlx::query("SELECT id, body FROM example_notes WHERE account_id = $1 ORDER BY created_at DESC, id DESC")
            .bind(p.account_id.to_string())
            .fetch_all(&state.db.pool)
            .await?;
    let notes = rows
        .iter()
        .map(|r| Ok(ExampleNote { id: r.uuid("id")?, body: sqlx::Row::try_get(r, "body")? }))
        .collect::<Result<_, sqlx::Error>>()?;
    Ok(ok(notes))
}

/// Keeps a note (1 to 200 characters).
#[utoipa::path(post, path = "/api/example/notes", operation_id = "createExampleNote", tag = "example", request_body = ExampleNoteCreate,
    responses((status = 201, body = Data<ExampleNote>)))]
async fn create_example_note(
    State(state): State<AppState>,
    p: Principal,
    Json(req): Json<ExampleNoteCreate>,
) -> ApiResult<(StatusCode, Data<ExampleNote>)> {
    let len = req.body.chars().count();
    if !(1..=200).contains(&len) {
        return Err(ApiError::invalid("body", "should be 1 to 200 character(s)"));
    }
    let id = Uuid::now_v7();
    sqlx::query("INSERT INTO example_notes (id, account_id, body, created_at) VALUES ($1, $2, $3, $4)")
        .bind(id.to_string())
        .bind(p.account_id.to_string())
        .bind(req.body.clone())
        .bind(now_micros())
        .execute(&state.db.pool)
        .await?;
    Ok(created(ExampleNote { id, body: req.body }))
}

/// Who is calling: account keys and sandbox keys may.
#[utoipa::path(get, path = "/api/example/whoami", operation_id = "getExampleWhoami", tag = "example",
    responses((status = 200, body = Data<ExampleWhoami>)))]
async fn example_whoami(p: Principal) -> Data<ExampleWhoami> {
    ok(ExampleWhoami { account_id: p.account_id, sandbox_id: p.sandbox_id })
}

/// The greeting; public, and served with the flag off too.
#[utoipa::path(get, path = "/api/example/hello", operation_id = "getExampleHello", tag = "example",
    responses((status = 200, body = Data<ExampleHello>)))]
async fn example_hello(State(state): State<AppState>) -> Data<ExampleHello> {
    ok(ExampleHello { greeting: greeting(&state) })
}

fn cli() -> clap::Command {
    clap::Command::new("example")
        .about("The example extension's operator command")
        .subcommand(clap::Command::new("count").about("Print how many notes are kept"))
        .subcommand_required(true)
}

async fn run_cli(loaded: &Loaded, matches: &clap::ArgMatches) -> Result<(), BoxError> {
    match matches.subcommand() {
        Some(("count", _)) => {
            let db = Db::connect(&loaded.config.database).await?;
            acs_platform::extension::migrate(&db).await?;
            let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM example_notes").fetch_one(&db.pool).await?;
            println!("{n} note(s)");
            Ok(())
        }
        _ => Err("unknown example command".into()),
    }
}
