//! The OpenAPI document (built from the mounted routes, so it cannot drift
//! from them) and a reference page for people rendered from it.

use std::fmt::Write;

use utoipa::openapi::path::Operation;
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{Content, InfoBuilder, OpenApi, Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use utoipa::openapi::Schema;

use crate::error::ErrorBody;
use crate::extension::Field;

/// Statuses every authenticated operation may answer.
const AUTH_ERRORS: [(&str, &str); 3] = [
    ("401", "Missing, invalid or expired API key (`reason` names which)"),
    ("403", "The key's scope does not allow this (`reason: insufficient_scope`)"),
    ("429", "Rate limited; see `Retry-After`"),
];

fn operations_mut(api: &mut OpenApi) -> impl Iterator<Item = &mut Operation> {
    api.paths.paths.values_mut().flat_map(|item| {
        [
            item.get.as_mut(),
            item.put.as_mut(),
            item.post.as_mut(),
            item.delete.as_mut(),
            item.patch.as_mut(),
            item.head.as_mut(),
            item.options.as_mut(),
            item.trace.as_mut(),
        ]
        .into_iter()
        .flatten()
    })
}

fn error_response(description: &str) -> RefOr<utoipa::openapi::Response> {
    RefOr::T(
        ResponseBuilder::new()
            .description(description)
            .content("application/json", Content::new(Some(Ref::from_schema_name(ErrorBody::name()))))
            .build(),
    )
}

fn add_response(op: &mut Operation, status: &str, description: &str) {
    op.responses.responses.entry(status.to_owned()).or_insert_with(|| error_response(description));
}

/// Marks every operation of a public router as needing no credential.
pub fn mark_public(api: &mut OpenApi) {
    for op in operations_mut(api) {
        op.security = Some(Vec::new());
    }
}

/// Adds the error responses every authenticated operation can give.
pub fn mark_authenticated(api: &mut OpenApi) {
    for op in operations_mut(api) {
        for (status, description) in AUTH_ERRORS {
            add_response(op, status, description);
        }
    }
}

/// Final touches: info, the bearer scheme, and error responses that follow
/// from an operation's shape (422 for bodies and queries, 404 for paths with ids).
pub fn finish(mut api: OpenApi) -> OpenApi {
    api.info = InfoBuilder::new()
        .title("acs: Agent Computer Service")
        .version(env!("CARGO_PKG_VERSION"))
        .description(Some(
            "Runs AI coding agents inside isolated sandboxes. Every operation needs \
             `Authorization: Bearer <API_KEY>` unless it is marked public. Errors share one body: \
             `{error, message, errors}`.",
        ))
        .build();
    let components = api.components.get_or_insert_with(Default::default);
    components.schemas.insert(ErrorBody::name().into_owned(), ErrorBody::schema());
    components.security_schemes.insert(
        "bearer".into(),
        RefOr::T(SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build())),
    );
    api.security = Some(vec![SecurityRequirement::new("bearer", Vec::<String>::new())]);
    for (path, item) in api.paths.paths.iter_mut() {
        let has_path_params = path.contains('{');
        for op in [item.get.as_mut(), item.put.as_mut(), item.post.as_mut(), item.delete.as_mut(), item.patch.as_mut()]
            .into_iter()
            .flatten()
        {
            let has_query = op.parameters.as_ref().is_some_and(|ps| {
                ps.iter().any(
                    |p| matches!(p, RefOr::T(p) if matches!(p.parameter_in, utoipa::openapi::path::ParameterIn::Query)),
                )
            });
            if op.request_body.is_some() || has_query {
                add_response(op, "422", "`validation_failed`: `errors` names each field");
            }
            if has_path_params {
                add_response(op, "404", "`not_found`: no such record for this account");
            }
            add_response(op, "406", "The `Accept` header admits no JSON: `{errors: {detail}}`");
            // OpenAPI requires a description on every response: where a
            // handler gave none, the status's reason phrase stands in.
            for (status, response) in op.responses.responses.iter_mut() {
                if let RefOr::T(r) = response
                    && r.description.is_empty()
                {
                    r.description = reason_phrase(status);
                }
            }
        }
    }
    api
}

fn reason_phrase(status: &str) -> String {
    status
        .parse::<u16>()
        .ok()
        .and_then(|s| axum::http::StatusCode::from_u16(s).ok())
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Response")
        .to_owned()
}

/// Refuses a document in which two operations share an id: generated clients
/// would get one method for both (handlers of one name in two modules, or an
/// extension's beside core's).
pub fn check_operation_ids(api: &mut OpenApi) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for op in operations_mut(api) {
        if let Some(id) = &op.operation_id
            && !seen.insert(id.clone())
        {
            return Err(format!("two operations have the id `{id}`; give one an `operation_id`"));
        }
    }
    Ok(())
}

/// Adds extension fields (required, as they are always present) to a core
/// answer's schema, `components.schemas[name]`, and to its `{data}` envelope.
pub fn add_fields(api: &mut OpenApi, name: &str, path: &str, fields: &[Field]) {
    if fields.is_empty() {
        return;
    }
    let Some(components) = api.components.as_mut() else { return };
    let envelope = format!("Data_{name}");
    let mut targets: Vec<&mut RefOr<Schema>> = Vec::new();
    for (key, schema) in components.schemas.iter_mut() {
        if key == name {
            targets.push(schema);
        } else if *key == envelope
            && let RefOr::T(Schema::Object(env)) = schema
            && let Some(data) = env.properties.get_mut("data")
        {
            targets.push(data);
        }
    }
    for target in targets {
        if let RefOr::T(Schema::Object(obj)) = target {
            for f in fields {
                let mut schema = (f.schema)();
                if let RefOr::T(Schema::Object(o)) = &mut schema {
                    o.description = Some(f.description.to_owned());
                }
                obj.properties.insert(f.name.to_owned(), schema);
                obj.required.push(f.name.to_owned());
            }
        }
    }
    debug_assert!(api.paths.paths.contains_key(path), "{path} answers with {name}");
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A self-contained HTML reference of the document (no scripts, no CDN).
pub fn render_html(api: &OpenApi) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title} API reference</title>\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><style>\
         body{{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}}\
         code,pre{{font-family:ui-monospace,monospace;font-size:13px}}\
         .op{{border:1px solid #ddd;border-radius:6px;margin:.8rem 0;padding:.6rem .9rem}}\
         .m{{display:inline-block;min-width:4.2rem;font-weight:700}}.get{{color:#06c}}.post{{color:#080}}\
         .patch,.put{{color:#a60}}.delete{{color:#c00}}.pub{{font-size:12px;background:#eef;padding:0 .4rem;border-radius:4px}}\
         table{{border-collapse:collapse}}td{{padding:.1rem .6rem .1rem 0;vertical-align:top}}</style></head><body>\
         <h1>{title}</h1><p>Version {version}. The machine-readable document is at <a href=\"/api/docs\"><code>/api/docs</code></a> (OpenAPI 3.1).</p><p>{desc}</p>",
        title = esc(&api.info.title),
        version = esc(&api.info.version),
        desc = esc(api.info.description.as_deref().unwrap_or("")),
    );
    for (path, item) in api.paths.paths.iter() {
        let ops = [
            ("get", &item.get),
            ("post", &item.post),
            ("put", &item.put),
            ("patch", &item.patch),
            ("delete", &item.delete),
        ];
        for (method, op) in ops {
            let Some(op) = op else { continue };
            let public = op.security.as_ref().is_some_and(|s| s.is_empty());
            let _ = write!(
                out,
                "<div class=\"op\"><span class=\"m {method}\">{}</span> <code>{}</code> {}<br>",
                method.to_uppercase(),
                esc(path),
                if public { "<span class=\"pub\">public</span>" } else { "" }
            );
            if let Some(summary) = op.summary.as_ref().or(op.description.as_ref()) {
                let _ = write!(out, "<p>{}</p>", esc(summary));
            }
            if let Some(params) = &op.parameters {
                out.push_str("<table>");
                for p in params.iter().filter_map(|p| match p {
                    RefOr::T(p) => Some(p),
                    RefOr::Ref(_) => None,
                }) {
                    let _ = write!(
                        out,
                        "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                        esc(&p.name),
                        match p.parameter_in {
                            utoipa::openapi::path::ParameterIn::Path => "path",
                            utoipa::openapi::path::ParameterIn::Query => "query",
                            utoipa::openapi::path::ParameterIn::Header => "header",
                            _ => "",
                        },
                        esc(p.description.as_deref().unwrap_or(""))
                    );
                }
                out.push_str("</table>");
            }
            if let Some(RefOr::T(body)) = &op.request_body {
                for (media, content) in &body.content {
                    if let RefOr::T(content) = content {
                        let _ =
                            write!(out, "<p>Body <code>{}</code>: {}</p>", esc(media), schema_name(&content.schema));
                    }
                }
            }
            out.push_str("<table>");
            for (status, resp) in &op.responses.responses {
                let (desc, schema) = match resp {
                    RefOr::T(r) => (
                        r.description.clone(),
                        match r.content.values().next() {
                            Some(RefOr::T(c)) => schema_name(&c.schema),
                            _ => String::new(),
                        },
                    ),
                    RefOr::Ref(r) => (r.ref_location.clone(), String::new()),
                };
                let _ =
                    write!(out, "<tr><td><b>{}</b></td><td>{}</td><td>{}</td></tr>", esc(status), schema, esc(&desc));
            }
            out.push_str("</table></div>");
        }
    }
    out.push_str("</body></html>");
    out
}

fn schema_name(schema: &Option<RefOr<utoipa::openapi::schema::Schema>>) -> String {
    match schema {
        Some(RefOr::Ref(r)) => format!("<code>{}</code>", esc(r.ref_location.rsplit('/').next().unwrap_or(""))),
        Some(RefOr::T(_)) => "<code>inline schema</code>".into(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(second_id: &str) -> OpenApi {
        let op = |id: &str| serde_json::json!({"operationId": id, "responses": {}});
        serde_json::from_value(serde_json::json!({
            "openapi": "3.1.0",
            "info": {"title": "t", "version": "1"},
            "paths": {"/a": {"get": op("list_a")}, "/b": {"get": op(second_id)}},
        }))
        .unwrap()
    }

    #[test]
    fn a_shared_operation_id_is_refused() {
        assert!(check_operation_ids(&mut doc("list_b")).is_ok());
        let err = check_operation_ids(&mut doc("list_a")).unwrap_err();
        assert!(err.contains("`list_a`"), "{err}");
    }
}
