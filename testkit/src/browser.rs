//! A browser over plain HTTP for page tests: it keeps cookies as a browser
//! would (by name; a `Max-Age=0` removes one), sends forms, does not follow
//! redirects (tests look at each `Location`), and reads form fields out of
//! the pages it gets.

use std::collections::BTreeMap;

use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};

use crate::{Resp, TestApp, into_resp};

pub struct Browser {
    base: String,
    http: reqwest::Client,
    pub cookies: BTreeMap<String, String>,
}

impl Browser {
    pub fn new(app: &TestApp) -> Browser {
        Browser { base: app.base.clone(), http: app.http.clone(), cookies: BTreeMap::new() }
    }

    fn cookie_header(&self) -> String {
        self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")
    }

    fn keep_cookies(&mut self, r: &Resp) {
        for v in r.headers.get_all(SET_COOKIE) {
            let v = v.to_str().unwrap();
            let (pair, attrs) = v.split_once(';').unwrap_or((v, ""));
            let (name, value) = pair.split_once('=').unwrap();
            if attrs.contains("Max-Age=0") || value.is_empty() {
                self.cookies.remove(name.trim());
            } else {
                self.cookies.insert(name.trim().to_owned(), value.trim().to_owned());
            }
        }
    }

    /// A request carrying the cookies kept so far, to send as the test likes
    /// (a stream read piece by piece, a header of its own).
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http.request(method, format!("{}{path}", self.base)).header(COOKIE, self.cookie_header())
    }

    /// `GET path` with the cookies kept so far.
    pub async fn get(&mut self, path: &str) -> Resp {
        let r = into_resp(
            self.http.get(format!("{}{path}", self.base)).header(COOKIE, self.cookie_header()).send().await.unwrap(),
        )
        .await;
        self.keep_cookies(&r);
        r
    }

    /// Posts a form (`application/x-www-form-urlencoded`).
    pub async fn post_form(&mut self, path: &str, fields: &[(&str, &str)]) -> Resp {
        let r = into_resp(
            self.http
                .post(format!("{}{path}", self.base))
                .header(COOKIE, self.cookie_header())
                .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(form_body(fields))
                .send()
                .await
                .unwrap(),
        )
        .await;
        self.keep_cookies(&r);
        r
    }

    /// Signs in through the `/login` form; panics unless it succeeds.
    pub async fn sign_in(&mut self, email: &str, password: &str) {
        let page = self.get("/login").await;
        let csrf = field(&page.text, "csrf").expect("the sign-in form has a CSRF token");
        let r = self.post_form("/login", &[("email", email), ("password", password), ("csrf", &csrf)]).await;
        assert_eq!(r.status, reqwest::StatusCode::SEE_OTHER, "{}", r.text);
        assert!(self.cookies.contains_key("acs_session"));
    }
}

/// A form body.
pub fn form_body(fields: &[(&str, &str)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in fields {
        s.append_pair(k, v);
    }
    s.finish()
}

/// Where a redirect points.
pub fn location(r: &Resp) -> String {
    r.headers.get(LOCATION).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
}

/// The value of the input named `name` in a page (the first one), unescaped.
pub fn field(html: &str, name: &str) -> Option<String> {
    let at = html.find(&format!("name=\"{name}\""))?;
    let start = html[..at].rfind('<')?;
    let end = at + html[at..].find('>')?;
    let tag = &html[start..end];
    let v = tag.split("value=\"").nth(1)?.split('"').next()?;
    Some(
        v.replace("&quot;", "\"").replace("&#39;", "'").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"),
    )
}

/// Checks a console page as a person using assistive technology would need
/// it: every control that is not hidden has a unique id and a `<label for>`
/// naming it; and as the content security policy requires: no inline style
/// or script.
pub fn assert_labelled(path: &str, html: &str) {
    for tag in ["<input", "<select", "<textarea"] {
        for (at, _) in html.match_indices(tag) {
            let end = at + html[at..].find('>').expect("the tag closes");
            let t = &html[at..end];
            if t.contains("type=\"hidden\"") {
                continue;
            }
            let id = t.split(" id=\"").nth(1).and_then(|s| s.split('"').next());
            let id = id.unwrap_or_else(|| panic!("{path}: a control without an id: {t}"));
            assert!(html.contains(&format!("<label for=\"{id}\">")), "{path}: no label for {id}");
            assert_eq!(html.matches(&format!(" id=\"{id}\"")).count(), 1, "{path}: id {id} is not unique");
        }
    }
    assert!(!html.contains(" style=\"") && !html.contains("<script>"), "{path}: inline style or script");
}
