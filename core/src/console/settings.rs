//! `/environments`, `/vaults` and `/account/credentials`: what machines are
//! built from and what turns run on. Secret values and credentials are
//! write-only here as in the API: set and deleted, never shown.

use axum::Router;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::{
    Console, Nothing, Posted, button, error, escape, form, input, list, seg, select, table, text, textarea, when,
};
use crate::state::AppState;

/// Environments and vaults: the two resources that hold secrets.
#[derive(Clone, Copy)]
enum Holder {
    Environment,
    Vault,
}

impl Holder {
    fn api(self) -> &'static str {
        match self {
            Holder::Environment => "/api/environments",
            Holder::Vault => "/api/vaults",
        }
    }

    fn page(self) -> &'static str {
        match self {
            Holder::Environment => "/environments",
            Holder::Vault => "/vaults",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Holder::Environment => "Environments",
            Holder::Vault => "Vaults",
        }
    }
}

#[derive(Deserialize, Default)]
struct NameForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    setup_script: String,
}

/// The list with the form to make one: `message` (a refusal) above the form, filled with `draft`.
async fn holders(c: &Console, h: Holder, status: StatusCode, message: &str, draft: &NameForm) -> Response {
    let all = c.get(h.api()).await;
    if !all.ok() {
        return c.refused(h.title(), &all);
    }
    let rows: Vec<Vec<String>> = list(&all)
        .iter()
        .map(|e| {
            vec![
                format!("<a href=\"{}/{}\">{}</a>", h.page(), seg(e["id"].as_str().unwrap_or("")), text(e, "name")),
                when(e, "updated_at"),
            ]
        })
        .collect();
    let extra = match h {
        Holder::Environment => textarea("Setup script", "setup_script", &draft.setup_script, "rows=\"3\""),
        Holder::Vault => String::new(),
    };
    let body = format!(
        "<h1>{}</h1>{}<h2>New</h2>{}{}",
        h.title(),
        table(&["Name", "Updated"], &rows, "None yet."),
        if message.is_empty() { String::new() } else { error(message) },
        form(
            c,
            h.page(),
            &format!("{}{extra}", input("Name", "name", "text", &draft.name, "required maxlength=\"100\"")),
            "Create"
        ),
    );
    c.page_with_status(status, h.title(), &body)
}

async fn create(c: &Console, h: Holder, f: NameForm) -> Response {
    let mut body = json!({"name": f.name.trim()});
    if !f.setup_script.trim().is_empty() {
        body["setup_script"] = json!(f.setup_script);
    }
    let a = c.post(h.api(), &body).await;
    match a.data()["id"].as_str().filter(|_| a.ok()) {
        Some(id) => Redirect::to(&format!("{}/{}", h.page(), seg(id))).into_response(),
        None => holders(c, h, a.status, &a.message(), &f).await,
    }
}

/// One environment or vault: its facts, its variables (environments), and
/// the keys of its secrets with forms to set and delete them.
async fn holder(c: &Console, h: Holder, id: Uuid) -> Response {
    let (path, secrets_path) = (format!("{}/{id}", h.api()), format!("{}/{id}/secrets", h.api()));
    let (one, secrets) = tokio::join!(c.get(&path), c.get(&secrets_path));
    if !one.ok() {
        return c.refused(h.title(), &one);
    }
    let e = one.data();
    let here = format!("{}/{id}", h.page());
    let rows: Vec<Vec<String>> = list(&secrets)
        .iter()
        .map(|s| {
            let key = s["key"].as_str().unwrap_or("");
            vec![
                format!("<code>{}</code>", escape(key)),
                "<span class=\"muted\">set (never shown)</span>".to_owned(),
                when(s, "updated_at"),
                button(c, &format!("{here}/secrets/{}/delete", seg(key)), "Delete", "danger"),
            ]
        })
        .collect();
    let secret_form = form(
        c,
        &format!("{here}/secrets"),
        &format!(
            "{}{}",
            input("Secret name", "key", "text", "", "required pattern=\"[A-Za-z_][A-Za-z0-9_]*\""),
            input("Secret value", "value", "password", "", "required autocomplete=\"off\"")
        ),
        "Set secret",
    );
    let variables = match h {
        Holder::Environment => {
            let vars = e["env_vars"].as_object().cloned().unwrap_or_default();
            let rows: Vec<Vec<String>> = vars
                .iter()
                .map(|(k, v)| {
                    vec![
                        format!("<code>{}</code>", escape(k)),
                        format!("<code>{}</code>", escape(v.as_str().unwrap_or(""))),
                        button(c, &format!("{here}/variables/{}/delete", seg(k)), "Remove", "danger"),
                    ]
                })
                .collect();
            format!(
                "<h2>Variables</h2>{}{}<h2>Setup script</h2><pre>{}</pre>",
                table(&["Name", "Value", ""], &rows, "No variables."),
                form(
                    c,
                    &format!("{here}/variables"),
                    &format!(
                        "{}{}",
                        input("Variable name", "var_name", "text", "", "required"),
                        input("Variable value", "var_value", "text", "", "")
                    ),
                    "Set variable"
                ),
                text(e, "setup_script"),
            )
        }
        Holder::Vault => format!("<p>{}</p>", text(e, "description")),
    };
    let name = e["name"].as_str().unwrap_or(h.title());
    let body = format!(
        "<p class=\"crumbs\"><a href=\"{}\">{}</a></p><h1>{}</h1>{variables}\
         <h2>Secrets</h2><p class=\"hint\">Values are write-only: machines get them, pages and the API never show them.</p>{}{secret_form}\
         <h2>Delete</h2>{}",
        h.page(),
        h.title(),
        escape(name),
        table(&["Name", "Value", "Updated", ""], &rows, "No secrets."),
        button(c, &format!("{here}/delete"), "Delete", "danger"),
    );
    c.page(name, &body)
}

/// A variable's form (named apart from a secret's: both forms are on one page).
#[derive(Deserialize)]
struct VariableForm {
    var_name: String,
    #[serde(default)]
    var_value: String,
}

#[derive(Deserialize)]
struct KeyValue {
    key: String,
    #[serde(default)]
    value: String,
}

async fn set_secret(c: &Console, h: Holder, id: Uuid, f: KeyValue) -> Response {
    let path = format!("{}/{id}/secrets/{}", h.api(), seg(f.key.trim()));
    let a = c.put(&path, &json!({"value": f.value})).await;
    c.done(&a, &format!("{}/{id}", h.page()))
}

async fn delete_secret(c: &Console, h: Holder, id: Uuid, key: &str) -> Response {
    let a = c.delete(&format!("{}/{id}/secrets/{}", h.api(), seg(key))).await;
    c.done(&a, &format!("{}/{id}", h.page()))
}

async fn delete_holder(c: &Console, h: Holder, id: Uuid) -> Response {
    let a = c.delete(&format!("{}/{id}", h.api())).await;
    c.done(&a, h.page())
}

/// Sets (a value) or removes (none) one variable: the API takes the whole map.
async fn change_variable(c: &Console, id: Uuid, key: &str, value: Option<&str>) -> Response {
    let one = c.get(&format!("/api/environments/{id}")).await;
    if !one.ok() {
        return c.refused("Environment", &one);
    }
    let mut vars: Map<String, Value> = one.data()["env_vars"].as_object().cloned().unwrap_or_default();
    match value {
        Some(v) => vars.insert(key.trim().to_owned(), json!(v)),
        None => vars.remove(key),
    };
    let a = c.patch(&format!("/api/environments/{id}"), &json!({"env_vars": vars})).await;
    c.done(&a, &format!("/environments/{id}"))
}

/// Credential sets: which providers each holds (never the values).
async fn credentials(c: Console) -> Response {
    let sets = c.get("/api/account/inference-credential-sets").await;
    if !sets.ok() {
        return c.refused("Credentials", &sets);
    }
    let rows: Vec<Vec<String>> = list(&sets)
        .iter()
        .map(|s| {
            let providers: Vec<&str> =
                s["providers"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            vec![
                format!(
                    "<a href=\"/account/credentials/{}\">{}</a>",
                    seg(s["id"].as_str().unwrap_or("")),
                    text(s, "name")
                ),
                if s["is_default"] == true { "default".to_owned() } else { String::new() },
                escape(&providers.join(", ")),
            ]
        })
        .collect();
    let body = format!(
        "<h1>Credentials</h1><p class=\"hint\">Model credentials turns run on, grouped in sets; values are never shown.</p>{}\
         <h2>New set</h2>{}",
        table(&["Set", "", "Providers held"], &rows, "No sets."),
        form(
            &c,
            "/account/credentials",
            &input("Name", "name", "text", "", "required maxlength=\"100\""),
            "Create set"
        ),
    );
    c.page("Credentials", &body)
}

const PROVIDERS: [(&str, &str); 4] = [
    ("anthropic_api_key", "Anthropic API key"),
    ("claude_code_oauth_token", "Claude Code OAuth token"),
    ("openai_api_key", "OpenAI API key"),
    ("gemini_api_key", "Gemini API key"),
];

async fn credential_set(c: Console, Path(id): Path<Uuid>) -> Response {
    let sets = c.get("/api/account/inference-credential-sets").await;
    if !sets.ok() {
        return c.refused("Credentials", &sets);
    }
    let Some(set) = list(&sets).iter().find(|s| s["id"].as_str() == Some(&id.to_string())) else {
        return c.page_with_status(StatusCode::NOT_FOUND, "Credentials", &error("No such credential set."));
    };
    let here = format!("/account/credentials/{id}");
    let held: Vec<&str> = set["providers"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let rows: Vec<Vec<String>> = PROVIDERS
        .iter()
        .map(|(p, label)| {
            let is_set = held.contains(p);
            vec![
                escape(label),
                if is_set { "set (never shown)".to_owned() } else { "<span class=\"muted\">not set</span>".to_owned() },
                if is_set {
                    button(&c, &format!("{here}/providers/{p}/delete"), "Remove", "danger")
                } else {
                    String::new()
                },
            ]
        })
        .collect();
    let default = if set["is_default"] == true {
        "<p>This is the default set.</p>".to_owned()
    } else {
        button(&c, &format!("{here}/default"), "Make default", "quiet")
    };
    let name = set["name"].as_str().unwrap_or("Credential set");
    let body = format!(
        "<p class=\"crumbs\"><a href=\"/account/credentials\">Credentials</a></p><h1>{}</h1>{default}{}\
         <h2>Set a credential</h2>{}<h2>Delete</h2>{}",
        escape(name),
        table(&["Provider", "Value", ""], &rows, ""),
        form(
            &c,
            &format!("{here}/set"),
            &format!(
                "{}{}",
                select("Provider", "provider", &PROVIDERS, "anthropic_api_key"),
                input("Value", "value", "password", "", "required autocomplete=\"off\"")
            ),
            "Save credential"
        ),
        button(&c, &format!("{here}/delete"), "Delete set", "danger"),
    );
    c.page(name, &body)
}

#[derive(Deserialize)]
struct CredentialForm {
    provider: String,
    value: String,
}

pub fn router() -> Router<AppState> {
    use Holder::{Environment, Vault};
    let mut r = Router::new();
    for h in [Environment, Vault] {
        let p = h.page();
        r = r
            .route(
                p,
                get(move |c: Console| async move { holders(&c, h, StatusCode::OK, "", &NameForm::default()).await })
                    .post(move |Posted(c, f): Posted<NameForm>| async move { create(&c, h, f).await }),
            )
            .route(
                &format!("{p}/{{id}}"),
                get(move |c: Console, Path(id): Path<Uuid>| async move { holder(&c, h, id).await }),
            )
            .route(
                &format!("{p}/{{id}}/delete"),
                post(move |Path(id): Path<Uuid>, Posted(c, _): Posted<Nothing>| async move {
                    delete_holder(&c, h, id).await
                }),
            )
            .route(
                &format!("{p}/{{id}}/secrets"),
                post(move |Path(id): Path<Uuid>, Posted(c, f): Posted<KeyValue>| async move {
                    set_secret(&c, h, id, f).await
                }),
            )
            .route(
                &format!("{p}/{{id}}/secrets/{{key}}/delete"),
                post(move |Path((id, key)): Path<(Uuid, String)>, Posted(c, _): Posted<Nothing>| async move {
                    delete_secret(&c, h, id, &key).await
                }),
            );
    }
    r.route(
        "/environments/{id}/variables",
        post(|Path(id): Path<Uuid>, Posted(c, f): Posted<VariableForm>| async move {
            change_variable(&c, id, &f.var_name, Some(&f.var_value)).await
        }),
    )
    .route(
        "/environments/{id}/variables/{key}/delete",
        post(|Path((id, key)): Path<(Uuid, String)>, Posted(c, _): Posted<Nothing>| async move {
            change_variable(&c, id, &key, None).await
        }),
    )
    .route(
        "/account/credentials",
        get(credentials).post(|Posted(c, f): Posted<NameForm>| async move {
            let a = c.post("/api/account/inference-credential-sets", &json!({"name": f.name.trim()})).await;
            match a.data()["id"].as_str().filter(|_| a.ok()) {
                Some(id) => Redirect::to(&format!("/account/credentials/{}", seg(id))).into_response(),
                None => c.refused("Credentials", &a),
            }
        }),
    )
    .route("/account/credentials/{id}", get(credential_set))
    .route(
        "/account/credentials/{id}/set",
        post(|Path(id): Path<Uuid>, Posted(c, f): Posted<CredentialForm>| async move {
            let path = format!("/api/account/inference-credential-sets/{id}/credentials/{}", seg(&f.provider));
            let a = c.put(&path, &json!({"value": f.value})).await;
            c.done(&a, &format!("/account/credentials/{id}"))
        }),
    )
    .route(
        "/account/credentials/{id}/providers/{provider}/delete",
        post(|Path((id, provider)): Path<(Uuid, String)>, Posted(c, _): Posted<Nothing>| async move {
            let a =
                c.delete(&format!("/api/account/inference-credential-sets/{id}/credentials/{}", seg(&provider))).await;
            c.done(&a, &format!("/account/credentials/{id}"))
        }),
    )
    .route(
        "/account/credentials/{id}/default",
        post(|Path(id): Path<Uuid>, Posted(c, _): Posted<Nothing>| async move {
            let a =
                c.patch(&format!("/api/account/inference-credential-sets/{id}"), &json!({"is_default": true})).await;
            c.done(&a, &format!("/account/credentials/{id}"))
        }),
    )
    .route(
        "/account/credentials/{id}/delete",
        post(|Path(id): Path<Uuid>, Posted(c, _): Posted<Nothing>| async move {
            let a = c.delete(&format!("/api/account/inference-credential-sets/{id}")).await;
            c.done(&a, "/account/credentials")
        }),
    )
}
