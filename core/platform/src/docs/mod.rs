//! The OpenAPI document (built from the mounted routes, so it cannot drift
//! from them) and a reference page for people rendered from it.

use std::fmt::Write;

use utoipa::openapi::info::LicenseBuilder;
use utoipa::openapi::path::Operation;
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::server::ServerBuilder;
use utoipa::openapi::tag::TagBuilder;
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

/// A response whose JSON body is the schema `schema`.
fn json_response(description: &str, schema: &str) -> ResponseBuilder {
    ResponseBuilder::new()
        .description(description)
        .content("application/json", Content::new(Some(Ref::from_schema_name(schema))))
}

fn error_response(description: &str) -> RefOr<utoipa::openapi::Response> {
    RefOr::T(json_response(description, &ErrorBody::name()).build())
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

/// What the assembled document says about itself beyond its operations.
pub struct About<'a> {
    /// Every tag an operation may carry, in reading order, with its description.
    pub tags: Vec<(&'static str, &'static str)>,
    /// The instance's public address (`public_url`); `/` (this server) without one.
    pub public_url: Option<&'a str>,
}

/// Final touches: info, servers, tags, the bearer scheme, `{data}` envelopes
/// that name their payload, and error responses that follow from an
/// operation's shape (422 and 413/415 for bodies, 422 for queries, 404 for
/// paths with ids, 406 everywhere).
pub fn finish(mut api: OpenApi, about: &About) -> OpenApi {
    api.info = InfoBuilder::new()
        .title("acs: Agent Computer Service")
        .version(env!("CARGO_PKG_VERSION"))
        .license(Some(LicenseBuilder::new().name("Apache-2.0").identifier(Some("Apache-2.0")).build()))
        .description(Some(
            "Runs AI coding agents inside isolated sandboxes. Every operation needs \
             `Authorization: Bearer <API_KEY>` unless it is marked public. Errors share one body, \
             `Error`: `{error, message, errors}`; a 406 is `{errors: {detail}}`. A method a path \
             does not serve answers 405 with `Allow` and an `Error` body (`method_not_allowed`). \
             Operation ids are `<verb><Resource>` in lowerCamelCase (`listAgents`, `getSandboxFile`). \
             The three `/stream` operations answer `text/event-stream`: follow them with an SSE \
             reader (the SDKs in `clients/` have one); each frame's data is a `StreamLogEvent`.",
        ))
        .build();
    api.servers = Some(vec![
        ServerBuilder::new()
            .url(about.public_url.unwrap_or("/"))
            .description(Some(if about.public_url.is_some() {
                "This instance"
            } else {
                "The server serving this document"
            }))
            .build(),
    ]);
    api.tags = Some(
        about
            .tags
            .iter()
            .map(|(name, description)| TagBuilder::new().name(*name).description(Some(*description)).build())
            .collect(),
    );
    let components = api.components.get_or_insert_with(Default::default);
    components.schemas.insert(ErrorBody::name().into_owned(), ErrorBody::schema());
    components.schemas.insert(NotAcceptableBody::name().into_owned(), NotAcceptableBody::schema());
    // A 405 answers a method no operation has, so no operation can list it:
    // it is declared once, for readers and generators that resolve it.
    components.responses.insert(
        "MethodNotAllowed".into(),
        RefOr::T(
            json_response(
                "`method_not_allowed`: the path does not serve this method; `Allow` lists those it does",
                &ErrorBody::name(),
            )
            .header("Allow", utoipa::openapi::HeaderBuilder::new().schema(Some(String::schema())).build())
            .build(),
        ),
    );
    components.security_schemes.insert(
        "bearer".into(),
        RefOr::T(SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build())),
    );
    api.security = Some(vec![SecurityRequirement::new("bearer", Vec::<String>::new())]);
    name_envelope_payloads(&mut api);
    let mut api = tidy_schemas(api);
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
            if op.request_body.is_some() {
                add_response(op, "413", "`payload_too_large`: the body is over `limits.max_body_bytes`");
                add_response(op, "415", "`unsupported_media_type`: the body is not `application/json`");
            }
            if op.request_body.is_some() || has_query {
                add_response(op, "422", "`validation_failed`: `errors` names each field");
            }
            if has_path_params {
                add_response(op, "404", "`not_found`: no such record for this account");
            }
            op.responses.responses.entry("406".to_owned()).or_insert_with(|| {
                let description = "The `Accept` header admits no JSON (checked before anything else)";
                RefOr::T(json_response(description, &NotAcceptableBody::name()).build())
            });
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

/// The 406 body: content negotiation fails before anything else (spec 7).
#[derive(serde::Serialize, ToSchema)]
#[schema(as = NotAcceptable)]
pub struct NotAcceptableBody {
    #[schema(inline)]
    pub errors: NotAcceptableDetail,
}

#[derive(serde::Serialize, ToSchema)]
pub struct NotAcceptableDetail {
    /// `Not Acceptable`.
    pub detail: String,
}

/// utoipa inlines a generic's payload, so `Data<Agent>` would copy `Agent`
/// whole and generated clients get a class per copy. Where the inlined
/// payload (or list item) of `Data_*`/`Paged_*` is exactly a registered
/// schema, it becomes a `$ref` to it.
fn name_envelope_payloads(api: &mut OpenApi) {
    let Some(components) = api.components.as_mut() else { return };
    let schemas = &mut components.schemas;
    let named: Vec<(String, serde_json::Value)> = schemas
        .iter()
        .filter(|(name, _)| envelope_name(name).is_none())
        .filter_map(|(name, s)| Some((name.clone(), serde_json::to_value(s).ok()?)))
        .collect();
    let find = |schema: &RefOr<Schema>| {
        let value = serde_json::to_value(schema).ok()?;
        named.iter().find(|(_, v)| *v == value).map(|(name, _)| name.clone())
    };
    for (name, schema) in schemas.iter_mut() {
        if envelope_name(name).is_none() {
            continue;
        }
        let RefOr::T(Schema::Object(envelope)) = schema else { continue };
        let Some(data) = envelope.properties.get_mut("data") else { continue };
        let target = match data {
            RefOr::T(Schema::Array(list)) => match &mut list.items {
                utoipa::openapi::schema::ArrayItems::RefOrSchema(item) => item.as_mut(),
                _ => continue,
            },
            other => other,
        };
        if let Some(payload) = find(target) {
            *target = RefOr::Ref(Ref::from_schema_name(payload));
        }
    }
}

/// The name an envelope schema of utoipa's goes by in the document:
/// `Data_Vec_Agent` is `AgentList`, `Data_Agent` `AgentData`,
/// `Paged_AuditEvent` `AuditEventPage`; `None` for a schema that is no envelope.
fn envelope_name(name: &str) -> Option<String> {
    if let Some(t) = name.strip_prefix("Data_Vec_") {
        Some(format!("{t}List"))
    } else if let Some(t) = name.strip_prefix("Data_") {
        Some(format!("{t}Data"))
    } else {
        name.strip_prefix("Paged_").map(|t| format!("{t}Page"))
    }
}

/// Calls `f` on every schema of the document, nested ones included.
fn each_schema(api: &mut OpenApi, f: &mut impl FnMut(&mut RefOr<Schema>)) {
    fn walk(s: &mut RefOr<Schema>, f: &mut impl FnMut(&mut RefOr<Schema>)) {
        use utoipa::openapi::schema::{AdditionalProperties, ArrayItems};
        f(s);
        let RefOr::T(schema) = s else { return };
        match schema {
            Schema::Object(o) => {
                o.properties.values_mut().for_each(|p| walk(p, f));
                if let Some(extra) = o.additional_properties.as_deref_mut()
                    && let AdditionalProperties::RefOr(extra) = extra
                {
                    walk(extra, f);
                }
            }
            Schema::Array(a) => {
                if let ArrayItems::RefOrSchema(item) = &mut a.items {
                    walk(item, f);
                }
            }
            Schema::AllOf(c) => c.items.iter_mut().for_each(|i| walk(i, f)),
            Schema::OneOf(c) => c.items.iter_mut().for_each(|i| walk(i, f)),
            Schema::AnyOf(c) => c.items.iter_mut().for_each(|i| walk(i, f)),
            _ => {}
        }
    }
    fn contents(c: &mut RefOr<utoipa::openapi::Content>, f: &mut impl FnMut(&mut RefOr<Schema>)) {
        if let RefOr::T(c) = c
            && let Some(s) = c.schema.as_mut()
        {
            walk(s, f);
        }
    }
    fn response(r: &mut RefOr<utoipa::openapi::Response>, f: &mut impl FnMut(&mut RefOr<Schema>)) {
        if let RefOr::T(r) = r {
            r.content.values_mut().for_each(|c| contents(c, f));
        }
    }
    if let Some(components) = api.components.as_mut() {
        components.schemas.values_mut().for_each(|s| walk(s, f));
        components.responses.values_mut().for_each(|r| response(r, f));
    }
    for op in operations_mut(api) {
        if let Some(RefOr::T(body)) = op.request_body.as_mut() {
            body.content.values_mut().for_each(|c| contents(c, f));
        }
        op.responses.responses.values_mut().for_each(|r| response(r, f));
        for p in op.parameters.iter_mut().flatten() {
            if let RefOr::T(p) = p
                && let Some(s) = p.schema.as_mut()
            {
                walk(s, f);
            }
        }
    }
}

/// Two touches for generators:
/// - an object with no `properties` and no `additionalProperties` (an open
///   map, `metadata` say) says `additionalProperties: true`, which some read
///   as "no keys" otherwise (`Record<string, never>` in openapi-typescript);
/// - envelopes get names without Rust in them (`envelope_name`; kept as they
///   were if the new name is taken).
fn tidy_schemas(mut api: OpenApi) -> OpenApi {
    use utoipa::openapi::schema::{AdditionalProperties, SchemaType, Type};
    let mut renames = std::collections::BTreeMap::new();
    if let Some(components) = api.components.as_mut() {
        let schemas = &mut components.schemas;
        for name in schemas.keys() {
            let Some(new) = envelope_name(name) else { continue };
            if !schemas.contains_key(&new) && !renames.values().any(|n| *n == new) {
                renames.insert(name.clone(), new);
            }
        }
        for (old, new) in &renames {
            if let Some(schema) = schemas.remove(old) {
                schemas.insert(new.clone(), schema);
            }
        }
    }
    each_schema(&mut api, &mut |s| match s {
        RefOr::Ref(r) => {
            if let Some(new) = r.ref_location.strip_prefix("#/components/schemas/").and_then(|n| renames.get(n)) {
                r.ref_location = format!("#/components/schemas/{new}");
            }
        }
        RefOr::T(Schema::Object(o)) => {
            let is_object = match &o.schema_type {
                SchemaType::Type(t) => *t == Type::Object,
                SchemaType::Array(ts) => ts.contains(&Type::Object),
                SchemaType::AnyValue => false,
            };
            if is_object && o.properties.is_empty() && o.additional_properties.is_none() {
                o.additional_properties = Some(Box::new(AdditionalProperties::FreeForm(true)));
            }
        }
        _ => {}
    });
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

/// A create body documented from its update body: the same fields, with
/// `required` ones required and not null. For resources whose create and
/// update share one type (the create checks the required fields itself), so
/// the two documented bodies cannot drift apart.
pub fn create_body(update: RefOr<Schema>, required: &[&str], description: &str) -> RefOr<Schema> {
    use utoipa::openapi::schema::{SchemaType, Type};
    let mut schema = update;
    if let RefOr::T(Schema::Object(obj)) = &mut schema {
        obj.description = Some(description.to_owned());
        for name in required {
            if let Some(RefOr::T(Schema::Object(field))) = obj.properties.get_mut(*name)
                && let SchemaType::Array(types) = &field.schema_type
                && let [only] = types.iter().filter(|t| **t != Type::Null).collect::<Vec<_>>()[..]
            {
                field.schema_type = SchemaType::Type(only.clone());
            }
            obj.required.push((*name).to_owned());
        }
    }
    schema
}

/// Declares `$name` as the create body of `$update` with the named fields required.
#[macro_export]
macro_rules! create_body {
    ($(#[$doc:meta])* $name:ident from $update:ty, required $required:expr, $description:literal) => {
        $(#[$doc])*
        pub struct $name;

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                $crate::docs::create_body(<$update as utoipa::PartialSchema>::schema(), &$required, $description)
            }
        }

        impl utoipa::ToSchema for $name {
            fn schemas(
                schemas: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>)>,
            ) {
                <$update as utoipa::ToSchema>::schemas(schemas);
            }
        }
    };
}

/// Documents a closed set of text values a field carries (a status stored
/// as text, say) as a named string enum, for `#[schema(value_type = ...)]`:
/// generated clients get a union type instead of a free string. `$values`
/// is any list of `&str`: the rules' own list where they keep one.
#[macro_export]
macro_rules! string_enum {
    ($(#[$doc:meta])* $name:ident, $description:literal, $values:expr $(,)?) => {
        $(#[$doc])*
        pub struct $name;

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .enum_values(Some($values))
                    .description(Some($description))
                    .into()
            }
        }

        impl utoipa::ToSchema for $name {}
    };
}

/// Refuses a document a client generator would get wrong: two operations
/// sharing an id (one method for both), an id off the convention
/// (`<verb><Resource>` in lowerCamelCase: an `operation_id` is missing), an
/// operation without a summary, or a tag not declared in `About::tags`.
pub fn check(api: &mut OpenApi) -> Result<(), String> {
    let declared: std::collections::BTreeSet<String> = api.tags.iter().flatten().map(|t| t.name.clone()).collect();
    let mut seen = std::collections::BTreeSet::new();
    for op in operations_mut(api) {
        let id = op.operation_id.clone().unwrap_or_default();
        if !is_lower_camel(&id) {
            return Err(format!(
                "the operation id `{id}` is not `<verb><Resource>` in lowerCamelCase; give it an `operation_id`"
            ));
        }
        if !seen.insert(id.clone()) {
            return Err(format!("two operations have the id `{id}`; give one another `operation_id`"));
        }
        if op.summary.as_deref().is_none_or(str::is_empty) {
            return Err(format!("the operation `{id}` has no summary (the first line of its doc comment)"));
        }
        if let Some(tag) = op.tags.iter().flatten().find(|t| !declared.contains(*t)) {
            return Err(format!("the operation `{id}` has the tag `{tag}`, which is not declared"));
        }
    }
    Ok(())
}

fn is_lower_camel(id: &str) -> bool {
    id.starts_with(|c: char| c.is_ascii_lowercase()) && id.chars().all(|c| c.is_ascii_alphanumeric())
}

/// Adds extension fields (required, as they are always present) to a core
/// answer's schema, `components.schemas[name]` (its `{data}` envelope refers to it).
pub fn add_fields(api: &mut OpenApi, name: &str, path: &str, fields: &[Field]) {
    if fields.is_empty() {
        return;
    }
    let Some(components) = api.components.as_mut() else { return };
    if let Some(RefOr::T(Schema::Object(obj))) = components.schemas.get_mut(name) {
        for f in fields {
            let mut schema = (f.schema)();
            if let RefOr::T(Schema::Object(o)) = &mut schema {
                o.description = Some(f.description.to_owned());
            }
            obj.properties.insert(f.name.to_owned(), schema);
            obj.required.push(f.name.to_owned());
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
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><link rel=\"icon\" href=\"data:,\"><style>\
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

    fn doc(ops: &[(&str, &str)]) -> OpenApi {
        let paths: serde_json::Map<String, serde_json::Value> = ops
            .iter()
            .map(|(path, id)| {
                let op = serde_json::json!({"operationId": id, "summary": "s", "tags": ["t"], "responses": {}});
                (path.to_string(), serde_json::json!({"get": op}))
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "openapi": "3.1.0",
            "info": {"title": "t", "version": "1"},
            "tags": [{"name": "t"}],
            "paths": paths,
        }))
        .unwrap()
    }

    #[test]
    fn a_shared_or_unconventional_operation_id_is_refused() {
        assert!(check(&mut doc(&[("/a", "listA"), ("/b", "listB")])).is_ok());
        let err = check(&mut doc(&[("/a", "listA"), ("/b", "listA")])).unwrap_err();
        assert!(err.contains("`listA`"), "{err}");
        for id in ["list_a", "ListA", "", "list-a"] {
            let err = check(&mut doc(&[("/a", id)])).unwrap_err();
            assert!(err.contains("lowerCamelCase"), "{id}: {err}");
        }
    }

    #[test]
    fn an_undeclared_tag_or_a_missing_summary_is_refused() {
        let mut api = doc(&[("/a", "listA")]);
        api.tags = None;
        assert!(check(&mut api).unwrap_err().contains("not declared"));
        let mut api = doc(&[("/a", "listA")]);
        api.paths.paths.get_mut("/a").unwrap().get.as_mut().unwrap().summary = None;
        assert!(check(&mut api).unwrap_err().contains("no summary"));
    }

    #[derive(serde::Serialize, ToSchema)]
    struct Thing {
        name: String,
    }

    #[test]
    fn envelopes_refer_to_their_payload() {
        let mut api: OpenApi = serde_json::from_value(serde_json::json!({
            "openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {}
        }))
        .unwrap();
        let c = api.components.get_or_insert_with(Default::default);
        c.schemas.insert("Thing".into(), Thing::schema());
        // What utoipa registers for `Data<Thing>` and `Data<Vec<Thing>>`: the payload copied in.
        let thing = serde_json::to_value(Thing::schema()).unwrap();
        let envelope = |data| {
            serde_json::from_value(
                serde_json::json!({"type": "object", "properties": {"data": data}, "required": ["data"]}),
            )
            .unwrap()
        };
        c.schemas.insert("Data_Thing".into(), envelope(thing.clone()));
        c.schemas.insert("Data_Vec_Thing".into(), envelope(serde_json::json!({"type": "array", "items": thing})));
        name_envelope_payloads(&mut api);
        let v = serde_json::to_value(&api.components.unwrap().schemas).unwrap();
        assert_eq!(v["Data_Thing"]["properties"]["data"]["$ref"], "#/components/schemas/Thing");
        assert_eq!(v["Data_Vec_Thing"]["properties"]["data"]["items"]["$ref"], "#/components/schemas/Thing");
    }

    #[test]
    fn open_maps_say_so_and_envelopes_lose_rust_names() {
        let api: OpenApi = serde_json::from_value(serde_json::json!({
            "openapi": "3.1.0", "info": {"title": "t", "version": "1"},
            "paths": {"/a": {"get": {"operationId": "listA", "responses": {"200": {"description": "ok",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Data_Vec_Thing"}}}}}}}},
            "components": {"schemas": {
                "Thing": {"type": "object", "properties": {"metadata": {"type": ["object", "null"]}}},
                "Data_Vec_Thing": {"type": "object", "properties": {"data": {"type": "array", "items": {"$ref": "#/components/schemas/Thing"}}}},
                "Data_Thing": {"type": "object", "properties": {"data": {"$ref": "#/components/schemas/Thing"}}},
                "ThingData": {"type": "string"},
            }},
        }))
        .unwrap();
        let v = serde_json::to_value(tidy_schemas(api)).unwrap();
        let schemas = &v["components"]["schemas"];
        assert_eq!(schemas["Thing"]["properties"]["metadata"]["additionalProperties"], true);
        assert!(schemas["ThingList"].is_object() && schemas.get("Data_Vec_Thing").is_none());
        let answer = &v["paths"]["/a"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"];
        assert_eq!(answer, "#/components/schemas/ThingList");
        // A taken name keeps the old one.
        assert!(schemas["Data_Thing"].is_object() && schemas["ThingData"]["type"] == "string");
    }
}
