//! The forwarding worker: sends due reports to the tracker, one claim per
//! report so several replicas never send the same attempt twice.

use std::sync::Arc;
use std::time::Duration;

use acs_platform::AppState;
use acs_platform::db::RowExt;
use acs_platform::time_fmt::now_micros;
use base64::Engine;
use sqlx::Row;
use uuid::Uuid;

use crate::Runtime;
use crate::reports::{COLUMNS, from_row};

/// How long a claimed report is reserved for one worker.
const LEASE_MICROS: i64 = 60_000_000;
/// Bound on a tracker's error text kept in `forward_error`.
const MAX_ERROR: usize = 500;

/// Delay before attempt `attempts + 1`: `retry_seconds` doubled per failure, capped at a day.
pub fn backoff_micros(retry_seconds: u64, attempts: i64) -> i64 {
    let factor = 1u64 << attempts.clamp(0, 20);
    (retry_seconds.saturating_mul(factor).min(86_400) as i64) * 1_000_000
}

pub async fn run(state: AppState, rt: Arc<Runtime>) {
    let Some(url) = rt.config.forward_url.clone() else { return };
    loop {
        tokio::select! {
            _ = state.shutdown.cancelled() => return,
            _ = rt.wake.notified() => {},
            _ = tokio::time::sleep(Duration::from_secs(1)) => {},
        }
        // While the flag is off, reports wait; they are forwarded once it is back on.
        if !state.feature_enabled(crate::NAME) {
            continue;
        }
        if let Err(e) = forward_due(&state, &rt, &url).await {
            tracing::warn!(error = %e, "support forwarding pass failed");
        }
    }
}

async fn forward_due(state: &AppState, rt: &Runtime, url: &str) -> Result<(), sqlx::Error> {
    let now = now_micros();
    let due = sqlx::query(
        "SELECT id FROM support_reports WHERE status IN ('new', 'failed') AND next_attempt_at IS NOT NULL \
         AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until < $1) ORDER BY next_attempt_at LIMIT 20",
    )
    .bind(now)
    .fetch_all(&state.db.pool)
    .await?;
    for row in due {
        let id = row.uuid("id")?;
        let claimed = sqlx::query(
            "UPDATE support_reports SET lease_until = $1 WHERE id = $2 AND (lease_until IS NULL OR lease_until < $3)",
        )
        .bind(now + LEASE_MICROS)
        .bind(id.to_string())
        .bind(now)
        .execute(&state.db.pool)
        .await?;
        if claimed.rows_affected() == 1 {
            forward_one(state, rt, url, id).await?;
        }
    }
    Ok(())
}

async fn forward_one(state: &AppState, rt: &Runtime, url: &str, id: Uuid) -> Result<(), sqlx::Error> {
    let sql = sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS}, account_id, attempts, screenshot AS screenshot_bytes FROM support_reports WHERE id = $1"
    ));
    let row = sqlx::query(sql).bind(id.to_string()).fetch_one(&state.db.pool).await?;
    let report = from_row(&row)?;
    let attempts: i64 = row.try_get("attempts")?;
    let screenshot: Option<Vec<u8>> = row.try_get("screenshot_bytes")?;
    let title: String = report.message.lines().next().unwrap_or("").chars().take(80).collect();
    let payload = serde_json::json!({
        "title": format!("[{}] {}", serde_json::to_value(report.category).unwrap_or_default().as_str().unwrap_or("other"), title),
        "body": report.message,
        "labels": [report.category],
        "report": {
            "id": report.id,
            "account_id": row.opt_uuid("account_id")?,
            "category": report.category,
            "client": report.client,
            "context": report.context,
            "inserted_at": report.inserted_at.format(&time::format_description::well_known::Rfc3339).ok(),
        },
        "screenshot": screenshot.map(|b| serde_json::json!({
            "data": base64::engine::general_purpose::STANDARD.encode(b),
            "media_type": report.screenshot_media_type,
        })),
    });
    let mut req = state.http.post(url).json(&payload);
    if let Some(token) = &rt.config.forward_token {
        req = req.bearer_auth(token);
    }
    let outcome = match req.send().await {
        Ok(res) if res.status().is_success() => {
            let body: serde_json::Value = res.json().await.unwrap_or_default();
            Ok(["html_url", "url", "web_url"].iter().find_map(|k| body[*k].as_str().map(str::to_owned)))
        }
        Ok(res) => {
            let status = res.status();
            let text = res.text().await.unwrap_or_default();
            Err(format!("tracker answered {status}: {}", text.chars().take(200).collect::<String>()))
        }
        Err(e) => Err(format!("tracker unreachable: {e}")),
    };
    let now = now_micros();
    match outcome {
        Ok(external_url) => {
            sqlx::query(
                "UPDATE support_reports SET status = 'forwarded', external_url = $1, forward_error = NULL, \
                 forwarded_at = $2, attempts = attempts + 1, next_attempt_at = NULL, lease_until = NULL WHERE id = $3",
            )
            .bind(external_url)
            .bind(now)
            .bind(id.to_string())
            .execute(&state.db.pool)
            .await?;
        }
        Err(error) => {
            let attempts = attempts + 1;
            let next = (attempts < rt.config.max_attempts)
                .then(|| now + backoff_micros(rt.config.retry_seconds, attempts - 1));
            tracing::warn!(report = %id, attempts, error = %error, "support report not forwarded");
            sqlx::query(
                "UPDATE support_reports SET status = 'failed', forward_error = $1, attempts = $2, \
                 next_attempt_at = $3, lease_until = NULL WHERE id = $4",
            )
            .bind(error.chars().take(MAX_ERROR).collect::<String>())
            .bind(attempts)
            .bind(next)
            .bind(id.to_string())
            .execute(&state.db.pool)
            .await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps_at_a_day() {
        assert_eq!(backoff_micros(60, 0), 60_000_000);
        assert_eq!(backoff_micros(60, 1), 120_000_000);
        assert_eq!(backoff_micros(60, 3), 480_000_000);
        assert_eq!(backoff_micros(60, 30), 86_400_000_000);
    }
}
