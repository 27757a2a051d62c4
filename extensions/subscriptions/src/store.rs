//! The tables: subscriptions (tokens sealed under an aad naming the row)
//! and link attempts (the device code sealed the same way).

use acs_platform::db::RowExt;
use acs_platform::state::AppState;
use acs_platform::time_fmt::{from_micros, now_micros};
use sqlx::any::AnyRow;
use sqlx::{Any, Executor, Row as _, Transaction};
use uuid::Uuid;

use crate::model::{GrantRef, LinkAttempt, LinkFailure, Subscription};
use crate::rules;

/// What seals a subscription's token of `kind` (`access`, `refresh`).
pub fn token_aad(id: Uuid, kind: &str) -> String {
    format!("openai_subscription {id} {kind}_token")
}

/// What seals an attempt's device code.
pub fn device_code_aad(id: Uuid) -> String {
    format!("openai_link_attempt {id} device_code")
}

/// A subscription as stored. Not `Debug`: it carries sealed tokens.
#[derive(Clone)]
pub struct SubRow {
    pub id: Uuid,
    pub account_id: Uuid,
    pub name: String,
    pub status: String,
    pub account_email: Option<String>,
    pub plan: Option<String>,
    pub sealed_access_token: Option<String>,
    pub sealed_refresh_token: Option<String>,
    pub expires_at: Option<i64>,
    pub revision: i64,
    pub exhausted_until: Option<i64>,
    pub last_used_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

const SUB_COLUMNS: &str = "id, account_id, name, status, account_email, plan, sealed_access_token, \
    sealed_refresh_token, expires_at, revision, exhausted_until, last_used_at, created_at, updated_at";

impl SubRow {
    fn from_row(r: &AnyRow) -> Result<SubRow, sqlx::Error> {
        Ok(SubRow {
            id: r.uuid("id")?,
            account_id: r.uuid("account_id")?,
            name: r.try_get("name")?,
            status: r.try_get("status")?,
            account_email: r.try_get("account_email")?,
            plan: r.try_get("plan")?,
            sealed_access_token: r.try_get("sealed_access_token")?,
            sealed_refresh_token: r.try_get("sealed_refresh_token")?,
            expires_at: r.try_get("expires_at")?,
            revision: r.try_get("revision")?,
            exhausted_until: r.try_get("exhausted_until")?,
            last_used_at: r.try_get("last_used_at")?,
            created_at: r.try_get("created_at")?,
            updated_at: r.try_get("updated_at")?,
        })
    }

    /// The status as of now: an `active` token past its expiry with no way
    /// to refresh it reads `expired`.
    pub fn status_now(&self, now: i64) -> &str {
        let ran_out = self.expires_at.is_some_and(|at| at <= now) && self.sealed_refresh_token.is_none();
        if self.status == "active" && ran_out { "expired" } else { &self.status }
    }

    pub fn view(&self) -> Subscription {
        let now = now_micros();
        Subscription {
            id: self.id,
            name: self.name.clone(),
            status: self.status_now(now).to_owned(),
            // Past its reset, a subscription is no longer spent.
            exhausted_until: self.exhausted_until.filter(|at| *at > now).map(from_micros),
            account_email: self.account_email.clone(),
            plan: self.plan.clone(),
            inserted_at: from_micros(self.created_at),
            updated_at: from_micros(self.updated_at),
            last_used_at: self.last_used_at.map(from_micros),
        }
    }

    /// A sealed token of this subscription, opened.
    pub async fn open(
        &self,
        state: &AppState,
        kind: &str,
        sealed: &str,
    ) -> Result<String, acs_platform::secrets::CryptoError> {
        state.crypto.decrypt(&state.db, self.account_id, &token_aad(self.id, kind), sealed).await
    }
}

pub async fn subscriptions(state: &AppState, account_id: Uuid) -> Result<Vec<SubRow>, sqlx::Error> {
    let sql = format!("SELECT {SUB_COLUMNS} FROM openai_subscriptions WHERE account_id = $1 ORDER BY created_at, id");
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(account_id.to_string()).fetch_all(&state.db.pool).await?;
    rows.iter().map(SubRow::from_row).collect()
}

pub async fn subscription<'e, E: Executor<'e, Database = Any>>(
    ex: E,
    account_id: Uuid,
    id: Uuid,
) -> Result<Option<SubRow>, sqlx::Error> {
    let sql = format!("SELECT {SUB_COLUMNS} FROM openai_subscriptions WHERE id = $1 AND account_id = $2");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(id.to_string())
        .bind(account_id.to_string())
        .fetch_optional(ex)
        .await?;
    row.as_ref().map(SubRow::from_row).transpose()
}

pub async fn count<'e, E: Executor<'e, Database = Any>>(ex: E, account_id: Uuid) -> Result<u64, sqlx::Error> {
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM openai_subscriptions WHERE account_id = $1")
        .bind(account_id.to_string())
        .fetch_one(ex)
        .await?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Another of the account's subscriptions holding vendor account `subject`.
pub async fn holding<'e, E: Executor<'e, Database = Any>>(
    ex: E,
    account_id: Uuid,
    subject: &str,
    except: Option<Uuid>,
) -> Result<Option<(Uuid, String)>, sqlx::Error> {
    let row = sqlx::query(
        "SELECT id, name FROM openai_subscriptions WHERE account_id = $1 AND vendor_account = $2 AND id <> $3 \
         ORDER BY created_at LIMIT 1",
    )
    .bind(account_id.to_string())
    .bind(subject)
    .bind(except.unwrap_or_default().to_string())
    .fetch_optional(ex)
    .await?;
    row.map(|r| Ok((r.uuid("id")?, r.try_get("name")?))).transpose()
}

pub async fn name_taken<'e, E: Executor<'e, Database = Any>>(
    ex: E,
    account_id: Uuid,
    name: &str,
) -> Result<bool, sqlx::Error> {
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM openai_subscriptions WHERE account_id = $1 AND name = $2")
        .bind(account_id.to_string())
        .bind(name)
        .fetch_one(ex)
        .await?;
    Ok(n > 0)
}

pub async fn rename(tx: &mut Transaction<'_, Any>, id: Uuid, name: &str) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE openai_subscriptions SET name = $1, updated_at = $2 WHERE id = $3")
        .bind(name)
        .bind(now_micros())
        .bind(id.to_string())
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Forgets the tokens, keeps the row; a sign-in begun before is now stale.
pub async fn disconnect(tx: &mut Transaction<'_, Any>, id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE openai_subscriptions SET status = 'disconnected', sealed_access_token = NULL, \
         sealed_refresh_token = NULL, expires_at = NULL, exhausted_until = NULL, refresh_lease_until = NULL, \
         revision = revision + 1, updated_at = $1 WHERE id = $2",
    )
    .bind(now_micros())
    .bind(id.to_string())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

pub async fn delete(tx: &mut Transaction<'_, Any>, id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM openai_subscriptions WHERE id = $1").bind(id.to_string()).execute(&mut **tx).await?;
    Ok(())
}

/// The names of the account's credential sets that name subscription `id` (core's table).
pub async fn naming_sets(state: &AppState, account_id: Uuid, id: Uuid) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT name FROM inference_credential_sets WHERE account_id = $1 AND openai_grant_id = $2 ORDER BY name",
    )
    .bind(account_id.to_string())
    .bind(id.to_string())
    .fetch_all(&state.db.pool)
    .await
}

/// Tokens to store, already sealed.
pub struct SealedTokens {
    pub access: String,
    /// `None` keeps the stored refresh token (a vendor that does not rotate).
    pub refresh: Option<String>,
    pub expires_at: Option<i64>,
}

/// A subscription a completed sign-in makes.
pub struct NewSub<'a> {
    pub id: Uuid,
    pub account_id: Uuid,
    pub name: &'a str,
    pub vendor_account: Option<&'a str>,
    pub account_email: Option<&'a str>,
    pub plan: Option<&'a str>,
}

pub async fn insert(tx: &mut Transaction<'_, Any>, s: &NewSub<'_>, t: &SealedTokens) -> Result<(), sqlx::Error> {
    let now = now_micros();
    sqlx::query(
        "INSERT INTO openai_subscriptions (id, account_id, name, status, vendor_account, account_email, plan, \
         sealed_access_token, sealed_refresh_token, expires_at, revision, created_at, updated_at) \
         VALUES ($1, $2, $3, 'active', $4, $5, $6, $7, $8, $9, 1, $10, $10)",
    )
    .bind(s.id.to_string())
    .bind(s.account_id.to_string())
    .bind(s.name)
    .bind(s.vendor_account)
    .bind(s.account_email)
    .bind(s.plan)
    .bind(&t.access)
    .bind(&t.refresh)
    .bind(t.expires_at)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// A reconnect: the new tokens replace the old in one write (the old stay
/// in use until then), and a sign-in begun before is now stale.
pub async fn reconnect(tx: &mut Transaction<'_, Any>, s: &NewSub<'_>, t: &SealedTokens) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE openai_subscriptions SET status = 'active', vendor_account = COALESCE($1, vendor_account), \
         account_email = COALESCE($2, account_email), plan = COALESCE($3, plan), sealed_access_token = $4, \
         sealed_refresh_token = $5, expires_at = $6, exhausted_until = NULL, usage_checked_at = NULL, \
         refresh_lease_until = NULL, revision = revision + 1, updated_at = $7 WHERE id = $8",
    )
    .bind(s.vendor_account)
    .bind(s.account_email)
    .bind(s.plan)
    .bind(&t.access)
    .bind(&t.refresh)
    .bind(t.expires_at)
    .bind(now_micros())
    .bind(s.id.to_string())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Claims subscription `id` for one refresh until `until`: true for the one
/// caller (on any replica) that gets it, so a rotating refresh token is never spent twice.
pub async fn claim_refresh(state: &AppState, id: Uuid, now: i64, until: i64) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE openai_subscriptions SET refresh_lease_until = $1 WHERE id = $2 AND status = 'active' \
         AND (refresh_lease_until IS NULL OR refresh_lease_until < $3)",
    )
    .bind(until)
    .bind(id.to_string())
    .bind(now)
    .execute(&state.db.pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Ends a claim; `retry_at` keeps it until then (a failure to retry later).
pub async fn release_refresh(state: &AppState, id: Uuid, retry_at: Option<i64>) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE openai_subscriptions SET refresh_lease_until = $1 WHERE id = $2")
        .bind(retry_at)
        .bind(id.to_string())
        .execute(&state.db.pool)
        .await?;
    Ok(())
}

/// Stores refreshed tokens and ends the claim (only while still active:
/// a disconnect meanwhile wins).
pub async fn refreshed(state: &AppState, id: Uuid, revision: i64, t: &SealedTokens) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE openai_subscriptions SET sealed_access_token = $1, \
         sealed_refresh_token = COALESCE($2, sealed_refresh_token), expires_at = $3, refresh_lease_until = NULL, \
         updated_at = $4 WHERE id = $5 AND status = 'active' AND revision = $6",
    )
    .bind(&t.access)
    .bind(&t.refresh)
    .bind(t.expires_at)
    .bind(now_micros())
    .bind(id.to_string())
    .bind(revision)
    .execute(&state.db.pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The vendor refused the grant: `revoked`, tokens forgotten.
pub async fn revoke(state: &AppState, id: Uuid, revision: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE openai_subscriptions SET status = 'revoked', sealed_access_token = NULL, sealed_refresh_token = NULL, \
         refresh_lease_until = NULL, updated_at = $1 WHERE id = $2 AND revision = $3",
    )
    .bind(now_micros())
    .bind(id.to_string())
    .bind(revision)
    .execute(&state.db.pool)
    .await?;
    Ok(())
}

/// Claims the usage check of subscription `id` (at most one per `since`):
/// true for the caller that should ask the vendor now.
pub async fn claim_usage_check(state: &AppState, id: Uuid, now: i64, since: i64) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE openai_subscriptions SET usage_checked_at = $1 WHERE id = $2 \
         AND (usage_checked_at IS NULL OR usage_checked_at <= $3)",
    )
    .bind(now)
    .bind(id.to_string())
    .bind(since)
    .execute(&state.db.pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

pub async fn set_exhausted(state: &AppState, id: Uuid, until: Option<i64>) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE openai_subscriptions SET exhausted_until = $1 WHERE id = $2")
        .bind(until)
        .bind(id.to_string())
        .execute(&state.db.pool)
        .await?;
    Ok(())
}

pub async fn touch(state: &AppState, id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE openai_subscriptions SET last_used_at = $1 WHERE id = $2")
        .bind(now_micros())
        .bind(id.to_string())
        .execute(&state.db.pool)
        .await?;
    Ok(())
}

/// Active subscriptions with a refresh token unused (and unrefreshed) since `before`.
pub async fn idle(state: &AppState, before: i64) -> Result<Vec<(Uuid, Uuid)>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT id, account_id FROM openai_subscriptions WHERE status = 'active' AND sealed_refresh_token IS NOT NULL \
         AND COALESCE(last_used_at, 0) < $1 AND updated_at < $1 ORDER BY updated_at LIMIT 100",
    )
    .bind(before)
    .fetch_all(&state.db.pool)
    .await?;
    rows.iter().map(|r| Ok((r.uuid("id")?, r.uuid("account_id")?))).collect()
}

/// Whether an operator suspended the account.
pub async fn suspended<'e, E: Executor<'e, Database = Any>>(ex: E, account_id: Uuid) -> Result<bool, sqlx::Error> {
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM account_suspensions WHERE account_id = $1")
        .bind(account_id.to_string())
        .fetch_one(ex)
        .await?;
    Ok(n > 0)
}

/// A link attempt as stored. Not `Debug`: the sealed device code.
#[derive(Clone)]
pub struct AttemptRow {
    pub id: Uuid,
    pub account_id: Uuid,
    pub kind: String,
    pub name: Option<String>,
    pub grant_id: Option<Uuid>,
    pub grant_revision: Option<i64>,
    pub state: String,
    pub sealed_device_code: Option<String>,
    pub user_code: Option<String>,
    pub verification_url: Option<String>,
    pub poll_interval: i64,
    pub auth_unreachable: bool,
    pub expires_at: i64,
    pub next_poll_at: i64,
    pub result_grant_id: Option<Uuid>,
    pub failure_reason: Option<String>,
    pub failure_grant_id: Option<Uuid>,
    pub failure_grant_name: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

const ATTEMPT_COLUMNS: &str = "a.id, a.account_id, a.kind, a.name, a.grant_id, a.grant_revision, a.state, \
    a.sealed_device_code, a.user_code, a.verification_url, a.poll_interval, a.auth_unreachable, a.expires_at, \
    a.next_poll_at, a.result_grant_id, a.failure_reason, a.failure_grant_id, s.name AS failure_grant_name, \
    a.created_at, a.updated_at";
const ATTEMPT_FROM: &str = "openai_link_attempts a LEFT JOIN openai_subscriptions s ON s.id = a.failure_grant_id";

impl AttemptRow {
    fn from_row(r: &AnyRow) -> Result<AttemptRow, sqlx::Error> {
        Ok(AttemptRow {
            id: r.uuid("id")?,
            account_id: r.uuid("account_id")?,
            kind: r.try_get("kind")?,
            name: r.try_get("name")?,
            grant_id: r.opt_uuid("grant_id")?,
            grant_revision: r.try_get("grant_revision")?,
            state: r.try_get("state")?,
            sealed_device_code: r.try_get("sealed_device_code")?,
            user_code: r.try_get("user_code")?,
            verification_url: r.try_get("verification_url")?,
            poll_interval: r.try_get("poll_interval")?,
            auth_unreachable: r.flag("auth_unreachable")?,
            expires_at: r.try_get("expires_at")?,
            next_poll_at: r.try_get("next_poll_at")?,
            result_grant_id: r.opt_uuid("result_grant_id")?,
            failure_reason: r.try_get("failure_reason")?,
            failure_grant_id: r.opt_uuid("failure_grant_id")?,
            failure_grant_name: r.try_get("failure_grant_name")?,
            created_at: r.try_get("created_at")?,
            updated_at: r.try_get("updated_at")?,
        })
    }

    pub fn request(&self) -> rules::Request {
        match (self.kind.as_str(), self.grant_id) {
            ("reconnect", Some(grant_id)) => rules::Request::Reconnect { grant_id },
            _ => rules::Request::Link { name: self.name.clone().unwrap_or_default() },
        }
    }

    pub fn view(&self) -> LinkAttempt {
        let state = rules::state_now(&self.state, self.expires_at, now_micros()).to_owned();
        let pending = state == "pending";
        LinkAttempt {
            id: self.id,
            kind: self.kind.clone(),
            name: self.name.clone(),
            grant_id: self.grant_id,
            user_code: if pending { self.user_code.clone() } else { None },
            verification_url: self.verification_url.clone(),
            poll_interval: u64::try_from(self.poll_interval).unwrap_or(5),
            auth_unreachable: pending && self.auth_unreachable,
            expires_at: from_micros(self.expires_at),
            result_grant_id: self.result_grant_id,
            failure: self.failure_reason.clone().map(|reason| LinkFailure {
                grant: match (&reason[..], self.failure_grant_id, &self.failure_grant_name) {
                    ("account_already_linked", Some(id), Some(name)) => Some(GrantRef { id, name: name.clone() }),
                    _ => None,
                },
                reason,
                grant_id: self.failure_grant_id,
            }),
            state,
            inserted_at: from_micros(self.created_at),
            updated_at: from_micros(self.updated_at),
        }
    }
}

pub async fn insert_attempt(tx: &mut Transaction<'_, Any>, a: &AttemptRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO openai_link_attempts (id, account_id, kind, name, grant_id, grant_revision, state, \
         sealed_device_code, user_code, verification_url, poll_interval, auth_unreachable, expires_at, next_poll_at, \
         created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8, $9, $10, 0, $11, $12, $13, $13)",
    )
    .bind(a.id.to_string())
    .bind(a.account_id.to_string())
    .bind(&a.kind)
    .bind(&a.name)
    .bind(a.grant_id.map(|g| g.to_string()))
    .bind(a.grant_revision)
    .bind(&a.sealed_device_code)
    .bind(&a.user_code)
    .bind(&a.verification_url)
    .bind(a.poll_interval)
    .bind(a.expires_at)
    .bind(a.next_poll_at)
    .bind(a.created_at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

pub async fn attempt<'e, E: Executor<'e, Database = Any>>(
    ex: E,
    account_id: Uuid,
    id: Uuid,
) -> Result<Option<AttemptRow>, sqlx::Error> {
    let sql = format!("SELECT {ATTEMPT_COLUMNS} FROM {ATTEMPT_FROM} WHERE a.id = $1 AND a.account_id = $2");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(id.to_string())
        .bind(account_id.to_string())
        .fetch_optional(ex)
        .await?;
    row.as_ref().map(AttemptRow::from_row).transpose()
}

async fn attempt_any(state: &AppState, id: Uuid) -> Result<Option<AttemptRow>, sqlx::Error> {
    let sql = format!("SELECT {ATTEMPT_COLUMNS} FROM {ATTEMPT_FROM} WHERE a.id = $1");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id.to_string()).fetch_optional(&state.db.pool).await?;
    row.as_ref().map(AttemptRow::from_row).transpose()
}

/// The account's open attempts, oldest first.
pub async fn open_attempts<'e, E: Executor<'e, Database = Any>>(
    ex: E,
    account_id: Uuid,
    now: i64,
) -> Result<Vec<AttemptRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {ATTEMPT_COLUMNS} FROM {ATTEMPT_FROM} WHERE a.account_id = $1 AND a.state = 'pending' \
         AND a.expires_at > $2 ORDER BY a.created_at, a.id"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(account_id.to_string()).bind(now).fetch_all(ex).await?;
    rows.iter().map(AttemptRow::from_row).collect()
}

/// When the account's attempts of the last hour started (every state counts).
pub async fn starts_since<'e, E: Executor<'e, Database = Any>>(
    ex: E,
    account_id: Uuid,
    since: i64,
) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar("SELECT created_at FROM openai_link_attempts WHERE account_id = $1 AND created_at > $2")
        .bind(account_id.to_string())
        .bind(since)
        .fetch_all(ex)
        .await
}

/// Moves a pending attempt to an end state, once: false when it is no
/// longer pending (cancelled, expired or finished by someone else).
pub struct End<'a> {
    pub state: &'a str,
    pub failure_reason: Option<&'a str>,
    pub failure_grant_id: Option<Uuid>,
    pub result_grant_id: Option<Uuid>,
}

pub async fn end_attempt<'e, E: Executor<'e, Database = Any>>(
    ex: E,
    id: Uuid,
    end: &End<'_>,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE openai_link_attempts SET state = $1, failure_reason = $2, failure_grant_id = $3, \
         result_grant_id = $4, sealed_device_code = NULL, user_code = NULL, auth_unreachable = 0, lease_until = NULL, \
         updated_at = $5 WHERE id = $6 AND state = 'pending'",
    )
    .bind(end.state)
    .bind(end.failure_reason)
    .bind(end.failure_grant_id.map(|g| g.to_string()))
    .bind(end.result_grant_id.map(|g| g.to_string()))
    .bind(now_micros())
    .bind(id.to_string())
    .execute(ex)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Cancels a pending, unexpired attempt; false otherwise.
pub async fn cancel(state: &AppState, id: Uuid, now: i64) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE openai_link_attempts SET state = 'cancelled', sealed_device_code = NULL, user_code = NULL, \
         auth_unreachable = 0, lease_until = NULL, updated_at = $1 WHERE id = $2 AND state = 'pending' AND expires_at > $1",
    )
    .bind(now)
    .bind(id.to_string())
    .execute(&state.db.pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Writes `expired` on pending attempts past their time.
pub async fn expire_due(state: &AppState, now: i64) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE openai_link_attempts SET state = 'expired', sealed_device_code = NULL, user_code = NULL, \
         auth_unreachable = 0, lease_until = NULL, updated_at = $1 WHERE state = 'pending' AND expires_at <= $1",
    )
    .bind(now)
    .execute(&state.db.pool)
    .await?;
    Ok(done.rows_affected())
}

/// Fails every open new-link attempt (`linking_disabled`): linking was turned off.
pub async fn disable_links(state: &AppState, now: i64) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE openai_link_attempts SET state = 'failed', failure_reason = 'linking_disabled', \
         sealed_device_code = NULL, user_code = NULL, auth_unreachable = 0, lease_until = NULL, updated_at = $1 \
         WHERE state = 'pending' AND kind = 'link'",
    )
    .bind(now)
    .execute(&state.db.pool)
    .await?;
    Ok(done.rows_affected())
}

/// Removes attempts that ended before `before` (they no longer count
/// towards any limit, and nobody polls them).
pub async fn prune(state: &AppState, before: i64) -> Result<u64, sqlx::Error> {
    let done = sqlx::query("DELETE FROM openai_link_attempts WHERE state <> 'pending' AND updated_at < $1")
        .bind(before)
        .execute(&state.db.pool)
        .await?;
    Ok(done.rows_affected())
}

/// Pending attempts due a poll that no poller holds.
pub async fn due(state: &AppState, now: i64, limit: i64) -> Result<Vec<Uuid>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT id FROM openai_link_attempts WHERE state = 'pending' AND next_poll_at <= $1 AND expires_at > $1 \
         AND (lease_until IS NULL OR lease_until < $1) ORDER BY next_poll_at LIMIT $2",
    )
    .bind(now)
    .bind(limit)
    .fetch_all(&state.db.pool)
    .await?;
    rows.iter().map(|r| r.uuid("id")).collect()
}

/// Claims attempt `id` for one poll until `until`: true for the one poller
/// (on any replica) that gets it. Returns the row read after the claim.
pub async fn claim(state: &AppState, id: Uuid, now: i64, until: i64) -> Result<Option<AttemptRow>, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE openai_link_attempts SET lease_until = $1 WHERE id = $2 AND state = 'pending' \
         AND (lease_until IS NULL OR lease_until < $3)",
    )
    .bind(until)
    .bind(id.to_string())
    .bind(now)
    .execute(&state.db.pool)
    .await?;
    if done.rows_affected() != 1 {
        return Ok(None);
    }
    attempt_any(state, id).await
}

/// After a poll that leaves the attempt pending: the next poll's time, the
/// interval (slow_down raises it) and whether the vendor answered.
pub async fn wait(state: &AppState, id: Uuid, interval: u64, unreachable: bool) -> Result<(), sqlx::Error> {
    let now = now_micros();
    let interval = i64::try_from(interval).unwrap_or(60);
    sqlx::query(
        "UPDATE openai_link_attempts SET next_poll_at = $1, poll_interval = $2, auth_unreachable = $3, \
         lease_until = NULL, updated_at = CASE WHEN auth_unreachable <> $3 OR poll_interval <> $2 THEN $4 ELSE updated_at END \
         WHERE id = $5 AND state = 'pending'",
    )
    .bind(now + interval * 1_000_000)
    .bind(interval)
    .bind(i64::from(unreachable))
    .bind(now)
    .bind(id.to_string())
    .execute(&state.db.pool)
    .await?;
    Ok(())
}

/// Removes an account's rows (account deletion).
pub async fn delete_account(state: &AppState, account_id: Uuid) -> Result<(), sqlx::Error> {
    let mut tx = state.db.begin().await?;
    for table in ["openai_link_attempts", "openai_subscriptions"] {
        let sql = format!("DELETE FROM {table} WHERE account_id = $1");
        sqlx::query(sqlx::AssertSqlSafe(sql)).bind(account_id.to_string()).execute(&mut *tx).await?;
    }
    tx.commit().await
}

/// Turns an attempt this transaction just ended as `completed` into a failure
/// (what the completion found forbids storing the sign-in).
pub async fn refail(tx: &mut Transaction<'_, Any>, id: Uuid, end: &End<'_>) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE openai_link_attempts SET state = $1, failure_reason = $2, failure_grant_id = $3, \
         result_grant_id = NULL WHERE id = $4",
    )
    .bind(end.state)
    .bind(end.failure_reason)
    .bind(end.failure_grant_id.map(|g| g.to_string()))
    .bind(id.to_string())
    .execute(&mut **tx)
    .await?;
    Ok(())
}
