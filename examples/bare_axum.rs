//! Baseline for `bench/run`: the cheapest axum server that answers
//! `GET /me` with a small JSON body, to compare acs's authenticated
//! `GET /api/auth/me` against.
//!
//!     cargo run --release --example bare_axum -- 127.0.0.1:18081

use axum::Json;
use axum::Router;
use axum::routing::get;
use serde::Serialize;

#[derive(Serialize)]
struct Me {
    user_id: &'static str,
    email: &'static str,
    email_verified: bool,
}

async fn me() -> Json<Me> {
    Json(Me { user_id: "0190b5a4-0000-7000-8000-000000000000", email: "bench@example.com", email_verified: false })
}

#[tokio::main]
async fn main() {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:18081".to_owned());
    let listener =
        tokio::net::TcpListener::bind(&addr).await.unwrap_or_else(|e| panic!("cannot listen on {addr}: {e}"));
    eprintln!("bare_axum listening on http://{addr}/me");
    axum::serve(listener, Router::new().route("/me", get(me))).await.expect("serving");
}
