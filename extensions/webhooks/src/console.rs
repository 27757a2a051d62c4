//! The console's webhooks view (spec 4.5, `/account/webhooks`): endpoints
//! (the signing secret shown once, on the page that made or rotated it),
//! send a test, resume, delete, and the delivery log with every attempt and
//! the receiver's answer, with redelivery. Pages of a session route group,
//! drawn with the platform's console builders, asking the API in process.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use uuid::Uuid;

use acs_platform::console::{
    Console, Nothing, Posted, badge, button, error, form, input, list, shown_once, table, text, when,
};
use acs_platform::session::html::escape;
use acs_platform::state::AppState;

/// An id from the API as a path segment: a uuid, or nothing (a page never
/// puts an unchecked string in an address).
fn id_of(v: &Value) -> String {
    v["id"].as_str().and_then(|s| s.parse::<Uuid>().ok()).map(|u| u.to_string()).unwrap_or_default()
}

/// The endpoints page, with `top` above the list (a new secret, or why a
/// create was refused) and the form filled with `draft`.
async fn endpoints_page(c: &Console, status: StatusCode, top: &str, draft: &EndpointForm) -> Response {
    let all = c.get("/api/webhooks").await;
    if !all.ok() {
        return c.refused("Webhooks", &all);
    }
    let rows: Vec<Vec<String>> = list(&all)
        .iter()
        .map(|w| {
            let types: Vec<&str> =
                w["event_types"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            vec![
                format!("<a href=\"/account/webhooks/{}\">{}</a>", id_of(w), text(w, "url")),
                badge(w["status"].as_str().unwrap_or("")),
                escape(&if types.is_empty() { "every event".to_owned() } else { types.join(", ") }),
                text(w, "description"),
            ]
        })
        .collect();
    let body = format!(
        "<h1>Webhooks</h1>{top}<p class=\"hint\">Signed deliveries of your conversations' events (docs/webhooks.md).</p>{}\
         <h2>New endpoint</h2>{}",
        table(&["URL", "Status", "Events", "Description"], &rows, "No endpoints."),
        form(
            c,
            "/account/webhooks",
            &format!(
                "{}{}<p class=\"hint\">Comma separated, for example <code>conversation.turn.*</code>; blank for every event.</p>{}",
                input("URL", "url", "url", &draft.url, "required placeholder=\"https://hooks.example.com/acs\""),
                input("Event types", "event_types", "text", &draft.event_types, ""),
                input("Description", "description", "text", &draft.description, "maxlength=\"500\""),
            ),
            "Create endpoint"
        ),
    );
    c.page_with_status(status, "Webhooks", &body)
}

async fn endpoints(c: Console) -> Response {
    endpoints_page(&c, StatusCode::OK, "", &EndpointForm::default()).await
}

#[derive(Deserialize, Default)]
struct EndpointForm {
    #[serde(default)]
    url: String,
    #[serde(default)]
    event_types: String,
    #[serde(default)]
    description: String,
}

async fn create(Posted(c, f): Posted<EndpointForm>) -> Response {
    let types: Vec<&str> = f.event_types.split(',').map(str::trim).filter(|t| !t.is_empty()).collect();
    let mut body = json!({"url": f.url.trim()});
    if !types.is_empty() {
        body["event_types"] = json!(types);
    }
    if !f.description.trim().is_empty() {
        body["description"] = json!(f.description.trim());
    }
    let a = c.post("/api/webhooks", &body).await;
    match a.data()["secret"].as_str().filter(|_| a.ok()) {
        Some(secret) => {
            let top = shown_once("The endpoint's signing secret.", secret);
            endpoints_page(&c, StatusCode::OK, &top, &EndpointForm::default()).await
        }
        None => endpoints_page(&c, a.status, &error(&a.message()), &f).await,
    }
}

/// One endpoint: facts, actions and its deliveries, with `top` above (a rotated secret).
async fn endpoint_page(c: &Console, id: Uuid, top: &str) -> Response {
    let (endpoint, deliveries) =
        tokio::join!(c.get(format!("/api/webhooks/{id}")), c.get(format!("/api/webhooks/{id}/deliveries?limit=50")));
    if !endpoint.ok() {
        return c.refused("Webhook endpoint", &endpoint);
    }
    let w = endpoint.data();
    let here = format!("/account/webhooks/{id}");
    let rows: Vec<Vec<String>> = list(&deliveries)
        .iter()
        .map(|d| {
            let did = id_of(d);
            vec![
                format!("<a href=\"{here}/deliveries/{did}\">{}</a>", text(d, "event_type")),
                badge(d["status"].as_str().unwrap_or("")),
                d["attempt_count"].as_i64().unwrap_or(0).to_string(),
                when(d, "inserted_at"),
                button(c, &format!("{here}/deliveries/{did}/redeliver"), "Redeliver", "quiet"),
            ]
        })
        .collect();
    let disabled = if w["status"] == "disabled" {
        let why = match w["disabled_reason"].as_str() {
            Some(why) => format!("Disabled: {why}."),
            None => "Disabled.".to_owned(),
        };
        format!("{}{}", error(&why), button(c, &format!("{here}/resume"), "Resume", ""))
    } else {
        String::new()
    };
    let body = format!(
        "<p class=\"crumbs\"><a href=\"/account/webhooks\">Webhooks</a></p><h1>{}</h1>{top}{disabled}\
         <dl class=\"facts\"><dt>Status</dt><dd>{}</dd><dt>Failures in a row</dt><dd>{}</dd><dt>Created</dt><dd>{}</dd></dl>\
         <p>{}{}{}</p><h2>Deliveries</h2>{}",
        text(w, "url"),
        badge(w["status"].as_str().unwrap_or("")),
        w["consecutive_failures"].as_i64().unwrap_or(0),
        when(w, "inserted_at"),
        button(c, &format!("{here}/test"), "Send test", ""),
        button(c, &format!("{here}/rotate"), "Rotate secret", "quiet"),
        button(c, &format!("{here}/delete"), "Delete endpoint", "danger"),
        table(&["Event", "Status", "Attempts", "Created", ""], &rows, "No deliveries yet: send a test."),
    );
    c.page("Webhook endpoint", &body)
}

async fn endpoint(c: Console, Path(id): Path<Uuid>) -> Response {
    endpoint_page(&c, id, "").await
}

/// One delivery: every attempt with the receiver's answer, and the payload.
async fn delivery(c: Console, Path((id, delivery)): Path<(Uuid, Uuid)>) -> Response {
    let d = c.get(format!("/api/webhooks/{id}/deliveries/{delivery}")).await;
    if !d.ok() {
        return c.refused("Delivery", &d);
    }
    let d = d.data();
    let rows: Vec<Vec<String>> = d["attempts"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|a| {
            let answer = match a["response_status"].as_i64() {
                Some(status) => status.to_string(),
                None => format!("{} {}", text(a, "error"), text(a, "error_message")),
            };
            vec![
                a["attempt"].as_i64().unwrap_or(0).to_string(),
                when(a, "at"),
                text(a, "trigger"),
                answer,
                format!("{} ms", a["latency_ms"].as_i64().unwrap_or(0)),
                format!("<pre>{}</pre>", text(a, "response_body")),
            ]
        })
        .collect();
    let payload = serde_json::to_string_pretty(&d["payload"]).unwrap_or_default();
    let body = format!(
        "<p class=\"crumbs\"><a href=\"/account/webhooks/{id}\">Endpoint</a></p><h1>{}</h1>\
         <dl class=\"facts\"><dt>Status</dt><dd>{}</dd><dt>Next attempt</dt><dd>{}</dd></dl>\
         <h2>Attempts</h2>{}<h2>Payload</h2><pre>{}</pre>{}",
        text(d, "event_type"),
        badge(d["status"].as_str().unwrap_or("")),
        when(d, "next_attempt_at"),
        table(&["#", "At", "Why", "Answer", "Time", "Body"], &rows, "Not attempted yet."),
        escape(&payload),
        button(&c, &format!("/account/webhooks/{id}/deliveries/{delivery}/redeliver"), "Redeliver", ""),
    );
    c.page("Delivery", &body)
}

async fn rotate(Path(id): Path<Uuid>, Posted(c, _): Posted<Nothing>) -> Response {
    let a = c.post(format!("/api/webhooks/{id}/rotate-secret"), &json!({})).await;
    match a.data()["secret"].as_str().filter(|_| a.ok()) {
        Some(secret) => endpoint_page(&c, id, &shown_once("The new signing secret.", secret)).await,
        None => c.refused("Rotate secret", &a),
    }
}

/// A post whose answer is the endpoint page again (or why it was refused).
async fn act(c: &Console, path: String, to: String) -> Response {
    let a = c.post(path, &json!({})).await;
    c.done(&a, &to)
}

pub(crate) fn pages() -> OpenApiRouter<AppState> {
    let back = |id: Uuid| format!("/account/webhooks/{id}");
    OpenApiRouter::new()
        .route("/account/webhooks", get(endpoints).post(create))
        .route("/account/webhooks/{id}", get(endpoint))
        .route("/account/webhooks/{id}/deliveries/{delivery}", get(delivery))
        .route("/account/webhooks/{id}/rotate", post(rotate))
        .route(
            "/account/webhooks/{id}/test",
            post(move |Path(id): Path<Uuid>, Posted(c, _): Posted<Nothing>| async move {
                act(&c, format!("/api/webhooks/{id}/test"), back(id)).await
            }),
        )
        .route(
            "/account/webhooks/{id}/resume",
            post(move |Path(id): Path<Uuid>, Posted(c, _): Posted<Nothing>| async move {
                act(&c, format!("/api/webhooks/{id}/resume"), back(id)).await
            }),
        )
        .route(
            "/account/webhooks/{id}/deliveries/{delivery}/redeliver",
            post(move |Path((id, delivery)): Path<(Uuid, Uuid)>, Posted(c, _): Posted<Nothing>| async move {
                act(&c, format!("/api/webhooks/{id}/deliveries/{delivery}/redeliver"), back(id)).await
            }),
        )
        .route(
            "/account/webhooks/{id}/delete",
            post(|Path(id): Path<Uuid>, Posted(c, _): Posted<Nothing>| async move {
                let a = c.delete(format!("/api/webhooks/{id}")).await;
                if a.ok() {
                    Redirect::to("/account/webhooks").into_response()
                } else {
                    c.refused("Delete endpoint", &a)
                }
            }),
        )
}
