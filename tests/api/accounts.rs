use reqwest::StatusCode;
use serde_json::json;

use crate::both;
use crate::common::{Backend, assert_error, spawn, spawn_with};

both!(
    register_login_me,
    registration_validation,
    duplicate_email_is_refused,
    access_code_required_when_configured,
    wrong_password_is_refused,
    email_verification,
    password_change,
    email_change_applies_on_verification,
    verification_mail_goes_out_over_smtp,
);

async fn register_login_me(b: Backend) {
    let app = spawn(b).await;
    let r = app.register("  Ada@Example.COM ", "correct horse").await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.body["data"]["email"], "ada@example.com");
    assert_eq!(r.body["data"]["email_verified"], false);
    let user_id = r.body["data"]["user_id"].as_str().unwrap().to_owned();

    let r = app
        .public_post(
            "/api/auth/login",
            json!({"email": "ada@example.com", "password": "correct horse", "key_name": "laptop"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let key = r.body["data"]["api_key"].as_str().unwrap().to_owned();
    assert!(key.starts_with("acs_"));
    assert_eq!(r.body["data"]["key"]["name"], "laptop");
    assert_eq!(r.body["data"]["key"]["scope"], "full");
    assert_eq!(r.body["data"]["key"]["prefix"], key[..12]);

    let r = app.get("/api/auth/me", &key).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let me = &r.body["data"];
    assert_eq!(me["user_id"], user_id);
    assert_eq!(me["email"], "ada@example.com");
    for flag in
        ["brokered", "connections_enabled", "connections_manageable", "openai_subscriptions_enabled", "email_verified"]
    {
        assert_eq!(me[flag], false, "{flag}");
    }
}

async fn registration_validation(b: Backend) {
    let app = spawn(b).await;
    let r = app.register("not-an-email", "correct horse").await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert!(r.body["errors"]["email"].is_array());

    // Password boundary: 7 refused, 8 accepted, 256 accepted, 257 refused.
    let r = app.register("p7@example.com", "1234567").await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert!(r.body["errors"]["password"].is_array());
    assert_eq!(app.register("p8@example.com", "12345678").await.status, StatusCode::CREATED);
    assert_eq!(app.register("p256@example.com", &"x".repeat(256)).await.status, StatusCode::CREATED);
    let r = app.register("p257@example.com", &"x".repeat(257)).await;
    assert!(r.body["errors"]["password"].is_array(), "{}", r.text);

    let r = app.public_post("/api/auth/register", json!({"password": "correct horse"})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert_eq!(r.body["errors"]["email"][0], "can't be blank");
}

async fn duplicate_email_is_refused(b: Backend) {
    let app = spawn(b).await;
    assert_eq!(app.register("dup@example.com", "correct horse").await.status, StatusCode::CREATED);
    let r = app.register("DUP@example.com", "another horse").await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert_eq!(r.body["errors"]["email"][0], "has already been taken");
}

async fn access_code_required_when_configured(b: Backend) {
    let app = spawn_with(b, &[("auth.access_code", json!("letmein"))]).await;
    let r = app.register("a@example.com", "correct horse").await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert!(r.body["errors"]["access_code"].is_array());
    let r = app
        .public_post(
            "/api/auth/register",
            json!({"email": "a@example.com", "password": "correct horse", "access_code": "nope"}),
        )
        .await;
    assert!(r.body["errors"]["access_code"].is_array());
    let r = app
        .public_post(
            "/api/auth/register",
            json!({"email": "a@example.com", "password": "correct horse", "access_code": "letmein"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);

    // Without a configured code, a sent one is ignored.
    let open = spawn(b).await;
    let r = open
        .public_post(
            "/api/auth/register",
            json!({"email": "b@example.com", "password": "correct horse", "access_code": "whatever"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
}

async fn wrong_password_is_refused(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let r = app.login(&u.email, "wrong password").await;
    assert_error(&r, StatusCode::UNAUTHORIZED, "invalid_credentials");
    let r = app.login("nobody@example.com", "wrong password").await;
    assert_error(&r, StatusCode::UNAUTHORIZED, "invalid_credentials");
}

async fn email_verification(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let token = app.mailed_token(&u.email).await;
    let r = app.public_post("/api/auth/verify-email", json!({"token": "acsv_nonsense"})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "invalid_token");

    let r = app.public_post("/api/auth/verify-email", json!({"token": token})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["user_id"], u.id);
    assert_eq!(r.body["email_verified"], true);
    assert!(r.body["message"].is_string());
    assert_eq!(app.get("/api/auth/me", &u.key).await.body["data"]["email_verified"], true);

    // A token works once.
    let r = app.public_post("/api/auth/verify-email", json!({"token": token})).await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "invalid_token");
    // Nothing left to verify.
    let r = app.post("/api/auth/verify-email/resend", &u.key, json!({})).await;
    assert_error(&r, StatusCode::CONFLICT, "already_verified");
}

async fn password_change(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let r = app
        .post(
            "/api/account/password",
            &u.key,
            json!({"current_password": "wrong one", "new_password": "a new password"}),
        )
        .await;
    assert_error(&r, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    assert!(r.body["errors"]["current_password"].is_array());
    let r = app
        .post("/api/account/password", &u.key, json!({"current_password": u.password, "new_password": "short"}))
        .await;
    assert!(r.body["errors"]["new_password"].is_array(), "{}", r.text);

    let r = app
        .post(
            "/api/account/password",
            &u.key,
            json!({"current_password": u.password, "new_password": "a new password"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    assert_eq!(app.login(&u.email, &u.password).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(app.login(&u.email, "a new password").await.status, StatusCode::CREATED);
    // Existing keys keep working.
    assert_eq!(app.get("/api/auth/me", &u.key).await.status, StatusCode::OK);
}

async fn email_change_applies_on_verification(b: Backend) {
    let app = spawn(b).await;
    let u = app.user().await;
    let other = app.user().await;
    let r =
        app.post("/api/account/email", &u.key, json!({"new_email": other.email, "current_password": u.password})).await;
    assert!(r.body["errors"]["new_email"].is_array(), "{}", r.text);

    let r = app
        .post("/api/account/email", &u.key, json!({"new_email": "new@example.com", "current_password": u.password}))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let me = app.get("/api/auth/me", &u.key).await.body;
    assert_eq!(me["data"]["email"], u.email, "unchanged until verified");
    assert_eq!(me["data"]["pending_email"], "new@example.com");

    let token = app.mailed_token("new@example.com").await;
    let r = app.public_post("/api/auth/verify-email", json!({"token": token})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let me = app.get("/api/auth/me", &u.key).await.body;
    assert_eq!(me["data"]["email"], "new@example.com");
    assert_eq!(me["data"]["pending_email"], serde_json::Value::Null);
    assert_eq!(app.login("new@example.com", &u.password).await.status, StatusCode::CREATED);
    assert_eq!(app.login(&u.email, &u.password).await.status, StatusCode::UNAUTHORIZED);
}

/// A minimal SMTP server: accepts one message and hands its DATA back.
async fn smtp_receiver() -> (u16, tokio::sync::oneshot::Receiver<String>) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (sock, _) = listener.accept().await.unwrap();
        let (read, mut write) = sock.into_split();
        let mut lines = BufReader::new(read).lines();
        write.write_all(b"220 test ESMTP\r\n").await.unwrap();
        let mut data = String::new();
        let mut in_data = false;
        while let Ok(Some(line)) = lines.next_line().await {
            if in_data {
                if line == "." {
                    in_data = false;
                    write.write_all(b"250 queued\r\n").await.unwrap();
                } else {
                    data.push_str(&line);
                    data.push('\n');
                }
                continue;
            }
            let verb = line.split_whitespace().next().unwrap_or("").to_ascii_uppercase();
            let reply: &[u8] = match verb.as_str() {
                "EHLO" | "HELO" => b"250 test\r\n",
                "DATA" => {
                    in_data = true;
                    b"354 go ahead\r\n"
                }
                "QUIT" => {
                    write.write_all(b"221 bye\r\n").await.unwrap();
                    break;
                }
                _ => b"250 ok\r\n",
            };
            write.write_all(reply).await.unwrap();
        }
        let _ = tx.send(data);
    });
    (port, rx)
}

async fn verification_mail_goes_out_over_smtp(b: Backend) {
    let (port, received) = smtp_receiver().await;
    let app = spawn_with(
        b,
        &[
            ("email.transport", json!("smtp")),
            ("email.smtp_url", json!(format!("smtp://127.0.0.1:{port}"))),
            ("email.from", json!("acs <noreply@acs.test>")),
        ],
    )
    .await;
    let r = app.register("smtp@example.com", "correct horse").await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let data =
        tokio::time::timeout(std::time::Duration::from_secs(10), received).await.expect("mail within 10 s").unwrap();
    assert!(data.contains("To: smtp@example.com"), "{data}");
    assert!(data.contains("noreply@acs.test"), "{data}");
    let token = data.split_whitespace().find(|w| w.starts_with("acsv_")).expect("token in the body").to_owned();
    let r = app.public_post("/api/auth/verify-email", json!({"token": token})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}
