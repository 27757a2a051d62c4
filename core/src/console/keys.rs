//! `/account/keys` and `/account/oauth-clients`: API keys (a new key's value
//! is shown once, on the page that made it, never in an address) and the
//! OAuth clients of the account's apps.

use axum::Router;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{
    Console, Nothing, Posted, button, error, escape, form, input, list, seg, select, shown_once, table, text, textarea,
    when,
};
use crate::state::AppState;

const SCOPES: [(&str, &str); 2] = [
    ("full", "Full: everything the account may do"),
    ("restricted", "Restricted: no key, credential or webhook management"),
];

/// The keys page, with `top` above the list (a new key's value, or why a key
/// was refused) and the form filled with `draft` (what was refused).
async fn keys_page(c: &Console, status: StatusCode, top: &str, draft: &KeyForm) -> Response {
    let keys = c.get("/api/keys").await;
    if !keys.ok() {
        return c.refused("API keys", &keys);
    }
    let rows: Vec<Vec<String>> = list(&keys)
        .iter()
        .filter(|k| k["scope"] != "sandbox")
        .map(|k| {
            vec![
                text(k, "name"),
                format!("<code>{}…</code>", text(k, "prefix")),
                text(k, "scope"),
                when(k, "inserted_at"),
                when(k, "last_used_at"),
                when(k, "expires_at"),
                button(c, &format!("/account/keys/{}/revoke", seg(k["id"].as_str().unwrap_or(""))), "Revoke", "danger"),
            ]
        })
        .collect();
    let body = format!(
        "<h1>API keys</h1>{top}{}<h2>New key</h2>{}\
         <p class=\"hint\">Apps that sign people in use <a href=\"/account/oauth-clients\">OAuth clients</a> instead of keys.</p>",
        table(&["Name", "Key", "Scope", "Created", "Last used", "Expires", ""], &rows, "No keys."),
        form(
            c,
            "/account/keys",
            &format!(
                "{}{}",
                input("Name", "name", "text", &draft.name, "required maxlength=\"100\""),
                select("Scope", "scope", &SCOPES, &draft.scope)
            ),
            "Create key"
        ),
    );
    c.page_with_status(status, "API keys", &body)
}

async fn keys(c: Console) -> Response {
    keys_page(&c, StatusCode::OK, "", &KeyForm::default()).await
}

#[derive(Deserialize)]
struct KeyForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    scope: String,
}

impl Default for KeyForm {
    fn default() -> Self {
        KeyForm { name: String::new(), scope: "full".into() }
    }
}

async fn create_key(Posted(c, f): Posted<KeyForm>) -> Response {
    let a = c.post("/api/keys", &json!({"name": f.name.trim(), "scope": f.scope})).await;
    match a.data()["api_key"].as_str().filter(|_| a.ok()) {
        Some(value) => keys_page(&c, StatusCode::OK, &shown_once("Your new key.", value), &KeyForm::default()).await,
        None => keys_page(&c, a.status, &error(&a.message()), &f).await,
    }
}

async fn revoke(Path(id): Path<Uuid>, Posted(c, _): Posted<Nothing>) -> Response {
    let a = c.delete(&format!("/api/keys/{id}")).await;
    c.done(&a, "/account/keys")
}

async fn clients_page(c: &Console, status: StatusCode, top: &str, draft: &ClientForm) -> Response {
    let clients = c.get("/api/oauth/clients").await;
    if !clients.ok() {
        return c.refused("OAuth clients", &clients);
    }
    let rows: Vec<Vec<String>> = list(&clients)
        .iter()
        .map(|o| {
            let uris: Vec<String> = o["redirect_uris"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|u| format!("<code>{}</code>", escape(u)))
                .collect();
            vec![
                text(o, "name"),
                format!("<code>{}</code>", text(o, "client_id")),
                uris.join("<br>"),
                if o["published"] == true { "published".to_owned() } else { "private".to_owned() },
                button(
                    c,
                    &format!("/account/oauth-clients/{}/delete", seg(o["id"].as_str().unwrap_or(""))),
                    "Delete",
                    "danger",
                ),
            ]
        })
        .collect();
    let body = format!(
        "<p class=\"crumbs\"><a href=\"/account/keys\">API keys</a></p><h1>OAuth clients</h1>{top}\
         <p class=\"hint\">An app sends people to <code>/oauth/authorize</code> with its client id and PKCE, and exchanges \
         the code at <code>/api/oauth/token</code> for a key (docs/oauth.md).</p>{}<h2>New client</h2>{}",
        table(&["Name", "Client id", "Redirect URIs", "Listed", ""], &rows, "No clients."),
        form(
            c,
            "/account/oauth-clients",
            &format!(
                "{}{}",
                input("Name", "name", "text", &draft.name, "required maxlength=\"100\""),
                textarea(
                    "Redirect URIs",
                    "redirect_uris",
                    &draft.redirect_uris,
                    "required rows=\"3\" placeholder=\"https://app.example.com/callback\""
                )
            ),
            "Register client"
        ),
    );
    c.page_with_status(status, "OAuth clients", &body)
}

async fn clients(c: Console) -> Response {
    clients_page(&c, StatusCode::OK, "", &ClientForm::default()).await
}

#[derive(Deserialize, Default)]
struct ClientForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    redirect_uris: String,
}

async fn create_client(Posted(c, f): Posted<ClientForm>) -> Response {
    let uris: Vec<&str> = f.redirect_uris.lines().map(str::trim).filter(|u| !u.is_empty()).collect();
    let a = c.post("/api/oauth/clients", &json!({"name": f.name.trim(), "redirect_uris": uris})).await;
    if a.ok() {
        let mut note = format!(
            "<p class=\"notice\" role=\"status\">Registered: client id <code>{}</code>.</p>",
            escape(a.data()["client_id"].as_str().unwrap_or(""))
        );
        // Clients are public (PKCE); should the API ever give a secret, it is shown this once.
        if let Some(secret) = a.data()["client_secret"].as_str() {
            note.push_str(&shown_once("The client's secret.", secret));
        }
        return clients_page(&c, StatusCode::OK, &note, &ClientForm::default()).await;
    }
    clients_page(&c, a.status, &error(&a.message()), &f).await
}

async fn delete_client(Path(id): Path<Uuid>, Posted(c, _): Posted<Nothing>) -> Response {
    let a = c.delete(&format!("/api/oauth/clients/{id}")).await;
    c.done(&a, "/account/oauth-clients")
}

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/account/keys", get(keys).post(create_key))
        .route("/account/keys/{id}/revoke", post(revoke))
        .route("/account/oauth-clients", get(clients).post(create_client))
        .route("/account/oauth-clients/{id}/delete", post(delete_client))
}
