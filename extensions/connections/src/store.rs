//! The tables: providers, connections and sign-ins under way. Sealed values
//! (client secrets, tokens, PKCE verifiers) are opened only where used.

use acs_platform::db::RowExt;
use acs_platform::state::AppState;
use acs_platform::time_fmt::{from_micros, now_micros};
use sqlx::any::AnyRow;
use sqlx::{Any, Row as _, Transaction};
use uuid::Uuid;

use crate::model::{Connection, ConnectionProvider};

/// A provider as stored. Not `Debug`: it carries the sealed client secret.
#[derive(Clone)]
pub struct ProviderRow {
    pub id: Uuid,
    pub account_id: Uuid,
    pub slug: String,
    pub name: String,
    pub issuer: Option<String>,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
    pub revocation_endpoint: Option<String>,
    pub token_auth_method: String,
    pub client_id: String,
    pub sealed_client_secret: String,
    pub scopes: Vec<String>,
    pub hosts: Vec<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

const PROVIDER_COLUMNS: &str = "id, account_id, slug, name, issuer, authorization_endpoint, token_endpoint, \
    revocation_endpoint, token_auth_method, client_id, sealed_client_secret, scopes, hosts, created_at, updated_at";

fn json_list(r: &AnyRow, col: &str) -> Result<Vec<String>, sqlx::Error> {
    let text: String = r.try_get(col)?;
    serde_json::from_str(&text).map_err(|e| sqlx::Error::ColumnDecode { index: col.to_owned(), source: Box::new(e) })
}

fn list_json(items: &[String]) -> String {
    serde_json::Value::from(items.to_vec()).to_string()
}

/// What seals a provider's client secret: the row it belongs to.
pub fn secret_aad(id: Uuid) -> String {
    format!("connection_provider {id} client_secret")
}

/// What seals a connection's token of `kind` (`access`, `refresh`).
pub fn token_aad(id: Uuid, kind: &str) -> String {
    format!("connection {id} {kind}_token")
}

/// What seals a sign-in's PKCE verifier.
pub fn verifier_aad(id: Uuid) -> String {
    format!("connection_attempt {id} verifier")
}

impl ProviderRow {
    fn from_row(r: &AnyRow) -> Result<ProviderRow, sqlx::Error> {
        Ok(ProviderRow {
            id: r.uuid("id")?,
            account_id: r.uuid("account_id")?,
            slug: r.try_get("slug")?,
            name: r.try_get("name")?,
            issuer: r.try_get("issuer")?,
            authorization_endpoint: r.try_get("authorization_endpoint")?,
            token_endpoint: r.try_get("token_endpoint")?,
            revocation_endpoint: r.try_get("revocation_endpoint")?,
            token_auth_method: r.try_get("token_auth_method")?,
            client_id: r.try_get("client_id")?,
            sealed_client_secret: r.try_get("sealed_client_secret")?,
            scopes: json_list(r, "scopes")?,
            hosts: json_list(r, "hosts")?,
            created_at: r.try_get("created_at")?,
            updated_at: r.try_get("updated_at")?,
        })
    }

    pub fn view(&self) -> ConnectionProvider {
        ConnectionProvider {
            id: self.id,
            slug: self.slug.clone(),
            name: self.name.clone(),
            issuer: self.issuer.clone(),
            authorization_endpoint: self.authorization_endpoint.clone(),
            token_endpoint: self.token_endpoint.clone(),
            revocation_endpoint: self.revocation_endpoint.clone(),
            token_endpoint_auth_method: self.token_auth_method.clone(),
            client_id: self.client_id.clone(),
            scopes: self.scopes.clone(),
            hosts: self.hosts.clone(),
            inserted_at: from_micros(self.created_at),
            updated_at: from_micros(self.updated_at),
        }
    }

    /// The client secret, opened.
    pub async fn client_secret(&self, state: &AppState) -> Result<String, acs_platform::secrets::CryptoError> {
        state.crypto.decrypt(&state.db, self.account_id, &secret_aad(self.id), &self.sealed_client_secret).await
    }
}

pub async fn providers(state: &AppState, account_id: Uuid) -> Result<Vec<ProviderRow>, sqlx::Error> {
    let sql = format!("SELECT {PROVIDER_COLUMNS} FROM connection_providers WHERE account_id = $1 ORDER BY slug");
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(account_id.to_string()).fetch_all(&state.db.pool).await?;
    rows.iter().map(ProviderRow::from_row).collect()
}

pub async fn provider(state: &AppState, account_id: Uuid, id: Uuid) -> Result<Option<ProviderRow>, sqlx::Error> {
    let sql = format!("SELECT {PROVIDER_COLUMNS} FROM connection_providers WHERE id = $1 AND account_id = $2");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(id.to_string())
        .bind(account_id.to_string())
        .fetch_optional(&state.db.pool)
        .await?;
    row.as_ref().map(ProviderRow::from_row).transpose()
}

pub async fn provider_by_slug(
    state: &AppState,
    account_id: Uuid,
    slug: &str,
) -> Result<Option<ProviderRow>, sqlx::Error> {
    let sql = format!("SELECT {PROVIDER_COLUMNS} FROM connection_providers WHERE account_id = $1 AND slug = $2");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(account_id.to_string())
        .bind(slug)
        .fetch_optional(&state.db.pool)
        .await?;
    row.as_ref().map(ProviderRow::from_row).transpose()
}

async fn provider_any(state: &AppState, id: Uuid) -> Result<Option<ProviderRow>, sqlx::Error> {
    let sql = format!("SELECT {PROVIDER_COLUMNS} FROM connection_providers WHERE id = $1");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id.to_string()).fetch_optional(&state.db.pool).await?;
    row.as_ref().map(ProviderRow::from_row).transpose()
}

pub async fn insert_provider(tx: &mut Transaction<'_, Any>, p: &ProviderRow) -> Result<(), sqlx::Error> {
    let sql = format!(
        "INSERT INTO connection_providers ({PROVIDER_COLUMNS}) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(p.id.to_string())
        .bind(p.account_id.to_string())
        .bind(&p.slug)
        .bind(&p.name)
        .bind(&p.issuer)
        .bind(&p.authorization_endpoint)
        .bind(&p.token_endpoint)
        .bind(&p.revocation_endpoint)
        .bind(&p.token_auth_method)
        .bind(&p.client_id)
        .bind(&p.sealed_client_secret)
        .bind(list_json(&p.scopes))
        .bind(list_json(&p.hosts))
        .bind(p.created_at)
        .bind(p.updated_at)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

pub async fn update_provider(tx: &mut Transaction<'_, Any>, p: &ProviderRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE connection_providers SET slug = $1, name = $2, issuer = $3, authorization_endpoint = $4, \
         token_endpoint = $5, revocation_endpoint = $6, token_auth_method = $7, client_id = $8, \
         sealed_client_secret = $9, scopes = $10, hosts = $11, updated_at = $12 WHERE id = $13",
    )
    .bind(&p.slug)
    .bind(&p.name)
    .bind(&p.issuer)
    .bind(&p.authorization_endpoint)
    .bind(&p.token_endpoint)
    .bind(&p.revocation_endpoint)
    .bind(&p.token_auth_method)
    .bind(&p.client_id)
    .bind(&p.sealed_client_secret)
    .bind(list_json(&p.scopes))
    .bind(list_json(&p.hosts))
    .bind(p.updated_at)
    .bind(p.id.to_string())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Removes a provider with its connections and sign-ins under way.
pub async fn delete_provider(tx: &mut Transaction<'_, Any>, id: Uuid) -> Result<(), sqlx::Error> {
    for table in ["connection_attempts", "connections"] {
        let sql = format!("DELETE FROM {table} WHERE provider_id = $1");
        sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id.to_string()).execute(&mut **tx).await?;
    }
    sqlx::query("DELETE FROM connection_providers WHERE id = $1").bind(id.to_string()).execute(&mut **tx).await?;
    Ok(())
}

/// A connection as stored, with its provider's slug. Not `Debug`: sealed tokens.
#[derive(Clone)]
pub struct ConnectionRow {
    pub id: Uuid,
    pub account_id: Uuid,
    pub provider_id: Uuid,
    pub provider_slug: String,
    pub status: String,
    pub scopes: Vec<String>,
    pub sealed_access_token: Option<String>,
    pub sealed_refresh_token: Option<String>,
    pub expires_at: Option<i64>,
    pub last_refreshed_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

const CONNECTION_COLUMNS: &str = "c.id, c.account_id, c.provider_id, p.slug AS provider_slug, c.status, c.scopes, \
    c.sealed_access_token, c.sealed_refresh_token, c.expires_at, c.last_refreshed_at, c.created_at, c.updated_at";
const CONNECTION_FROM: &str = "connections c JOIN connection_providers p ON p.id = c.provider_id";

impl ConnectionRow {
    fn from_row(r: &AnyRow) -> Result<ConnectionRow, sqlx::Error> {
        Ok(ConnectionRow {
            id: r.uuid("id")?,
            account_id: r.uuid("account_id")?,
            provider_id: r.uuid("provider_id")?,
            provider_slug: r.try_get("provider_slug")?,
            status: r.try_get("status")?,
            scopes: json_list(r, "scopes")?,
            sealed_access_token: r.try_get("sealed_access_token")?,
            sealed_refresh_token: r.try_get("sealed_refresh_token")?,
            expires_at: r.try_get("expires_at")?,
            last_refreshed_at: r.try_get("last_refreshed_at")?,
            created_at: r.try_get("created_at")?,
            updated_at: r.try_get("updated_at")?,
        })
    }

    /// The status as of now: an `active` token past its expiry with no way
    /// to refresh it reads `expired` before the worker writes so.
    pub fn status_now(&self, now: i64) -> &str {
        let ran_out = self.expires_at.is_some_and(|at| at <= now) && self.sealed_refresh_token.is_none();
        if self.status == "active" && ran_out { "expired" } else { &self.status }
    }

    pub fn view(&self) -> Connection {
        Connection {
            id: self.id,
            provider: self.provider_slug.clone(),
            status: self.status_now(now_micros()).to_owned(),
            scopes: self.scopes.clone(),
            expires_at: self.expires_at.map(from_micros),
            inserted_at: from_micros(self.created_at),
            updated_at: from_micros(self.updated_at),
            last_refreshed_at: self.last_refreshed_at.map(from_micros),
        }
    }

    pub async fn provider(&self, state: &AppState) -> Result<Option<ProviderRow>, sqlx::Error> {
        provider_any(state, self.provider_id).await
    }

    /// A sealed token of this connection, opened.
    pub async fn open(
        &self,
        state: &AppState,
        kind: &str,
        sealed: &str,
    ) -> Result<String, acs_platform::secrets::CryptoError> {
        state.crypto.decrypt(&state.db, self.account_id, &token_aad(self.id, kind), sealed).await
    }
}

pub async fn connections(state: &AppState, account_id: Uuid) -> Result<Vec<ConnectionRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {CONNECTION_COLUMNS} FROM {CONNECTION_FROM} WHERE c.account_id = $1 ORDER BY c.created_at DESC, c.id DESC"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(account_id.to_string()).fetch_all(&state.db.pool).await?;
    rows.iter().map(ConnectionRow::from_row).collect()
}

pub async fn connection(state: &AppState, account_id: Uuid, id: Uuid) -> Result<Option<ConnectionRow>, sqlx::Error> {
    let sql = format!("SELECT {CONNECTION_COLUMNS} FROM {CONNECTION_FROM} WHERE c.id = $1 AND c.account_id = $2");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(id.to_string())
        .bind(account_id.to_string())
        .fetch_optional(&state.db.pool)
        .await?;
    row.as_ref().map(ConnectionRow::from_row).transpose()
}

pub async fn connection_of_provider(
    state: &AppState,
    account_id: Uuid,
    provider_id: Uuid,
) -> Result<Option<ConnectionRow>, sqlx::Error> {
    let sql =
        format!("SELECT {CONNECTION_COLUMNS} FROM {CONNECTION_FROM} WHERE c.account_id = $1 AND c.provider_id = $2");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(account_id.to_string())
        .bind(provider_id.to_string())
        .fetch_optional(&state.db.pool)
        .await?;
    row.as_ref().map(ConnectionRow::from_row).transpose()
}

pub async fn connection_any(state: &AppState, id: Uuid) -> Result<Option<ConnectionRow>, sqlx::Error> {
    let sql = format!("SELECT {CONNECTION_COLUMNS} FROM {CONNECTION_FROM} WHERE c.id = $1");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id.to_string()).fetch_optional(&state.db.pool).await?;
    row.as_ref().map(ConnectionRow::from_row).transpose()
}

/// Active connections with a refresh token whose access token expires
/// before `before` and that no worker holds: what the refresher looks at next.
pub async fn due(state: &AppState, before: i64, now: i64) -> Result<Vec<Uuid>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT id FROM connections WHERE status = 'active' AND sealed_refresh_token IS NOT NULL \
         AND expires_at IS NOT NULL AND expires_at <= $1 \
         AND (lease_until IS NULL OR lease_until < $2) ORDER BY expires_at LIMIT 20",
    )
    .bind(before)
    .bind(now)
    .fetch_all(&state.db.pool)
    .await?;
    rows.iter().map(|r| r.uuid("id")).collect()
}

/// Claims connection `id` for one refresh until `until`: true for the one
/// caller (on any replica) that gets it.
pub async fn claim(state: &AppState, id: Uuid, now: i64, until: i64) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE connections SET lease_until = $1 WHERE id = $2 AND status = 'active' \
         AND (lease_until IS NULL OR lease_until < $3)",
    )
    .bind(until)
    .bind(id.to_string())
    .bind(now)
    .execute(&state.db.pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Lets go of a claim that had nothing to do (someone refreshed first).
pub async fn unlease(state: &AppState, id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE connections SET lease_until = NULL WHERE id = $1")
        .bind(id.to_string())
        .execute(&state.db.pool)
        .await?;
    Ok(())
}

/// Lets go of a claim without a new token (a failure to retry later: the
/// lease stays until `retry_at`, so the next pass waits that long).
pub async fn release(state: &AppState, id: Uuid, retry_at: i64, error: &str) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE connections SET lease_until = $1, refresh_error = $2 WHERE id = $3")
        .bind(retry_at)
        .bind(error)
        .bind(id.to_string())
        .execute(&state.db.pool)
        .await?;
    Ok(())
}

/// Tokens to store, already sealed.
pub struct SealedTokens {
    pub access: String,
    /// `None` keeps the stored refresh token (a provider that does not rotate).
    pub refresh: Option<String>,
    pub expires_at: Option<i64>,
    pub scopes: Vec<String>,
}

/// Stores refreshed tokens and ends the claim.
pub async fn refreshed(state: &AppState, id: Uuid, t: &SealedTokens) -> Result<(), sqlx::Error> {
    let now = now_micros();
    sqlx::query(
        "UPDATE connections SET sealed_access_token = $1, sealed_refresh_token = COALESCE($2, sealed_refresh_token), \
         expires_at = $3, scopes = $4, last_refreshed_at = $5, updated_at = $5, lease_until = NULL, \
         refresh_error = NULL WHERE id = $6 AND status = 'active'",
    )
    .bind(&t.access)
    .bind(&t.refresh)
    .bind(t.expires_at)
    .bind(list_json(&t.scopes))
    .bind(now)
    .bind(id.to_string())
    .execute(&state.db.pool)
    .await?;
    Ok(())
}

/// Ends a connection for good (`revoked` or `expired`): its tokens are
/// forgotten, the row stays for the owner to see.
pub async fn end(state: &AppState, id: Uuid, status: &str, error: &str) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE connections SET status = $1, sealed_access_token = NULL, sealed_refresh_token = NULL, \
         lease_until = NULL, refresh_error = $2, updated_at = $3 WHERE id = $4",
    )
    .bind(status)
    .bind(error)
    .bind(now_micros())
    .bind(id.to_string())
    .execute(&state.db.pool)
    .await?;
    Ok(())
}

/// Active connections past expiry with no refresh token: marked `expired`.
pub async fn expire_unrefreshable(state: &AppState, now: i64) -> Result<u64, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE connections SET status = 'expired', sealed_access_token = NULL, updated_at = $1 \
         WHERE status = 'active' AND sealed_refresh_token IS NULL AND expires_at IS NOT NULL AND expires_at <= $1",
    )
    .bind(now)
    .execute(&state.db.pool)
    .await?;
    Ok(done.rows_affected())
}

/// Writes the connection made by a sign-in: a new row, or the account's
/// existing connection to that provider renewed in place (so secret
/// bindings naming it keep working after a reconnect; the caller seals the
/// tokens under that row's id).
pub async fn upsert_connection(
    tx: &mut Transaction<'_, Any>,
    id: Uuid,
    account_id: Uuid,
    provider_id: Uuid,
    t: &SealedTokens,
) -> Result<(), sqlx::Error> {
    let now = now_micros();
    sqlx::query(
        "INSERT INTO connections (id, account_id, provider_id, status, scopes, sealed_access_token, \
         sealed_refresh_token, expires_at, created_at, updated_at) VALUES ($1, $2, $3, 'active', $4, $5, $6, $7, $8, $8) \
         ON CONFLICT (account_id, provider_id) DO UPDATE SET status = 'active', scopes = excluded.scopes, \
         sealed_access_token = excluded.sealed_access_token, sealed_refresh_token = excluded.sealed_refresh_token, \
         expires_at = excluded.expires_at, lease_until = NULL, refresh_error = NULL, updated_at = excluded.updated_at",
    )
    .bind(id.to_string())
    .bind(account_id.to_string())
    .bind(provider_id.to_string())
    .bind(list_json(&t.scopes))
    .bind(&t.access)
    .bind(&t.refresh)
    .bind(t.expires_at)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

pub async fn delete_connection(tx: &mut Transaction<'_, Any>, id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM connections WHERE id = $1").bind(id.to_string()).execute(&mut **tx).await?;
    Ok(())
}

/// A sign-in under way, as stored.
pub struct AttemptRow {
    pub id: Uuid,
    pub provider_id: Uuid,
    pub sealed_verifier: String,
    pub redirect_uri: String,
}

/// A sign-in to remember until the provider answers.
pub struct NewAttempt<'a> {
    pub id: Uuid,
    /// SHA-256 of the `state` sent to the provider (the state itself is not kept).
    pub state_hash: &'a str,
    pub account_id: Uuid,
    pub provider_id: Uuid,
    pub sealed_verifier: &'a str,
    pub redirect_uri: &'a str,
    pub expires_at: i64,
}

pub async fn insert_attempt(state: &AppState, a: &NewAttempt<'_>) -> Result<(), sqlx::Error> {
    let now = now_micros();
    let mut tx = state.db.begin().await?;
    // Spent and expired sign-ins go whenever one starts (no sweeper needed).
    sqlx::query("DELETE FROM connection_attempts WHERE expires_at <= $1").bind(now).execute(&mut *tx).await?;
    sqlx::query(
        "INSERT INTO connection_attempts (state_hash, id, account_id, provider_id, sealed_verifier, redirect_uri, \
         expires_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(a.state_hash)
    .bind(a.id.to_string())
    .bind(a.account_id.to_string())
    .bind(a.provider_id.to_string())
    .bind(a.sealed_verifier)
    .bind(a.redirect_uri)
    .bind(a.expires_at)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

/// Takes the live sign-in `state_hash` names for this account and provider:
/// it works once (the row is deleted by whoever reads it first).
pub async fn take_attempt(
    state: &AppState,
    state_hash: &str,
    account_id: Uuid,
    provider_id: Uuid,
) -> Result<Option<AttemptRow>, sqlx::Error> {
    let mut tx = state.db.begin().await?;
    let row = sqlx::query(
        "SELECT id, provider_id, sealed_verifier, redirect_uri, expires_at FROM connection_attempts \
         WHERE state_hash = $1 AND account_id = $2",
    )
    .bind(state_hash)
    .bind(account_id.to_string())
    .fetch_optional(&mut *tx)
    .await?;
    let Some(row) = row else { return Ok(None) };
    let deleted =
        sqlx::query("DELETE FROM connection_attempts WHERE state_hash = $1").bind(state_hash).execute(&mut *tx).await?;
    tx.commit().await?;
    let expires_at: i64 = row.try_get("expires_at")?;
    let attempt = AttemptRow {
        id: row.uuid("id")?,
        provider_id: row.uuid("provider_id")?,
        sealed_verifier: row.try_get("sealed_verifier")?,
        redirect_uri: row.try_get("redirect_uri")?,
    };
    let live = deleted.rows_affected() == 1 && expires_at > now_micros() && attempt.provider_id == provider_id;
    Ok(live.then_some(attempt))
}

/// Removes an account's rows (account deletion).
pub async fn delete_account(state: &AppState, account_id: Uuid) -> Result<(), sqlx::Error> {
    let mut tx = state.db.begin().await?;
    for table in ["connection_attempts", "connections", "connection_providers"] {
        let sql = format!("DELETE FROM {table} WHERE account_id = $1");
        sqlx::query(sqlx::AssertSqlSafe(sql)).bind(account_id.to_string()).execute(&mut *tx).await?;
    }
    tx.commit().await
}
