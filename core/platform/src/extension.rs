//! The extension contract (docs/extensions.md).
//!
//! An extension is a value implementing [`Extension`], submitted with
//! `inventory::submit! { acs_core::extension::Registration(&MyExtension) }`.
//! At start the server walks the inventory (sorted by name): for every
//! compiled-in extension, whether its runtime flag (`features.<name>`) is on
//! or not, it checks the configuration section, applies the migrations, runs
//! `init`, registers the hooks and spawns the workers. A flag changes while
//! the server runs (`crate::features`), so the host consults it on every use:
//! a hook of a disabled extension is skipped, a [`RouteGroup::gated`] group
//! answers `404 <name>_not_enabled`, and a worker checks
//! `state.feature_enabled(name)` before it acts. Routes are mounted group by
//! group behind the authentication their [`Access`] names.

use std::any::Any;
use std::sync::Arc;

use sqlx::migrate::Migrator;
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

use crate::config::{ConfigError, Loaded};
use crate::db::Backend;
use crate::egress::hook::EgressHook;
use crate::state::hooks::OnAppend;
use crate::state::{AppState, Flags};

pub use crate::boxed::{BoxError, BoxFuture};
pub use crate::state::contributions::{
    Answer, BindingSource, ConsoleLink, Contributions, CredentialSource, Field, FieldValue, GrantAttachment,
    GrantSource, GrantSummary, GrantUse, SourceValue, SpecField,
};

/// A long-running task; it must end soon after `state.shutdown` is cancelled.
pub type Worker = BoxFuture<'static, ()>;

/// An extension's own runtime state, built by [`Extension::init`]. The host
/// keeps it in the server's slots under its concrete type, where
/// `state.get::<T>()` finds it.
pub type ExtensionState = Arc<dyn Any + Send + Sync>;

/// Who may call a group of routes. Every kind but `Public` rate-limits per
/// key and counts failed authentications per address, as core routes do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No credential; documented with an empty security requirement.
    Public,
    /// An account's API key (`full` or `restricted`); a sandbox's callback
    /// key is refused with 403 `insufficient_scope`.
    Account,
    /// An account's API key or a sandbox's callback key; handlers check which
    /// machine a sandbox key may act for (`Principal::sandbox_id`).
    Sandbox,
    /// A person in a browser: the `acs_session` cookie, or a full-scope key
    /// for one request. For pages, which are not API operations: add them
    /// with `.route()`, so they stay out of `/api/docs` (the server refuses
    /// to start on a documented operation here). Without a session a page
    /// redirects to `/login?next=...`; handlers take `session::Viewer` and
    /// check its CSRF token on every form (`session::check_csrf`).
    Session,
    /// Operators of the deployment (`auth::authenticate_operator`): an
    /// operator key, or an operator account's full-scope key, as the
    /// extension that defines operators decides; everyone else 403
    /// `insufficient_scope`. Handlers take `principal::Operator`.
    Operator,
}

/// Routes that share who may call them and whether the runtime flag gates them.
pub struct RouteGroup {
    pub access: Access,
    /// With the extension's flag off: `true` answers `404 <name>_not_enabled`,
    /// `false` serves the routes anyway (for reads a spec keeps open when the
    /// feature is off, such as listing what was made while it was on).
    pub gated: bool,
    pub router: OpenApiRouter<AppState>,
}

impl RouteGroup {
    /// Routes for account keys, gated by the flag.
    pub fn account(router: OpenApiRouter<AppState>) -> Self {
        RouteGroup { access: Access::Account, gated: true, router }
    }

    /// Routes for account and sandbox keys, gated by the flag.
    pub fn sandbox(router: OpenApiRouter<AppState>) -> Self {
        RouteGroup { access: Access::Sandbox, gated: true, router }
    }

    /// Pages for a signed-in browser, gated by the flag.
    pub fn session(router: OpenApiRouter<AppState>) -> Self {
        RouteGroup { access: Access::Session, gated: true, router }
    }

    /// Routes for operators, gated by the flag.
    pub fn operator(router: OpenApiRouter<AppState>) -> Self {
        RouteGroup { access: Access::Operator, gated: true, router }
    }

    /// Routes with no credential, gated by the flag.
    pub fn public(router: OpenApiRouter<AppState>) -> Self {
        RouteGroup { access: Access::Public, gated: true, router }
    }

    /// Served whatever the flag says.
    pub fn ungated(self) -> Self {
        RouteGroup { gated: false, ..self }
    }
}

/// An extension's own `acs` subcommand: its definition (clap) and what runs it.
pub struct CliCommand {
    pub command: fn() -> clap::Command,
    /// Runs with the loaded configuration and the subcommand's matches.
    pub run: for<'a> fn(&'a Loaded, &'a clap::ArgMatches) -> BoxFuture<'a, Result<(), BoxError>>,
}

pub trait Extension: Send + Sync + 'static {
    /// Unique name; also its runtime flag (`features.<name>`) and config section.
    fn name(&self) -> &'static str;

    /// Whether the runtime flag is on when the configuration says nothing.
    fn enabled_by_default(&self) -> bool {
        true
    }

    /// Where its configuration section is: `[<name>]` unless the design
    /// puts its keys elsewhere (a dotted path, such as `<topic>.<vendor>`).
    fn config_section(&self) -> &'static str {
        self.name()
    }

    /// Defaults of the extension's configuration section, if it has one.
    fn config_defaults(&self) -> Option<serde_json::Value> {
        None
    }

    /// Checks its section when the configuration is loaded, whether or not
    /// its flag is on (typically `loaded.section::<ItsConfig>(name)` and its
    /// rules): an unknown key or a bad value stops the start, naming it.
    fn check_config(&self, _loaded: &Loaded) -> Result<(), ConfigError> {
        Ok(())
    }

    /// Environment variables read as keys of its section: `(variable, key)`.
    fn env_aliases(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// Its tables: a migrator per database dialect, applied after core's on
    /// every start whether the flag is on or not (a flag turned on later finds
    /// its tables). Versions are shared with core's and every other
    /// extension's, so each extension numbers in a range of its own
    /// (docs/extensions.md); the host refuses to start on a clash.
    fn migrations(&self, _backend: Backend) -> Option<&'static Migrator> {
        None
    }

    /// Its routes, in groups by caller kind, documented in `/api/docs`.
    fn routes(&self) -> Vec<RouteGroup>;

    /// The tags its operations carry, `(name, description)`, declared in
    /// `/api/docs`; the server refuses to start on an operation whose tag no
    /// one declares.
    fn tags(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// Builds the extension's own state once, before the server accepts
    /// requests, flag on or off (it may be turned on later); an error stops
    /// the start.
    fn init<'a>(&'a self, _state: &'a AppState) -> BoxFuture<'a, Result<Option<ExtensionState>, BoxError>> {
        Box::pin(async { Ok(None) })
    }

    /// Runs inside every event append's transaction while the flag is on
    /// (`state::hooks`): what must commit with the events.
    fn on_append(&self) -> Option<Arc<dyn OnAppend>> {
        None
    }

    /// Decides egress requests of every machine, after the machine's own
    /// network policy allowed them, while the flag is on. Built once, from
    /// the configuration, when the server starts.
    fn egress(&self, _loaded: &Loaded) -> Option<Arc<dyn EgressHook>> {
        None
    }

    /// Supplies provider credentials a set does not store, while the flag is on.
    fn credential_source(&self) -> Option<Arc<dyn CredentialSource>> {
        None
    }

    /// Supplies secret-binding values core does not store, while the flag is on.
    fn binding_source(&self) -> Option<Arc<dyn BindingSource>> {
        None
    }

    /// The vendor subscriptions it links (credential sets name them), flag on or off.
    fn grant_source(&self) -> Option<Arc<dyn GrantSource>> {
        None
    }

    /// Fields it adds to `GET /api/auth/me`.
    fn me_fields(&self) -> Vec<Field> {
        Vec::new()
    }

    /// Fields it adds to `GET /api/catalog`.
    fn catalog_fields(&self) -> Vec<Field> {
        Vec::new()
    }

    /// Manifest kinds it applies (`POST /api/apply`), after core's own.
    fn apply_kinds(&self) -> Vec<std::sync::Arc<dyn crate::apply::ApplyKind>> {
        Vec::new()
    }

    /// Entries it adds to the console's navigation (pages of its
    /// [`RouteGroup::session`] groups), shown while it is enabled.
    fn console_links(&self) -> Vec<ConsoleLink> {
        Vec::new()
    }

    /// Subcommands it adds to `acs` (working on the configured database, as
    /// the operator commands of core do).
    fn commands(&self) -> Vec<CliCommand> {
        Vec::new()
    }

    /// Runs once after the server stopped accepting requests, flag on or off.
    fn on_stop<'a>(&'a self, _state: &'a AppState) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// Runs when an account is deleted, before its rows are removed, for
    /// every compiled-in extension whatever its flag ([`account_deleted`]).
    fn on_account_deleted<'a>(
        &'a self,
        _state: &'a AppState,
        _account_id: Uuid,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async { Ok(()) })
    }

    /// Writes its part of an account export (docs/accounts.md), for every
    /// compiled-in extension whatever its flag: top-level lists of the
    /// account's records through `out`, never a secret, a token or a hash.
    /// Page through large tables; `out` flushes as it goes.
    fn on_export<'a>(
        &'a self,
        _state: &'a AppState,
        _account_id: Uuid,
        _out: &'a mut dyn ExportSink,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async { Ok(()) })
    }

    /// Background workers, spawned after `init` flag on or off; each checks
    /// `state.feature_enabled(name)` before acting, so it idles while off.
    fn workers(&self, _state: &AppState) -> Vec<Worker> {
        Vec::new()
    }
}

/// Where an account export is written ([`Extension::on_export`]): named
/// top-level lists of JSON items, streamed to storage as they come.
pub trait ExportSink: Send {
    /// Opens the top-level list `name` (a name core or another extension
    /// already wrote is refused).
    fn begin_list<'a>(&'a mut self, name: &'a str) -> BoxFuture<'a, Result<(), BoxError>>;
    /// Appends one item to the open list.
    fn item<'a>(&'a mut self, item: &'a serde_json::Value) -> BoxFuture<'a, Result<(), BoxError>>;
    /// Closes the open list.
    fn end_list(&mut self) -> BoxFuture<'_, Result<(), BoxError>>;
}

/// What an extension submits to the inventory.
pub struct Registration(pub &'static dyn Extension);

inventory::collect!(Registration);

/// Every compiled-in extension, sorted by name (inventory order is not fixed).
pub fn all() -> Vec<&'static dyn Extension> {
    let mut v: Vec<&'static dyn Extension> = inventory::iter::<Registration>.into_iter().map(|r| r.0).collect();
    v.sort_by_key(|e| e.name());
    v
}

/// Refuses two extensions with one name, so a flag or section is never ambiguous.
pub fn check_unique(exts: &[&'static dyn Extension]) -> Result<(), String> {
    for pair in exts.windows(2) {
        if pair[0].name() == pair[1].name() {
            return Err(format!("two extensions are named `{}`", pair[0].name()));
        }
    }
    Ok(())
}

/// Tells every compiled-in extension that an account is going away, before
/// its rows are removed; the first error stops the deletion.
pub async fn account_deleted(state: &AppState, account_id: Uuid) -> Result<(), BoxError> {
    for ext in all() {
        ext.on_account_deleted(state, account_id).await.map_err(|e| format!("extension {}: {e}", ext.name()))?;
    }
    Ok(())
}

/// An extension's hook, consulted only while its flag is on.
struct WhenOn<T: ?Sized> {
    name: &'static str,
    flags: Arc<Flags>,
    inner: Arc<T>,
}

impl<T: ?Sized> WhenOn<T> {
    fn wrap(name: &'static str, flags: &Arc<Flags>, inner: Arc<T>) -> Self {
        WhenOn { name, flags: flags.clone(), inner }
    }

    fn on(&self) -> bool {
        self.flags.enabled(self.name)
    }
}

impl OnAppend for WhenOn<dyn OnAppend> {
    fn appended<'a>(
        &'a self,
        tx: &'a mut sqlx::Transaction<'static, sqlx::Any>,
        events: &'a [crate::journal::Event],
    ) -> BoxFuture<'a, Result<bool, sqlx::Error>> {
        if self.on() { self.inner.appended(tx, events) } else { Box::pin(async { Ok(false) }) }
    }

    fn committed(&self, app: &AppState) {
        self.inner.committed(app)
    }
}

impl EgressHook for WhenOn<dyn EgressHook> {
    fn decide(
        &self,
        sandbox_id: Uuid,
        method: &hyper::Method,
        target: &crate::egress::Target,
    ) -> Option<crate::egress::Refusal> {
        if self.on() { self.inner.decide(sandbox_id, method, target) } else { None }
    }
}

impl CredentialSource for WhenOn<dyn CredentialSource> {
    fn resolve<'a>(
        &'a self,
        state: &'a AppState,
        account_id: Uuid,
        set_id: Uuid,
        provider: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, BoxError>> {
        if self.on() { self.inner.resolve(state, account_id, set_id, provider) } else { Box::pin(async { Ok(None) }) }
    }
}

impl BindingSource for WhenOn<dyn BindingSource> {
    fn key(&self) -> &'static str {
        self.inner.key()
    }

    fn exists<'a>(&'a self, state: &'a AppState, account_id: Uuid, id: Uuid) -> BoxFuture<'a, Result<bool, BoxError>> {
        if self.on() { self.inner.exists(state, account_id, id) } else { Box::pin(async { Ok(false) }) }
    }

    fn value<'a>(
        &'a self,
        state: &'a AppState,
        account_id: Uuid,
        id: Uuid,
    ) -> BoxFuture<'a, Result<Option<SourceValue>, BoxError>> {
        if self.on() { self.inner.value(state, account_id, id) } else { Box::pin(async { Ok(None) }) }
    }
}

/// The event-append hooks of every compiled-in extension, each run while its flag is on.
pub fn append_hooks(exts: &[&'static dyn Extension], flags: &Arc<Flags>) -> Vec<Arc<dyn OnAppend>> {
    exts.iter()
        .filter_map(|e| e.on_append().map(|h| Arc::new(WhenOn::wrap(e.name(), flags, h)) as Arc<dyn OnAppend>))
        .collect()
}

/// Hooks of every compiled-in extension, each consulted while its flag is
/// on; answer fields of every one (the field itself says whether the
/// feature is on), then the specification's fields no extension supplied.
pub fn contributions(exts: &[&'static dyn Extension], loaded: &Loaded, flags: &Arc<Flags>) -> Contributions {
    let mut me_fields: Vec<Field> = exts.iter().flat_map(|e| e.me_fields()).collect();
    let mut catalog_fields: Vec<Field> = exts.iter().flat_map(|e| e.catalog_fields()).collect();
    for spec in inventory::iter::<SpecField> {
        let fields = match spec.answer {
            Answer::Me => &mut me_fields,
            Answer::Catalog => &mut catalog_fields,
        };
        if !fields.iter().any(|f| f.name == spec.name) {
            fields.push(Field::boolean(spec.name, spec.description, |_, _| false));
        }
    }
    me_fields.sort_by_key(|f| f.name);
    catalog_fields.sort_by_key(|f| f.name);
    Contributions {
        egress: crate::egress::hook::EgressHooks(
            exts.iter()
                .filter_map(|e| {
                    e.egress(loaded).map(|h| Arc::new(WhenOn::wrap(e.name(), flags, h)) as Arc<dyn EgressHook>)
                })
                .collect(),
        ),
        credential_sources: exts
            .iter()
            .filter_map(|e| {
                e.credential_source().map(|h| Arc::new(WhenOn::wrap(e.name(), flags, h)) as Arc<dyn CredentialSource>)
            })
            .collect(),
        binding_sources: exts
            .iter()
            .filter_map(|e| {
                e.binding_source().map(|h| Arc::new(WhenOn::wrap(e.name(), flags, h)) as Arc<dyn BindingSource>)
            })
            .collect(),
        grant_sources: exts.iter().filter_map(|e| e.grant_source()).collect(),
        me_fields,
        catalog_fields,
        console_links: exts.iter().flat_map(|e| e.console_links().into_iter().map(|l| (e.name(), l))).collect(),
    }
}

/// Applies core's migrations and those of every compiled-in extension.
pub async fn migrate(db: &crate::db::Db) -> Result<(), sqlx::migrate::MigrateError> {
    let own: Vec<_> = all().into_iter().filter_map(|e| e.migrations(db.backend).map(|m| (e.name(), m))).collect();
    db.migrate(&own).await
}

/// `cli` with every compiled-in extension's subcommands added.
pub fn with_commands(mut cli: clap::Command) -> clap::Command {
    for c in all().iter().flat_map(|e| e.commands()) {
        cli = cli.subcommand((c.command)());
    }
    cli
}

/// The extension subcommand `matches` names, with its own matches; `None`
/// when it names one of core's.
pub fn command_of(matches: &clap::ArgMatches) -> Option<(CliCommand, &clap::ArgMatches)> {
    let (name, sub) = matches.subcommand()?;
    let command = all().iter().flat_map(|e| e.commands()).find(|c| (c.command)().get_name() == name)?;
    Some((command, sub))
}

/// The configuration of this build: acs-store's, with the sections and
/// flags of the compiled-in extensions.
pub mod config {
    use std::path::Path;

    pub use acs_store::config::*;

    /// Runtime flags of core itself, with their defaults: `brokerage` (the
    /// egress broker and secret bindings, DESIGN 9.5).
    pub const CORE_FLAGS: &[(&str, bool)] = &[(crate::features::BROKERAGE, false)];

    pub fn sections() -> Vec<Section> {
        let core = CORE_FLAGS.iter().map(|(name, on)| Section {
            name,
            section: name,
            enabled_by_default: *on,
            defaults: None,
            env_aliases: &[],
        });
        core.chain(super::all().iter().map(|e| Section {
            name: e.name(),
            section: e.config_section(),
            enabled_by_default: e.enabled_by_default(),
            defaults: e.config_defaults(),
            env_aliases: e.env_aliases(),
        }))
        .collect()
    }

    /// Defaults, then the file, then the environment.
    pub fn figment(file: Option<&Path>) -> figment::Figment {
        figment_with(file, &sections())
    }

    /// Loads and checks the configuration, every extension's section included.
    pub fn load(file: Option<&Path>) -> Result<Loaded, ConfigError> {
        check_extensions(load_with(file, &sections())?)
    }

    /// Checks a figment stack, every extension's section included.
    pub fn from_figment(figment: figment::Figment) -> Result<Loaded, ConfigError> {
        check_extensions(from_figment_with(figment, &sections())?)
    }

    /// Each compiled-in extension checks its section, whether its flag is on
    /// or not: a flag turned on later must not meet a section that was never valid.
    fn check_extensions(loaded: Loaded) -> Result<Loaded, ConfigError> {
        for ext in super::all() {
            ext.check_config(&loaded)?;
        }
        Ok(loaded)
    }
}
