//! The OpenAPI document: public, complete, and pinned by a snapshot per feature set.

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::both;
use crate::common::{Backend, spawn};

both!(document_is_public_and_complete, reference_page);

/// The snapshot of the document for this build's feature set. Regenerate
/// with `UPDATE_SNAPSHOTS=1 cargo test --test api docs::` after an intended change.
fn snapshot_path() -> std::path::PathBuf {
    let name = match (cfg!(feature = "support"), cfg!(feature = "webhooks")) {
        (true, true) => "openapi.json",
        (false, false) => "openapi-no-default-features.json",
        _ => panic!("no snapshot is pinned for this feature set"),
    };
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots").join(name)
}

async fn document_is_public_and_complete(b: Backend) {
    let app = spawn(b).await;
    let r = app.request(Method::GET, "/api/docs", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    let doc = &r.body;
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    for p in [
        "/api/auth/register",
        "/api/auth/login",
        "/api/auth/me",
        "/api/keys",
        "/api/keys/{id}",
        "/api/audit",
        "/api/catalog",
        "/api/health/ready",
    ] {
        assert!(paths.contains_key(p), "{p} documented");
    }
    assert_eq!(
        paths.contains_key("/api/support/reports"),
        cfg!(feature = "support"),
        "support appears only when compiled in"
    );
    assert_eq!(
        paths.contains_key("/api/webhooks"),
        cfg!(feature = "webhooks"),
        "webhooks appear only when compiled in"
    );
    assert!(doc["components"]["schemas"]["Error"].is_object());
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
    // Every operation documents its success and error responses; public ones say so.
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            let responses = op["responses"].as_object().unwrap();
            assert!(responses.keys().any(|s| s.starts_with('2')), "{method} {path} has a success response");
            assert!(responses.contains_key("406"), "{method} {path} documents 406");
            let public = op["security"] == Value::Array(vec![]);
            if !public {
                for status in ["401", "403", "429"] {
                    assert!(responses.contains_key(status), "{method} {path} documents {status}");
                }
            }
        }
    }
    assert_eq!(paths["/api/health/ready"]["get"]["security"], Value::Array(vec![]));
    // What generators read beyond the operations: license, servers, declared tags.
    assert_eq!(doc["info"]["license"]["identifier"], "Apache-2.0");
    assert_eq!(doc["servers"][0]["url"], "/");
    let tags: Vec<&str> = doc["tags"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    // Bodies declare the refusals of the body itself; the 406 body is its own shape.
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            let id = op["operationId"].as_str().unwrap();
            assert!(id.chars().all(|c| c.is_ascii_alphanumeric()) && id.starts_with(|c: char| c.is_ascii_lowercase()));
            assert!(op["summary"].as_str().is_some_and(|s| !s.is_empty()), "{method} {path} has a summary");
            assert!(op["tags"].as_array().unwrap().iter().all(|t| tags.contains(&t.as_str().unwrap())));
            if op.get("requestBody").is_some() {
                for status in ["413", "415", "422"] {
                    assert!(op["responses"].get(status).is_some(), "{method} {path} documents {status}");
                }
            }
            assert_eq!(
                op["responses"]["406"]["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/NotAcceptable"
            );
        }
    }
    // Envelopes name their payload instead of copying it.
    assert_eq!(doc["components"]["schemas"]["AgentData"]["properties"]["data"]["$ref"], "#/components/schemas/Agent");
    // Every response is described, operation ids are unique, and every `$ref` names a
    // registered schema.
    let mut ids = std::collections::BTreeSet::new();
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            let id = op["operationId"].as_str().unwrap_or_else(|| panic!("{method} {path} has an id"));
            assert!(ids.insert(id), "{method} {path}: the operation id `{id}` is taken");
            for (status, response) in op["responses"].as_object().unwrap() {
                let described = response["description"].as_str().is_some_and(|d| !d.is_empty());
                assert!(described, "{method} {path} {status} has a description");
            }
        }
    }
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let mut refs = Vec::new();
    collect_refs(doc, &mut refs);
    for r in refs {
        let name = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("{r} is a schema ref"));
        assert!(schemas.contains_key(name), "{r} resolves");
    }

    let pretty = serde_json::to_string_pretty(doc).unwrap() + "\n";
    let snap = snapshot_path();
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(snap.parent().unwrap()).unwrap();
        std::fs::write(&snap, &pretty).unwrap();
    }
    let pinned = std::fs::read_to_string(&snap).unwrap_or_default();
    assert!(
        pinned == pretty,
        "the public contract changed: review, then rerun with UPDATE_SNAPSHOTS=1 ({})",
        snap.display()
    );
}

fn collect_refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r),
                    _ => collect_refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

async fn reference_page(b: Backend) {
    let app = spawn(b).await;
    let r = app.http.get(format!("{}/docs", app.base)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    let html = r.text().await.unwrap();
    assert!(html.contains("/api/auth/me") && html.contains("public"), "renders operations");
}
