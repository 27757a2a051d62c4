//! Rows of endpoints and deliveries, read and written for the API.

use sqlx::any::AnyRow;
use sqlx::{Any, Row};
use uuid::Uuid;

use acs_platform::db::RowExt;
use acs_platform::state::AppState;
use acs_platform::time_fmt::{from_micros, now_micros};

use super::model::{DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEndpoint};

const ENDPOINT_COLUMNS: &str = "id, url, event_types, status, description, consecutive_failures, disabled_at, \
     disabled_reason, created_at, updated_at";

const DELIVERY_COLUMNS: &str =
    "id, endpoint_id, event_id, event_type, status, attempts, next_attempt_at, payload, created_at, updated_at";

/// Additional authenticated data of an endpoint's sealed secret.
pub fn secret_aad(endpoint_id: Uuid) -> String {
    format!("webhook_secret:{endpoint_id}")
}

fn endpoint_from_row(r: &AnyRow) -> Result<WebhookEndpoint, sqlx::Error> {
    let types: String = r.try_get("event_types")?;
    Ok(WebhookEndpoint {
        id: r.uuid("id")?,
        url: r.try_get("url")?,
        event_types: serde_json::from_str(&types).unwrap_or_default(),
        status: r.try_get("status")?,
        description: r.try_get("description")?,
        consecutive_failures: r.try_get("consecutive_failures")?,
        disabled_at: r.try_get::<Option<i64>, _>("disabled_at")?.map(from_micros),
        disabled_reason: r.try_get("disabled_reason")?,
        inserted_at: from_micros(r.try_get("created_at")?),
        updated_at: from_micros(r.try_get("updated_at")?),
    })
}

/// The account's endpoints (or one of them), newest first.
pub async fn endpoints(
    state: &AppState,
    account_id: Uuid,
    one: Option<Uuid>,
) -> Result<Vec<WebhookEndpoint>, sqlx::Error> {
    let sql = format!(
        "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE account_id = $1 AND ($2 = '' OR id = $2) \
         ORDER BY created_at DESC, id DESC"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(account_id.to_string())
        .bind(one.map(|i| i.to_string()).unwrap_or_default())
        .fetch_all(&state.db.pool)
        .await?;
    rows.iter().map(endpoint_from_row).collect()
}

pub struct NewEndpoint<'a> {
    pub id: Uuid,
    pub account_id: Uuid,
    pub url: &'a str,
    pub event_types: &'a [String],
    pub description: Option<&'a str>,
    pub sealed_secret: &'a str,
}

pub async fn insert_endpoint(tx: &mut sqlx::Transaction<'_, Any>, e: &NewEndpoint<'_>) -> Result<(), sqlx::Error> {
    let now = now_micros();
    sqlx::query(
        "INSERT INTO webhook_endpoints (id, account_id, url, description, event_types, secret, status, \
         consecutive_failures, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, 'active', 0, $7, $7)",
    )
    .bind(e.id.to_string())
    .bind(e.account_id.to_string())
    .bind(e.url.to_owned())
    .bind(e.description.map(str::to_owned))
    .bind(serde_json::to_string(e.event_types).unwrap_or_default())
    .bind(e.sealed_secret.to_owned())
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Fields a PATCH sets; `None` leaves a field alone.
#[derive(Default)]
pub struct EndpointChange<'a> {
    pub url: Option<&'a str>,
    pub event_types: Option<&'a [String]>,
    pub description: Option<Option<&'a str>>,
    pub sealed_secret: Option<&'a str>,
}

pub async fn update_endpoint(
    tx: &mut sqlx::Transaction<'_, Any>,
    id: Uuid,
    c: &EndpointChange<'_>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE webhook_endpoints SET url = COALESCE($2, url), event_types = COALESCE($3, event_types), \
         description = CASE WHEN $4 = 1 THEN $5 ELSE description END, secret = COALESCE($6, secret), \
         updated_at = $7 WHERE id = $1",
    )
    .bind(id.to_string())
    .bind(c.url.map(str::to_owned))
    .bind(c.event_types.map(|t| serde_json::to_string(t).unwrap_or_default()))
    .bind(c.description.is_some() as i32)
    .bind(c.description.flatten().map(str::to_owned))
    .bind(c.sealed_secret.map(str::to_owned))
    .bind(now_micros())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Switches an endpoint on (clearing its failure count) or off with `reason`.
pub async fn set_status(
    ex: impl sqlx::Executor<'_, Database = Any>,
    id: Uuid,
    disabled_reason: Option<&str>,
) -> Result<u64, sqlx::Error> {
    let now = now_micros();
    let done = match disabled_reason {
        None => {
            sqlx::query(
                "UPDATE webhook_endpoints SET status = 'active', consecutive_failures = 0, disabled_at = NULL, \
             disabled_reason = NULL, updated_at = $2 WHERE id = $1",
            )
            .bind(id.to_string())
            .bind(now)
            .execute(ex)
            .await?
        }
        Some(reason) => sqlx::query(
            "UPDATE webhook_endpoints SET status = 'disabled', disabled_at = $2, disabled_reason = $3, updated_at = $2 \
             WHERE id = $1 AND status = 'active'",
        )
        .bind(id.to_string())
        .bind(now)
        .bind(reason.to_owned())
        .execute(ex)
        .await?,
    };
    Ok(done.rows_affected())
}

pub async fn delete_endpoint(tx: &mut sqlx::Transaction<'_, Any>, id: Uuid) -> Result<(), sqlx::Error> {
    // Children first: the schema cascades, but SQLite only when foreign keys are enforced.
    sqlx::query(
        "DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE endpoint_id = $1)",
    )
    .bind(id.to_string())
    .execute(&mut **tx)
    .await?;
    sqlx::query("DELETE FROM webhook_deliveries WHERE endpoint_id = $1")
        .bind(id.to_string())
        .execute(&mut **tx)
        .await?;
    sqlx::query("DELETE FROM webhook_endpoints WHERE id = $1").bind(id.to_string()).execute(&mut **tx).await?;
    Ok(())
}

/// The sealed secret and owner of an endpoint.
pub async fn sealed_secret(state: &AppState, id: Uuid) -> Result<Option<(Uuid, String)>, sqlx::Error> {
    let row = sqlx::query("SELECT account_id, secret FROM webhook_endpoints WHERE id = $1")
        .bind(id.to_string())
        .fetch_optional(&state.db.pool)
        .await?;
    row.map(|r| Ok((r.uuid("account_id")?, r.try_get("secret")?))).transpose()
}

fn delivery_from_row(r: &AnyRow) -> Result<WebhookDelivery, sqlx::Error> {
    let payload: String = r.try_get("payload")?;
    Ok(WebhookDelivery {
        id: r.uuid("id")?,
        endpoint_id: r.uuid("endpoint_id")?,
        event_id: r.try_get("event_id")?,
        event_type: r.try_get("event_type")?,
        status: r.try_get("status")?,
        attempt_count: r.try_get("attempts")?,
        next_attempt_at: r.try_get::<Option<i64>, _>("next_attempt_at")?.map(from_micros),
        payload: serde_json::from_str(&payload).unwrap_or_default(),
        attempts: Vec::new(),
        inserted_at: from_micros(r.try_get("created_at")?),
        updated_at: from_micros(r.try_get("updated_at")?),
    })
}

/// Columns of a delivery's attempts, beside the delivery's own in one statement (one snapshot).
const ATTEMPT_COLUMNS: &str = "a.attempt AS a_attempt, a.attempt_trigger AS a_trigger, a.at AS a_at, \
     a.response_status AS a_status, a.response_body AS a_body, a.error AS a_error, a.latency_ms AS a_latency";

/// A page of an endpoint's deliveries, newest first, with their attempts; one more row than
/// `limit` is read to tell whether more follow.
pub async fn deliveries(
    state: &AppState,
    endpoint_id: Uuid,
    before: Option<Uuid>,
    status: Option<DeliveryStatus>,
    limit: i64,
) -> Result<Vec<WebhookDelivery>, sqlx::Error> {
    // Ids are time-ordered (v7), so their text order is their age.
    let sql = format!(
        "SELECT d.*, {ATTEMPT_COLUMNS} FROM (SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries \
         WHERE endpoint_id = $1 AND ($2 = '' OR id < $2) AND ($3 = '' OR status = $3) ORDER BY id DESC LIMIT $4) d \
         LEFT JOIN webhook_attempts a ON a.delivery_id = d.id ORDER BY d.id DESC, a.at, a.attempt"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(endpoint_id.to_string())
        .bind(before.map(|b| b.to_string()).unwrap_or_default())
        .bind(status.map(|s| s.as_str()).unwrap_or_default())
        .bind(limit + 1)
        .fetch_all(&state.db.pool)
        .await?;
    with_attempts(&rows)
}

pub async fn delivery(state: &AppState, endpoint_id: Uuid, id: Uuid) -> Result<Option<WebhookDelivery>, sqlx::Error> {
    let sql = format!(
        "SELECT d.*, {ATTEMPT_COLUMNS} FROM (SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries \
         WHERE endpoint_id = $1 AND id = $2) d LEFT JOIN webhook_attempts a ON a.delivery_id = d.id \
         ORDER BY a.at, a.attempt"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(endpoint_id.to_string())
        .bind(id.to_string())
        .fetch_all(&state.db.pool)
        .await?;
    Ok(with_attempts(&rows)?.pop())
}

/// Folds delivery rows joined with their attempts (one row per attempt, ordered by delivery).
fn with_attempts(rows: &[AnyRow]) -> Result<Vec<WebhookDelivery>, sqlx::Error> {
    let mut list: Vec<WebhookDelivery> = Vec::new();
    for r in rows {
        let id = r.uuid("id")?;
        if list.last().is_none_or(|d| d.id != id) {
            list.push(delivery_from_row(r)?);
        }
        let Some(attempt) = r.try_get::<Option<i64>, _>("a_attempt")? else { continue };
        let error: Option<String> = r.try_get("a_error")?;
        let (code, message) = match error.as_deref().and_then(|e| e.split_once(": ")) {
            Some((c, m)) => (Some(c.to_owned()), Some(m.to_owned())),
            None => (error, None),
        };
        if let Some(d) = list.last_mut() {
            d.attempts.push(WebhookAttempt {
                attempt,
                trigger: r.try_get("a_trigger")?,
                at: from_micros(r.try_get("a_at")?),
                response_status: r.try_get("a_status")?,
                response_body: r.try_get("a_body")?,
                error: code,
                error_message: message,
                latency_ms: r.try_get("a_latency")?,
            });
        }
    }
    Ok(list)
}
