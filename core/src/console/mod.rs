//! The web console's pages (DESIGN 9.1, docs/console.md): server-rendered
//! HTML for a signed-in person, outside `/api` and its document. Every read
//! and change goes through the API in process (`acs_platform::console::api`),
//! so a page can do exactly what the same person's full-scope key can, with
//! the same checks and refusals. The live conversation page also follows the
//! event log directly, as the API's stream does.

mod agents;
mod conversation;
mod keys;
mod overview;
mod sandboxes;
mod settings;
mod team;

use axum::Router;

use crate::state::AppState;

pub use acs_platform::console::*;
pub use acs_platform::session::html::{escape, hidden};

/// Core's entries in the navigation, before the extensions'.
pub fn links() -> Vec<Link> {
    [
        ("Overview", "/"),
        ("Agents", "/agents"),
        ("Conversations", "/conversations"),
        ("Sandboxes", "/sandboxes"),
        ("Environments", "/environments"),
        ("Vaults", "/vaults"),
        ("Credentials", "/account/credentials"),
        ("Team", "/team"),
        ("Keys", "/account/keys"),
    ]
    .into_iter()
    .map(|(label, path)| Link { label, path })
    .collect()
}

/// Every core page.
pub fn router() -> Router<AppState> {
    Router::new()
        .merge(overview::router())
        .merge(conversation::router())
        .merge(sandboxes::router())
        .merge(agents::router())
        .merge(settings::router())
        .merge(team::router())
        .merge(keys::router())
}

/// A conversation's name on a page: its title, or the end of its id (the
/// start of a v7 id is its time, shared by conversations made together).
pub fn conversation_title(conv: &serde_json::Value) -> String {
    match conv["title"].as_str().filter(|t| !t.is_empty()) {
        Some(t) => t.to_owned(),
        None => {
            let id = conv["id"].as_str().unwrap_or("");
            format!("Untitled {}", id.get(id.len().saturating_sub(8)..).unwrap_or(""))
        }
    }
}

/// A path segment from the API, made safe for an address: ids are uuids, but
/// a page never trusts that.
pub fn seg(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}
