//! The durable delivery queue: rows of `webhook_deliveries`, written with the
//! event they carry, claimed under a lease, and settled only by the claim
//! that still holds them.

use std::collections::HashMap;

use serde_json::{Value, json};
use sqlx::{Any, Row};
use uuid::Uuid;

use acs_platform::audit::{self, Actor};
use acs_platform::db::{Backend, RowExt};
use acs_platform::events::Event;
use acs_platform::state::AppState;
use acs_platform::time_fmt::{from_micros, now_micros};

use super::rules;

/// `created_at` of a payload: UTC with microseconds.
const MICROS: &[time::format_description::BorrowedFormatItem<'static>] =
    time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z");

fn created_at(ts: time::OffsetDateTime) -> String {
    ts.to_offset(time::UtcOffset::UTC).format(MICROS).unwrap_or_default()
}

/// Queues one delivery per matching active endpoint for each sendable stage event, in the
/// transaction that writes the events. Returns whether any was queued.
pub(crate) async fn enqueue(tx: &mut sqlx::Transaction<'_, Any>, events: &[Event]) -> Result<bool, sqlx::Error> {
    let sendable: Vec<(&Event, String)> = events
        .iter()
        .filter(|e| e.kind == "stage" && e.conversation_id.is_some())
        .filter_map(|e| Some((e, rules::event_type(e.stage.as_deref()?, e.state.as_deref()?)?)))
        .collect();
    let Some((first, _)) = sendable.first() else { return Ok(false) };
    let rows = sqlx::query("SELECT id, event_types FROM webhook_endpoints WHERE account_id = $1 AND status = 'active'")
        .bind(first.account_id.to_string())
        .fetch_all(&mut **tx)
        .await?;
    if rows.is_empty() {
        return Ok(false);
    }
    let mut endpoints = Vec::with_capacity(rows.len());
    for r in &rows {
        let types: String = r.try_get("event_types")?;
        endpoints.push((r.uuid("id")?, serde_json::from_str::<Vec<String>>(&types).unwrap_or_default()));
    }
    let mut conversations: HashMap<Uuid, Option<Value>> = HashMap::new();
    let now = now_micros();
    let mut queued = false;
    for (event, event_type) in &sendable {
        let targets: Vec<Uuid> =
            endpoints.iter().filter(|(_, f)| rules::matches(f, event_type)).map(|(id, _)| *id).collect();
        if targets.is_empty() {
            continue;
        }
        let conversation_id = event.conversation_id.unwrap_or_default();
        let facts = match conversations.get(&conversation_id) {
            Some(facts) => facts.clone(),
            None => {
                let facts = conversation_facts(&mut **tx, conversation_id).await?;
                conversations.insert(conversation_id, facts.clone());
                facts
            }
        };
        let awaiting = facts.is_none();
        let payload = payload(event, event_type, &facts.unwrap_or_else(|| json!({"labels": {}})));
        for endpoint_id in targets {
            let id = &event.id.to_string();
            insert(&mut **tx, endpoint_id, event.account_id, id, event_type, &payload, "automatic", awaiting, now)
                .await?;
            queued = true;
        }
    }
    Ok(queued)
}

/// What a payload says of the conversation: its agent, status and labels; None before its row exists.
async fn conversation_facts(
    ex: impl sqlx::Executor<'_, Database = Any>,
    id: Uuid,
) -> Result<Option<Value>, sqlx::Error> {
    let row = sqlx::query("SELECT agent_id, status, labels FROM conversations WHERE id = $1")
        .bind(id.to_string())
        .fetch_optional(ex)
        .await?;
    row.map(|r| {
        let labels: String = r.try_get("labels")?;
        Ok(json!({
            "agent_id": r.opt_uuid("agent_id")?,
            "status": r.try_get::<String, _>("status")?,
            "labels": serde_json::from_str::<Value>(&labels).unwrap_or_else(|_| json!({})),
        }))
    })
    .transpose()
}

/// The body of spec 6.1: no transcript, prompt, variable names or secrets.
fn payload(event: &Event, event_type: &str, conversation: &Value) -> String {
    json!({
        "id": event.id.to_string(),
        "type": event_type,
        "created_at": created_at(event.ts),
        "data": {
            "conversation_id": event.conversation_id,
            "agent_id": conversation["agent_id"],
            "parent_conversation_id": null,
            "status": conversation["status"],
            "labels": conversation["labels"],
            "stage": event.stage,
            "state": event.state,
            "turn_id": if event.stage.as_deref() == Some("turn") { json!(event.turn_id) } else { Value::Null },
            "duration_ms": event.duration_ms,
        },
    })
    .to_string()
}

#[allow(clippy::too_many_arguments)]
async fn insert(
    ex: impl sqlx::Executor<'_, Database = Any>,
    endpoint_id: Uuid,
    account_id: Uuid,
    event_id: &str,
    event_type: &str,
    payload: &str,
    trigger: &str,
    awaiting_facts: bool,
    now: i64,
) -> Result<Uuid, sqlx::Error> {
    let id = Uuid::now_v7();
    sqlx::query(
        "INSERT INTO webhook_deliveries (id, endpoint_id, account_id, event_id, event_type, payload, status, \
         attempts, next_attempt_at, attempt_trigger, awaiting_facts, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, 'pending', 0, $7, $8, $9, $7, $7)",
    )
    .bind(id.to_string())
    .bind(endpoint_id.to_string())
    .bind(account_id.to_string())
    .bind(event_id.to_owned())
    .bind(event_type.to_owned())
    .bind(payload.to_owned())
    .bind(now)
    .bind(trigger.to_owned())
    .bind(awaiting_facts as i32)
    .execute(ex)
    .await?;
    Ok(id)
}

/// Queues a `webhook.test` event for one endpoint, due now.
pub async fn enqueue_test(state: &AppState, account_id: Uuid, endpoint_id: Uuid) -> Result<Uuid, sqlx::Error> {
    let event_id = format!("test_{}", Uuid::new_v4());
    let now = now_micros();
    let body = json!({
        "id": event_id,
        "type": rules::TEST_TYPE,
        "created_at": created_at(from_micros(now)),
        "data": {"endpoint_id": endpoint_id},
    });
    let id = insert(
        &state.db.pool,
        endpoint_id,
        account_id,
        &event_id,
        rules::TEST_TYPE,
        &body.to_string(),
        "test",
        false,
        now,
    )
    .await?;
    super::wake(state);
    Ok(id)
}

/// Makes a settled delivery due once more, now, as a one-off `redeliver` attempt. False when
/// it still has attempts due or running.
pub async fn redeliver(state: &AppState, endpoint_id: Uuid, id: Uuid) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = $3, attempt_trigger = 'redeliver', \
         updated_at = $3 \
         WHERE id = $1 AND endpoint_id = $2 AND next_attempt_at IS NULL",
    )
    .bind(id.to_string())
    .bind(endpoint_id.to_string())
    .bind(now_micros())
    .execute(&state.db.pool)
    .await?;
    super::wake(state);
    Ok(done.rows_affected() == 1)
}

/// A claimed delivery, with what sending it needs.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: Uuid,
    pub claim: String,
    pub endpoint_id: Uuid,
    pub account_id: Uuid,
    pub url: String,
    pub sealed_secret: String,
    pub event_id: String,
    pub event_type: String,
    pub payload: String,
    /// The attempt about to be made (1-based).
    pub attempt: i64,
    pub trigger: String,
    pub awaiting_facts: bool,
    pub created_at: i64,
}

/// Claims up to `limit` due deliveries for `lease_micros`. On PostgreSQL rows another replica is
/// claiming are skipped, never waited on; SQLite's single writer makes the statement exclusive.
pub async fn claim(state: &AppState, limit: usize, lease_micros: i64) -> Result<Vec<Job>, sqlx::Error> {
    let now = now_micros();
    let token = Uuid::new_v4().to_string();
    let lock = if state.db.backend == Backend::Postgres { "FOR UPDATE OF d SKIP LOCKED" } else { "" };
    let sql = format!(
        "UPDATE webhook_deliveries SET lease_until = $1, claim = $2 WHERE id IN (\
         SELECT d.id FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id \
         WHERE d.next_attempt_at <= $3 AND (d.lease_until IS NULL OR d.lease_until < $3) \
         AND (e.status = 'active' OR d.attempt_trigger <> 'automatic') \
         ORDER BY d.next_attempt_at LIMIT $4 {lock})"
    );
    let claimed = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(now + lease_micros)
        .bind(token.clone())
        .bind(now)
        .bind(limit as i64)
        .execute(&state.db.pool)
        .await?;
    if claimed.rows_affected() == 0 {
        return Ok(Vec::new());
    }
    let rows = sqlx::query(
        "SELECT d.id, d.endpoint_id, d.account_id, d.event_id, d.event_type, d.payload, d.attempts, \
         d.attempt_trigger, d.awaiting_facts, d.created_at, e.url, e.secret FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id \
         WHERE d.claim = $1",
    )
    .bind(token.clone())
    .fetch_all(&state.db.pool)
    .await?;
    rows.iter()
        .map(|r| {
            Ok(Job {
                id: r.uuid("id")?,
                claim: token.clone(),
                endpoint_id: r.uuid("endpoint_id")?,
                account_id: r.uuid("account_id")?,
                url: r.try_get("url")?,
                sealed_secret: r.try_get("secret")?,
                event_id: r.try_get("event_id")?,
                event_type: r.try_get("event_type")?,
                payload: r.try_get("payload")?,
                attempt: r.try_get::<i64, _>("attempts")? + 1,
                trigger: r.try_get("attempt_trigger")?,
                awaiting_facts: r.flag("awaiting_facts")?,
                created_at: r.try_get("created_at")?,
            })
        })
        .collect()
}

/// How long a payload waits for its conversation's row before it goes out without its facts.
const FACTS_WAIT_MICROS: i64 = 30_000_000;

/// Whether a claimed job may be sent now.
#[derive(Debug, PartialEq, Eq)]
pub enum Ready {
    Send,
    /// Due again in a moment; no attempt was used.
    Postponed,
}

/// Fills in the conversation's facts of a payload written before the conversation's row. While
/// the row is missing the job is put back for a moment (the create stores it right after the
/// machine's first event); after `FACTS_WAIT_MICROS` it goes out as it is.
pub async fn complete_payload(state: &AppState, job: &mut Job) -> Result<Ready, sqlx::Error> {
    if !job.awaiting_facts {
        return Ok(Ready::Send);
    }
    let mut body: Value = serde_json::from_str(&job.payload).unwrap_or_default();
    let conversation_id = body["data"]["conversation_id"].as_str().and_then(|c| c.parse().ok()).unwrap_or_default();
    let now = now_micros();
    match conversation_facts(&state.db.pool, conversation_id).await? {
        None if now - job.created_at < FACTS_WAIT_MICROS => {
            sqlx::query(
                "UPDATE webhook_deliveries SET next_attempt_at = $3, lease_until = NULL, claim = NULL \
                 WHERE id = $1 AND claim = $2",
            )
            .bind(job.id.to_string())
            .bind(job.claim.clone())
            .bind(now + 200_000)
            .execute(&state.db.pool)
            .await?;
            return Ok(Ready::Postponed);
        }
        None => {}
        Some(facts) => {
            for key in ["agent_id", "status", "labels"] {
                body["data"][key] = facts[key].clone();
            }
            job.payload = body.to_string();
        }
    }
    sqlx::query("UPDATE webhook_deliveries SET payload = $3, awaiting_facts = 0 WHERE id = $1 AND claim = $2")
        .bind(job.id.to_string())
        .bind(job.claim.clone())
        .bind(job.payload.clone())
        .execute(&state.db.pool)
        .await?;
    job.awaiting_facts = false;
    Ok(Ready::Send)
}

/// Microseconds until a delivery may next be claimed (due, or its lease running out), if any is
/// queued for an endpoint that sends.
pub async fn next_due_in(state: &AppState) -> Result<Option<i64>, sqlx::Error> {
    let row = sqlx::query(
        "SELECT MIN(CASE WHEN d.lease_until > d.next_attempt_at THEN d.lease_until ELSE d.next_attempt_at END) AS due \
         FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id \
         WHERE d.next_attempt_at IS NOT NULL AND (e.status = 'active' OR d.attempt_trigger <> 'automatic')",
    )
    .fetch_one(&state.db.pool)
    .await?;
    Ok(row.try_get::<Option<i64>, _>("due")?.map(|due| due - now_micros()))
}

/// What one attempt came to, as the delivery log keeps it.
pub struct Settled<'a> {
    pub accepted: bool,
    pub status: Option<u16>,
    pub body: Option<&'a str>,
    /// `code: sentence`.
    pub error: Option<String>,
    pub latency_ms: i64,
}

/// What settling an attempt did to the endpoint.
#[derive(Debug, PartialEq, Eq)]
pub enum Effect {
    Nothing,
    /// The delivery gave up (all attempts failed).
    Exhausted,
    /// ...and that was the fifth in a row: this call disabled the endpoint.
    Disabled,
}

/// Records an attempt and moves the delivery on: done, due again after the schedule's delay, or
/// given up. The delivery changes only while `job.claim` still holds it (a worker whose lease ran
/// out must not overwrite its successor); the attempt itself is always logged.
pub async fn settle(state: &AppState, job: &Job, out: &Settled<'_>) -> Result<Effect, sqlx::Error> {
    let now = now_micros();
    let automatic = job.trigger == "automatic";
    let (status, next) = if out.accepted {
        ("succeeded", None)
    } else if automatic && job.attempt < rules::MAX_ATTEMPTS {
        let delay = rules::retry_delay(&crate::config::of(state).retry_schedule_seconds, job.attempt);
        ("pending", Some(now + (delay * 1_000_000.0) as i64))
    } else {
        ("failed", None)
    };
    let mut tx = state.db.begin().await?;
    sqlx::query(
        "INSERT INTO webhook_attempts (id, delivery_id, attempt, attempt_trigger, at, response_status, response_body, \
         error, latency_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(Uuid::now_v7().to_string())
    .bind(job.id.to_string())
    .bind(job.attempt)
    .bind(job.trigger.clone())
    .bind(now)
    .bind(out.status.map(i64::from))
    .bind(out.body.map(str::to_owned))
    .bind(out.error.clone())
    .bind(out.latency_ms)
    .execute(&mut *tx)
    .await?;
    let moved = sqlx::query(
        "UPDATE webhook_deliveries SET status = $3, attempts = $4, next_attempt_at = $5, lease_until = NULL, \
         claim = NULL, attempt_trigger = 'automatic', updated_at = $6 WHERE id = $1 AND claim = $2",
    )
    .bind(job.id.to_string())
    .bind(job.claim.clone())
    .bind(status)
    .bind(job.attempt)
    .bind(next)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    let mut effect = Effect::Nothing;
    if moved.rows_affected() == 1 {
        if out.accepted {
            sqlx::query(
                "UPDATE webhook_endpoints SET consecutive_failures = 0 WHERE id = $1 AND consecutive_failures <> 0",
            )
            .bind(job.endpoint_id.to_string())
            .execute(&mut *tx)
            .await?;
        } else if automatic && status == "failed" {
            effect = Effect::Exhausted;
            sqlx::query(
                "UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1, updated_at = $2 \
                 WHERE id = $1",
            )
            .bind(job.endpoint_id.to_string())
            .bind(now)
            .execute(&mut *tx)
            .await?;
            let disabled = sqlx::query(
                "UPDATE webhook_endpoints SET status = 'disabled', disabled_at = $2, disabled_reason = $3, \
                 updated_at = $2 WHERE id = $1 AND status = 'active' AND consecutive_failures >= $4",
            )
            .bind(job.endpoint_id.to_string())
            .bind(now)
            .bind(format!("{} events in a row exhausted their {} attempts", rules::DISABLE_AFTER, rules::MAX_ATTEMPTS))
            .bind(rules::DISABLE_AFTER)
            .execute(&mut *tx)
            .await?;
            if disabled.rows_affected() == 1 {
                let actor = Actor { account_id: job.account_id, kind: "service", id: None, ip: None };
                audit::record(
                    &mut *tx,
                    &actor,
                    "webhook_endpoint.disabled",
                    Some(("webhook_endpoint", job.endpoint_id)),
                )
                .await?;
                effect = Effect::Disabled;
            }
        }
    }
    tx.commit().await?;
    Ok(effect)
}

/// Deletes deliveries (and their attempts) older than the retention.
pub async fn clean_up(state: &AppState) -> Result<u64, sqlx::Error> {
    let cutoff = now_micros() - crate::config::of(state).retention_seconds as i64 * 1_000_000;
    let mut tx = state.db.begin().await?;
    sqlx::query(
        "DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE created_at < $1)",
    )
    .bind(cutoff)
    .execute(&mut *tx)
    .await?;
    let done =
        sqlx::query("DELETE FROM webhook_deliveries WHERE created_at < $1").bind(cutoff).execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(done.rows_affected())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_at_has_microseconds_in_utc() {
        let ts = from_micros(1_795_000_000_123_456);
        assert_eq!(created_at(ts), "2026-11-18T11:06:40.123456Z");
    }
}
