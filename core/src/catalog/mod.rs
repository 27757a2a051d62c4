//! `GET /api/catalog`: what this instance offers.

use std::collections::BTreeMap;

use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::extension::Answer;
use crate::http::{Data, ok};
use crate::state::AppState;

/// A named runtime's pinned package and what this instance has installed (`acs runtimes install`).
#[derive(Serialize, ToSchema)]
pub struct RuntimeVersion {
    pub package: &'static str,
    pub pinned: &'static str,
    /// `None`: not installed; agents of this runtime then need a `command`.
    pub installed: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct SandboxProviders {
    pub enabled: Vec<String>,
    pub default: String,
}

#[derive(Serialize, ToSchema)]
pub struct CatalogApps {
    pub conversations: Option<String>,
    pub team: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct FirstRequest {
    pub curl: String,
    pub typescript: String,
    pub prompt: String,
    pub placeholders: BTreeMap<String, String>,
}

#[derive(Serialize, ToSchema)]
pub struct McpServer {
    pub slug: String,
    pub name: String,
    pub url: String,
    pub dcr: bool,
    pub verified_on: String,
}

#[derive(Serialize, ToSchema)]
pub struct Catalog {
    /// `acp` and the named runtimes installed on this instance.
    pub runtimes: Vec<&'static str>,
    /// Every named runtime: its pinned npm package and the installed version.
    pub runtime_versions: BTreeMap<&'static str, RuntimeVersion>,
    /// Runtime -> suggested `provider/model` ids (suggestions only).
    pub models: BTreeMap<&'static str, Vec<&'static str>>,
    pub model_providers: Vec<&'static str>,
    pub sandbox_providers: SandboxProviders,
    pub package_managers: Vec<&'static str>,
    pub apps: CatalogApps,
    pub first_request: FirstRequest,
    pub mcp_servers: Vec<McpServer>,
    pub sandbox_api_access: Vec<&'static str>,
    /// Fields extensions add (`Extension::catalog_fields`); documented by the host.
    #[serde(flatten)]
    #[schema(ignore)]
    pub extensions: serde_json::Map<String, serde_json::Value>,
}

pub fn catalog(state: &AppState, p: &Principal) -> Catalog {
    let base = state.config().public_url.clone().unwrap_or_else(|| format!("http://{}", state.config().listen));
    let models = BTreeMap::from([
        ("claude", vec!["anthropic/claude-sonnet-4-5", "anthropic/claude-opus-4-1"]),
        ("codex", vec!["openai/gpt-5-codex", "openai/gpt-5"]),
        ("gemini", vec!["google/gemini-2.5-pro", "google/gemini-2.5-flash"]),
        ("opencode", vec!["anthropic/claude-sonnet-4-5", "openai/gpt-5"]),
    ]);
    let installed = crate::runtimes::list(std::path::Path::new(&state.config().runtimes.dir));
    let runtimes = std::iter::once("acp")
        .chain(installed.iter().filter(|s| s.installed.is_some()).map(|s| s.pinned.name))
        .collect();
    let runtime_versions = installed
        .into_iter()
        .map(|s| {
            let v = RuntimeVersion { package: s.pinned.package, pinned: s.pinned.version, installed: s.installed };
            (s.pinned.name, v)
        })
        .collect();
    let prompt = "List the files in the repository and summarise what it does.".to_owned();
    Catalog {
        runtimes,
        runtime_versions,
        models,
        model_providers: vec!["anthropic", "openai", "google"],
        sandbox_providers: SandboxProviders {
            enabled: state.config().sandbox.providers.clone(),
            default: state.config().sandbox.provider.clone(),
        },
        package_managers: vec!["apt", "npm", "pip", "cargo"],
        apps: CatalogApps { conversations: None, team: None },
        first_request: FirstRequest {
            curl: format!(
                "curl -X POST {base}/api/conversations -H 'Authorization: Bearer $ACS_API_KEY' \
                 -H 'Content-Type: application/json' -d '{{\"agent_id\": \"$AGENT_ID\", \"prompt\": \"{prompt}\"}}'"
            ),
            typescript: format!(
                "await fetch(\"{base}/api/conversations\", {{ method: \"POST\", headers: {{ Authorization: `Bearer ${{process.env.ACS_API_KEY}}`, \"Content-Type\": \"application/json\" }}, body: JSON.stringify({{ agent_id: AGENT_ID, prompt: \"{prompt}\" }}) }});"
            ),
            prompt,
            placeholders: BTreeMap::from([
                ("ACS_API_KEY".to_owned(), "an API key from POST /api/auth/login".to_owned()),
                ("AGENT_ID".to_owned(), "an agent id from GET /api/agents".to_owned()),
            ]),
        },
        mcp_servers: Vec::new(),
        sandbox_api_access: vec!["owner", "none"],
        extensions: state.extensions.values(Answer::Catalog, state, p),
    }
}

/// What this instance offers: runtimes, model suggestions, sandbox providers.
#[utoipa::path(get, path = "/api/catalog", operation_id = "getCatalog", tag = "catalog", responses((status = 200, body = Data<Catalog>)))]
async fn get_catalog(State(state): State<AppState>, p: Principal) -> Data<Catalog> {
    ok(catalog(&state, &p))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_catalog))
}
