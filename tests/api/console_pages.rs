//! The console's resource pages over HTTP, as a browser without script uses
//! them: agents (create, edit, roll back, start, delete), conversations,
//! environments and vaults (secrets write-only), credential sets, the team
//! and its schedules, API keys (shown once) and OAuth clients. Each change
//! made through a form is checked through the API.

use acs_testkit::browser::{Browser, assert_labelled, field, location};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::both;
use crate::common::{Backend, SCRIPTED_AGENT, TestApp, User, acp_agent, scripted_app, spawn_with};

both!(
    every_page_renders_for_its_owner_labelled_and_needs_a_session,
    pages_and_forms_of_another_account_are_not_found,
    agents_are_made_edited_rolled_back_started_and_deleted_through_forms,
    a_start_with_every_machine_busy_says_its_place_in_the_queue,
    environment_vault_and_credential_values_are_never_shown,
    a_key_is_shown_once_and_revoked_and_oauth_clients_are_registered,
    teammates_and_their_schedules_are_managed_through_forms,
);

async fn signed_in(app: &TestApp, u: &User) -> Browser {
    let mut b = Browser::new(app);
    b.sign_in(&u.email, &u.password).await;
    b
}

/// The session's CSRF token, read from a page.
async fn csrf(b: &mut Browser) -> String {
    field(&b.get("/").await.text, "csrf").expect("every page carries the token")
}

/// The uuid a redirect points at, after `prefix`.
fn id_after(r: &crate::common::Resp, prefix: &str) -> Uuid {
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.text);
    let to = location(r);
    to.strip_prefix(prefix).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{to} is not {prefix}<id>"))
}

/// A form's fields as `post_form` takes them.
fn pairs<'a>(f: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    f.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

fn data(r: &crate::common::Resp) -> &Value {
    assert!(r.status.is_success(), "{}", r.text);
    &r.body["data"]
}

async fn every_page_renders_for_its_owner_labelled_and_needs_a_session(b: Backend) {
    let app = spawn_with(b, &[]).await;
    let u = app.user().await;
    let agent = acp_agent(&app, &u, SCRIPTED_AGENT, json!({})).await;
    let env = data(&app.post("/api/environments", &u.key, json!({"name": "env-<one>"})).await)["id"].clone();
    let vault = data(&app.post("/api/vaults", &u.key, json!({"name": "vault-one"})).await)["id"].clone();
    let set = app.post("/api/account/inference-credential-sets", &u.key, json!({"name": "set-one"})).await;
    let set = data(&set)["id"].clone();
    let r = app.request(Method::PUT, &format!("/api/team/{agent}"), Some(&u.key), Some(json!({}))).await;
    assert!(r.status.is_success(), "{}", r.text);
    let (env, vault, set) = (env.as_str().unwrap(), vault.as_str().unwrap(), set.as_str().unwrap());

    let pages = [
        "/agents".to_owned(),
        format!("/agents/{agent}"),
        "/conversations".into(),
        "/environments".into(),
        format!("/environments/{env}"),
        "/vaults".into(),
        format!("/vaults/{vault}"),
        "/account/credentials".into(),
        format!("/account/credentials/{set}"),
        "/team".into(),
        format!("/team/{agent}"),
        "/account/keys".into(),
        "/account/oauth-clients".into(),
    ];
    let mut browser = signed_in(&app, &u).await;
    for path in &pages {
        let r = browser.get(path).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.text);
        assert!(r.text.contains("<nav aria-label=\"Main\">"), "{path}");
        assert_labelled(path, &r.text);
    }
    // Values from the API are escaped.
    let r = browser.get(&format!("/environments/{env}")).await;
    assert!(r.text.contains("env-&lt;one&gt;") && !r.text.contains("env-<one>"));

    let mut anon = Browser::new(&app);
    for path in &pages {
        let r = anon.get(path).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{path}");
        assert!(location(&r).starts_with("/login?next="), "{path}: {}", location(&r));
    }
    // A form without a session changes nothing.
    let r = anon.post_form("/agents", &[("csrf", "x"), ("name", "n"), ("runtime", "claude")]).await;
    assert_ne!(r.status, StatusCode::OK);
    assert_eq!(data(&app.get("/api/agents", &u.key).await).as_array().unwrap().len(), 1);
}

async fn pages_and_forms_of_another_account_are_not_found(b: Backend) {
    let app = spawn_with(b, &[]).await;
    let (u, other) = (app.user().await, app.user().await);
    let agent = acp_agent(&app, &u, SCRIPTED_AGENT, json!({"name": "mine-agent"})).await;
    let env = data(&app.post("/api/environments", &u.key, json!({"name": "mine-env"})).await)["id"].clone();
    let vault = data(&app.post("/api/vaults", &u.key, json!({"name": "mine-vault"})).await)["id"].clone();
    let set = app.post("/api/account/inference-credential-sets", &u.key, json!({"name": "mine-set"})).await;
    let set = data(&set)["id"].clone();
    let (env, vault, set) = (env.as_str().unwrap(), vault.as_str().unwrap(), set.as_str().unwrap());

    let mut theirs = signed_in(&app, &other).await;
    for path in [
        format!("/agents/{agent}"),
        format!("/environments/{env}"),
        format!("/vaults/{vault}"),
        format!("/account/credentials/{set}"),
        format!("/team/{agent}"),
    ] {
        let r = theirs.get(&path).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}: {}", r.text);
        assert!(!r.text.contains("mine-"), "{path}");
    }
    let token = csrf(&mut theirs).await;
    for path in [
        format!("/agents/{agent}/delete"),
        format!("/environments/{env}/delete"),
        format!("/vaults/{vault}/delete"),
        format!("/account/credentials/{set}/delete"),
    ] {
        let r = theirs.post_form(&path, &[("csrf", &token)]).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}: {}", r.text);
    }
    let r =
        theirs.post_form(&format!("/vaults/{vault}/secrets"), &[("csrf", &token), ("key", "K"), ("value", "v")]).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    // All still there, unchanged.
    for path in [format!("/api/agents/{agent}"), format!("/api/environments/{env}"), format!("/api/vaults/{vault}")] {
        assert_eq!(app.get(&path, &u.key).await.status, StatusCode::OK, "{path}");
    }
    assert!(data(&app.get(&format!("/api/vaults/{vault}/secrets"), &u.key).await).as_array().unwrap().is_empty());
    // Ids that are not ids: 404 or 400, never a server error.
    let r = theirs.get("/agents/not-an-id").await;
    assert!(r.status.is_client_error(), "{}", r.status);
}

async fn agents_are_made_edited_rolled_back_started_and_deleted_through_forms(b: Backend) {
    let app = scripted_app(b, &[]).await;
    let u = app.user().await;
    let mut browser = signed_in(&app, &u).await;
    let token = csrf(&mut browser).await;
    let fields = |csrf: &str, name: &str| -> Vec<(&'static str, String)> {
        [("csrf", csrf), ("name", name), ("runtime", "acp"), ("command", SCRIPTED_AGENT), ("model", "")]
            .into_iter()
            .chain([("system_prompt", "Be brief.")])
            .map(|(k, v)| (k, v.to_owned()))
            .collect()
    };

    // A wrong token is refused; nothing is made.
    let r = browser.post_form("/agents", &pairs(&fields("wrong", "helper"))).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(data(&app.get("/api/agents", &u.key).await).as_array().unwrap().is_empty());
    // The API's refusal is shown above the form, the input kept.
    let r = browser.post_form("/agents", &pairs(&fields(&token, ""))).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert!(r.text.contains("role=\"alert\"") && r.text.contains(">Be brief.</textarea>"), "{}", r.text);

    let good = fields(&token, "helper");
    let id = id_after(&browser.post_form("/agents", &pairs(&good)).await, "/agents/");
    let a = data(&app.get(&format!("/api/agents/{id}"), &u.key).await).clone();
    assert_eq!((a["name"].as_str(), a["runtime"].as_str()), (Some("helper"), Some("acp")));
    assert_eq!(a["command"], json!([SCRIPTED_AGENT]));
    assert_eq!(a["system_prompt"], "Be brief.");
    let list = browser.get("/agents").await.text;
    assert!(list.contains(&format!("<a href=\"/agents/{id}\">helper</a>")), "{list}");

    // Edit: a new version.
    let here = format!("/agents/{id}");
    let mut edit = good.clone();
    edit.retain(|(k, _)| *k != "runtime");
    edit[1].1 = "helper two".into();
    let r = browser.post_form(&here, &pairs(&edit)).await;
    assert_eq!((r.status, location(&r)), (StatusCode::SEE_OTHER, here.clone()), "{}", r.text);
    let a = data(&app.get(&format!("/api/agents/{id}"), &u.key).await).clone();
    assert_eq!((a["name"].as_str(), a["version"].as_i64()), (Some("helper two"), Some(2)));
    let page = browser.get(&here).await.text;
    assert!(page.contains("<h1>helper two</h1>") && page.contains("Roll back</button>"), "{page}");

    // Roll back to version 1.
    let r = browser.post_form(&format!("{here}/rollback"), &[("csrf", &token), ("version", "1")]).await;
    assert_eq!((r.status, location(&r)), (StatusCode::SEE_OTHER, here.clone()), "{}", r.text);
    assert_eq!(data(&app.get(&format!("/api/agents/{id}"), &u.key).await)["name"], "helper");

    // Start a conversation: to its page; listed under Conversations.
    let r = browser.post_form(&format!("{here}/start"), &[("csrf", &token), ("prompt", "say: from the page")]).await;
    let conv = id_after(&r, "/conversations/");
    let c = data(&app.get(&format!("/api/conversations/{conv}"), &u.key).await).clone();
    assert_eq!(c["agent_id"], id.to_string());
    let list = browser.get("/conversations").await;
    assert_eq!(list.status, StatusCode::OK);
    assert!(list.text.contains(&format!("href=\"/conversations/{conv}\"")), "{}", list.text);
    assert!(list.text.contains("<td>helper</td>"), "the agent by name: {}", list.text);

    // Delete.
    let r = browser.post_form(&format!("{here}/delete"), &[("csrf", "wrong")]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = browser.post_form(&format!("{here}/delete"), &[("csrf", &token)]).await;
    assert_eq!((r.status, location(&r)), (StatusCode::SEE_OTHER, "/agents".to_owned()), "{}", r.text);
    assert_eq!(app.get(&format!("/api/agents/{id}"), &u.key).await.status, StatusCode::NOT_FOUND);
    assert_eq!(browser.get(&here).await.status, StatusCode::NOT_FOUND);
}

async fn a_start_with_every_machine_busy_says_its_place_in_the_queue(b: Backend) {
    let app = scripted_app(b, &[("limits.sandboxes_per_account", json!(1))]).await;
    let u = app.user().await;
    let agent = acp_agent(&app, &u, SCRIPTED_AGENT, json!({})).await;
    let mut browser = signed_in(&app, &u).await;
    let token = csrf(&mut browser).await;
    let start = format!("/agents/{agent}/start");
    id_after(&browser.post_form(&start, &[("csrf", &token), ("prompt", "say: one")]).await, "/conversations/");
    let r = browser.post_form(&start, &[("csrf", &token), ("prompt", "say: two")]).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert!(r.text.contains("role=\"status\"") && r.text.contains("at place 1"), "{}", r.text);
}

async fn environment_vault_and_credential_values_are_never_shown(b: Backend) {
    let app = spawn_with(b, &[]).await;
    let u = app.user().await;
    let mut browser = signed_in(&app, &u).await;
    let token = csrf(&mut browser).await;
    const VALUE: &str = "s3cret-value-9f8e7d";

    for (page, api) in [("/vaults", "/api/vaults"), ("/environments", "/api/environments")] {
        let r = browser.post_form(page, &[("csrf", "wrong"), ("name", "x")]).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN);
        let id = id_after(&browser.post_form(page, &[("csrf", &token), ("name", "holder")]).await, &format!("{page}/"));
        assert_eq!(data(&app.get(&format!("{api}/{id}"), &u.key).await)["name"], "holder");
        let here = format!("{page}/{id}");
        let r = browser
            .post_form(&format!("{here}/secrets"), &[("csrf", &token), ("key", "TOKEN"), ("value", VALUE)])
            .await;
        assert_eq!((r.status, location(&r)), (StatusCode::SEE_OTHER, here.clone()), "{}", r.text);
        let keys = data(&app.get(&format!("{api}/{id}/secrets"), &u.key).await).clone();
        assert_eq!(keys.as_array().unwrap().len(), 1);
        assert_eq!(keys[0]["key"], "TOKEN");
        let html = browser.get(&here).await.text;
        assert!(html.contains("<code>TOKEN</code>"), "{html}");
        assert!(html.contains("type=\"password\""), "{html}");
        assert!(!html.contains(VALUE), "{page}: the value is never shown");
        // A refused key is said, not kept.
        let r =
            browser.post_form(&format!("{here}/secrets"), &[("csrf", &token), ("key", "1BAD"), ("value", "v")]).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
        let r = browser.post_form(&format!("{here}/secrets/TOKEN/delete"), &[("csrf", &token)]).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.text);
        assert!(data(&app.get(&format!("{api}/{id}/secrets"), &u.key).await).as_array().unwrap().is_empty());
        if page == "/environments" {
            let r = browser
                .post_form(
                    &format!("{here}/variables"),
                    &[("csrf", &token), ("var_name", "MODE"), ("var_value", "fast")],
                )
                .await;
            assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.text);
            assert_eq!(data(&app.get(&format!("{api}/{id}"), &u.key).await)["env_vars"], json!({"MODE": "fast"}));
            let r = browser.post_form(&format!("{here}/variables/MODE/delete"), &[("csrf", &token)]).await;
            assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.text);
            assert_eq!(data(&app.get(&format!("{api}/{id}"), &u.key).await)["env_vars"], json!({}));
        }
        let r = browser.post_form(&format!("{here}/delete"), &[("csrf", &token)]).await;
        assert_eq!((r.status, location(&r)), (StatusCode::SEE_OTHER, page.to_owned()));
        assert_eq!(app.get(&format!("{api}/{id}"), &u.key).await.status, StatusCode::NOT_FOUND);
    }

    // Credential sets: the providers held, never the values.
    let r = browser.post_form("/account/credentials", &[("csrf", &token), ("name", "work")]).await;
    let set = id_after(&r, "/account/credentials/");
    let here = format!("/account/credentials/{set}");
    let r = browser
        .post_form(&format!("{here}/set"), &[("csrf", &token), ("provider", "anthropic_api_key"), ("value", VALUE)])
        .await;
    assert_eq!((r.status, location(&r)), (StatusCode::SEE_OTHER, here.clone()), "{}", r.text);
    let sets = data(&app.get("/api/account/inference-credential-sets", &u.key).await).clone();
    let mine = sets.as_array().unwrap().iter().find(|s| s["id"] == set.to_string()).unwrap().clone();
    assert_eq!(mine["providers"], json!(["anthropic_api_key"]));
    for path in ["/account/credentials", here.as_str()] {
        let html = browser.get(path).await.text;
        assert!(html.contains("anthropic_api_key") || html.contains("Anthropic API key"), "{path}: {html}");
        assert!(!html.contains(VALUE), "{path}: the value is never shown");
    }
    // The first set is the default, which the API will not delete: the page says why.
    let r = browser.post_form(&format!("{here}/delete"), &[("csrf", &token)]).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);
    assert!(r.text.contains("role=\"alert\"") && r.text.contains("default set"), "{}", r.text);
    let r = browser.post_form("/account/credentials", &[("csrf", &token), ("name", "spare")]).await;
    let spare = id_after(&r, "/account/credentials/");
    let r = browser.post_form(&format!("/account/credentials/{spare}/delete"), &[("csrf", &token)]).await;
    assert_eq!((r.status, location(&r)), (StatusCode::SEE_OTHER, "/account/credentials".to_owned()), "{}", r.text);
    let sets = data(&app.get("/api/account/inference-credential-sets", &u.key).await).clone();
    let ids: Vec<&str> = sets.as_array().unwrap().iter().filter_map(|s| s["id"].as_str()).collect();
    assert_eq!(ids, [set.to_string()]);
}

async fn a_key_is_shown_once_and_revoked_and_oauth_clients_are_registered(b: Backend) {
    let app = spawn_with(b, &[]).await;
    let u = app.user().await;
    let mut browser = signed_in(&app, &u).await;
    let token = csrf(&mut browser).await;

    let r = browser.post_form("/account/keys", &[("csrf", "wrong"), ("name", "laptop"), ("scope", "full")]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = browser.post_form("/account/keys", &[("csrf", &token), ("name", "laptop"), ("scope", "restricted")]).await;
    assert_eq!(r.status, StatusCode::OK, "shown on the page, not through an address: {}", r.text);
    let value = r.text.split("<code id=\"shown-once\">").nth(1).unwrap().split('<').next().unwrap().to_owned();
    assert!(value.starts_with("acs_"), "{value}");
    let me = app.get("/api/auth/me", &value).await;
    assert_eq!(me.status, StatusCode::OK, "{}", me.text);
    let keys = data(&app.get("/api/keys", &u.key).await).clone();
    let key = keys.as_array().unwrap().iter().find(|k| k["name"] == "laptop").unwrap().clone();
    assert_eq!(key["scope"], "restricted");

    let page = browser.get("/account/keys").await.text;
    assert!(!page.contains(&value) && !page.contains("shown-once"), "shown once only");
    assert!(page.contains("<td>laptop</td>") && page.contains("<td>restricted</td>"), "{page}");
    // A refused name is said, the form kept.
    let long = "n".repeat(300);
    let r = browser.post_form("/account/keys", &[("csrf", &token), ("name", &long), ("scope", "restricted")]).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert!(r.text.contains("role=\"alert\"") && r.text.contains(&long) && !r.text.contains("shown-once"));

    let revoke = format!("/account/keys/{}/revoke", key["id"].as_str().unwrap());
    assert!(page.contains(&format!("action=\"{revoke}\"")), "{page}");
    let r = browser.post_form(&revoke, &[("csrf", &token)]).await;
    assert_eq!((r.status, location(&r)), (StatusCode::SEE_OTHER, "/account/keys".to_owned()), "{}", r.text);
    assert_eq!(app.get("/api/auth/me", &value).await.status, StatusCode::UNAUTHORIZED);
    assert!(!browser.get("/account/keys").await.text.contains("<td>laptop</td>"));

    // OAuth clients.
    let uris = "https://app.example.com/callback\r\nhttps://app.example.com/other\r\n";
    let r = browser
        .post_form("/account/oauth-clients", &[("csrf", &token), ("name", "Notes app"), ("redirect_uris", uris)])
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let clients = data(&app.get("/api/oauth/clients", &u.key).await).clone();
    let client = clients.as_array().unwrap().iter().find(|c| c["name"] == "Notes app").unwrap().clone();
    assert_eq!(client["redirect_uris"], json!(["https://app.example.com/callback", "https://app.example.com/other"]));
    assert!(r.text.contains(client["client_id"].as_str().unwrap()));
    let r = browser
        .post_form("/account/oauth-clients", &[("csrf", &token), ("name", "Bad"), ("redirect_uris", "nope")])
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert!(r.text.contains("role=\"alert\"") && r.text.contains(">nope</textarea>"), "{}", r.text);
    let delete = format!("/account/oauth-clients/{}/delete", client["id"].as_str().unwrap());
    let r = browser.post_form(&delete, &[("csrf", &token)]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.text);
    assert!(data(&app.get("/api/oauth/clients", &u.key).await).as_array().unwrap().is_empty());
}

async fn teammates_and_their_schedules_are_managed_through_forms(b: Backend) {
    let app = spawn_with(b, &[]).await;
    let u = app.user().await;
    let agent = acp_agent(&app, &u, SCRIPTED_AGENT, json!({"name": "reviewer"})).await;
    let mut browser = signed_in(&app, &u).await;
    let token = csrf(&mut browser).await;
    let page = browser.get("/team").await.text;
    assert!(page.contains(&format!("<option value=\"{agent}\">reviewer</option>")), "{page}");

    let r = browser.post_form("/team", &[("csrf", "wrong"), ("agent_id", &agent.to_string())]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = browser.post_form("/team", &[("csrf", &token), ("agent_id", &agent.to_string())]).await;
    assert_eq!((r.status, location(&r)), (StatusCode::SEE_OTHER, "/team".to_owned()), "{}", r.text);
    let team = data(&app.get("/api/team", &u.key).await).clone();
    assert_eq!(team[0]["agent_id"], agent.to_string());
    let page = browser.get("/team").await.text;
    assert!(page.contains(&format!("<a href=\"/team/{agent}\">reviewer</a>")), "{page}");

    let here = format!("/team/{agent}");
    let fields = [("csrf", token.as_str()), ("cron", "0 9 * * 1-5"), ("name", "standup"), ("prompt", "say: morning")];
    let r = browser.post_form(&format!("{here}/schedules"), &fields).await;
    assert_eq!((r.status, location(&r)), (StatusCode::SEE_OTHER, here.clone()), "{}", r.text);
    let schedules = data(&app.get(&format!("/api/team/{agent}/schedules"), &u.key).await).clone();
    let s = schedules[0].clone();
    assert_eq!(
        (s["cron"].as_str(), s["prompt"].as_str(), s["name"].as_str()),
        (Some("0 9 * * 1-5"), Some("say: morning"), Some("standup"))
    );
    let next = s["next_run_at"].as_str().expect("a next run");
    let html = browser.get(&here).await.text;
    assert!(html.contains("<code>0 9 * * 1-5</code>") && html.contains(&format!("datetime=\"{next}\"")), "{html}");
    // A cron the API refuses is said.
    let bad = [("csrf", token.as_str()), ("cron", "every morning"), ("prompt", "x")];
    let r = browser.post_form(&format!("{here}/schedules"), &bad).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);

    let delete = format!("{here}/schedules/{}/delete", s["id"].as_str().unwrap());
    let r = browser.post_form(&delete, &[("csrf", &token)]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.text);
    assert!(data(&app.get(&format!("/api/team/{agent}/schedules"), &u.key).await).as_array().unwrap().is_empty());
    let r = browser.post_form(&format!("{here}/remove"), &[("csrf", &token)]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.text);
    assert!(data(&app.get("/api/team", &u.key).await).as_array().unwrap().is_empty());
}
