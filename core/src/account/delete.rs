//! Account deletion (DESIGN 9.3): everything of the account goes, machines
//! included. [`delete_account`] is a plain rule function, so other flows
//! (an unclaimed principal going with its owner) delete the same way.

use std::time::Duration;

use sqlx::Row;
use uuid::Uuid;

use crate::boxed::BoxError;
use crate::mail::Mail;
use crate::sandboxes::model::SandboxState;
use crate::state::AppState;
use crate::time_fmt::now_micros;

/// How long deletion waits for each of this server's running turns to stop writing.
const TURN_STOP_WAIT: Duration = Duration::from_secs(15);

/// A deletion still marked after this long was cut short (its server died); a worker finishes it.
pub const STALE_DELETION_MICROS: i64 = 10 * 60 * 1_000_000;

/// Tables holding an account's rows without a foreign key to `accounts` (append-only logs kept
/// free of one for write speed); every other table cascades from `accounts` or a parent row.
const UNLINKED_TABLES: [&str; 2] = ["events", "audit_events"];

/// `confirm` must be the account's own email address, character for character.
pub fn confirm_matches(email: &str, confirm: &str) -> bool {
    !email.is_empty() && email == confirm
}

/// Deletes an account and everything of it: sign-in and keys end first, then its turns and
/// conversations, its machines (destroyed on the host), the extensions' data
/// (`on_account_deleted`), every row, this server's caches; a confirmation mail goes to its
/// address. Safe to run again on a deletion cut short; a missing account is already done.
pub async fn delete_account(state: &AppState, account_id: Uuid) -> Result<(), BoxError> {
    let id = account_id.to_string();
    let Some(row) =
        sqlx::query("SELECT email FROM accounts WHERE id = $1").bind(id.clone()).fetch_optional(&state.db.pool).await?
    else {
        forget(state, account_id);
        return Ok(());
    };
    let email: Option<String> = row.try_get("email")?;
    // Principals it opened and nobody claimed are its own data: they go
    // first, each as a whole account. Claimed ones belong to their claimers.
    for principal in crate::claimable::owned_unclaimed(&state.db, account_id).await? {
        Box::pin(delete_account(state, principal)).await?;
    }
    close_doors(state, account_id).await?;
    crate::conversations::engine::end_all(state, account_id, TURN_STOP_WAIT).await?;
    destroy_machines(state, account_id).await?;
    crate::extension::account_deleted(state, account_id).await?;
    // A start that was already under way when the doors closed may have left a machine.
    destroy_machines(state, account_id).await?;
    let mut tx = state.db.begin().await?;
    for table in UNLINKED_TABLES {
        sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM {table} WHERE account_id = $1")))
            .bind(id.clone())
            .execute(&mut *tx)
            .await?;
    }
    sqlx::query("DELETE FROM accounts WHERE id = $1").bind(id.clone()).execute(&mut *tx).await?;
    tx.commit().await?;
    forget(state, account_id);
    straggler_sweep(state, account_id);
    tracing::info!(account = %account_id, "account deleted");
    if let Some(to) = email.filter(|e| !e.is_empty()) {
        state.mailer.send(Mail {
            to,
            subject: "Your acs account was deleted".into(),
            body: "Your acs account and everything in it (agents, environments, vaults, conversations, \
                   sandboxes, keys) were deleted at your request. Nothing of it can be restored.\n"
                .into(),
        });
    }
    Ok(())
}

/// Stops everything that could add to the account while it is taken apart: its keys and
/// browser sessions end, its password stops signing in, queued starts are cancelled and its
/// schedules stop. One transaction, so a deletion either began or did not.
async fn close_doors(state: &AppState, account_id: Uuid) -> Result<(), BoxError> {
    let id = account_id.to_string();
    let now = now_micros();
    let mut tx = state.db.begin().await?;
    // Not a hash: no password verifies against it.
    sqlx::query(
        "UPDATE accounts SET password_hash = '!deleted', deleting_at = COALESCE(deleting_at, $2), updated_at = $2 \
         WHERE id = $1",
    )
    .bind(id.clone())
    .bind(now)
    .execute(&mut *tx)
    .await?;
    for sql in [
        "DELETE FROM api_keys WHERE account_id = $1",
        "DELETE FROM browser_sessions WHERE account_id = $1",
        "UPDATE team_schedules SET enabled = 0, next_run_at = NULL WHERE account_id = $1",
    ] {
        sqlx::query(sql).bind(id.clone()).execute(&mut *tx).await?;
    }
    sqlx::query(
        "UPDATE sandbox_requests SET status = 'cancelled', ended_at = $2, updated_at = $2 \
         WHERE account_id = $1 AND status = 'queued'",
    )
    .bind(id)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    state.key_cache.remove_where(|k| k.account_id == account_id);
    Ok(())
}

/// Destroys every machine of the account: live ones are reclaimed (stopped, disk and
/// checkpoints removed, callback keys revoked); ended ones are destroyed again, which costs
/// nothing when nothing is left.
async fn destroy_machines(state: &AppState, account_id: Uuid) -> Result<(), BoxError> {
    let rows = sqlx::query("SELECT id, status, provider FROM sandboxes WHERE account_id = $1")
        .bind(account_id.to_string())
        .fetch_all(&state.db.pool)
        .await?;
    if rows.is_empty() {
        return Ok(());
    }
    let svc = crate::sandboxes::service::service(state).map_err(|e| format!("sandboxes: {e:?}"))?;
    for row in rows {
        let id: Uuid = row.try_get::<String, _>("id")?.parse()?;
        let status: String = row.try_get("status")?;
        if status != SandboxState::Terminated.as_str() {
            crate::sandboxes::service::reclaim(state, id).await.map_err(|e| format!("sandbox {id}: {e:?}"))?;
        }
        let provider: String = row.try_get("provider")?;
        if svc.offers(&provider) {
            svc.named(&provider).destroy(id).await;
        }
    }
    Ok(())
}

/// Drops what this server keeps of the account in memory.
fn forget(state: &AppState, account_id: Uuid) {
    state.key_cache.remove_where(|k| k.account_id == account_id);
    state.account_cache.remove(&account_id);
    state.crypto.forget(account_id);
}

/// A turn another replica ran may write its closing event a moment after the rows went (this
/// server waited for its own): the log is swept again shortly.
fn straggler_sweep(state: &AppState, account_id: Uuid) {
    let st = state.clone();
    tokio::spawn(async move {
        for wait in [Duration::from_secs(2), Duration::from_secs(20)] {
            tokio::select! {
                _ = st.shutdown.cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
            }
            let gone = sqlx::query("SELECT id FROM accounts WHERE id = $1")
                .bind(account_id.to_string())
                .fetch_optional(&st.db.pool)
                .await
                .is_ok_and(|r| r.is_none());
            if gone
                && let Err(e) = sqlx::query("DELETE FROM events WHERE account_id = $1")
                    .bind(account_id.to_string())
                    .execute(&st.db.pool)
                    .await
            {
                tracing::error!(account = %account_id, error = %e, "sweeping a deleted account's late events");
            }
        }
    });
}

/// Finishes deletions cut short (marked, still there after [`STALE_DELETION_MICROS`]). The
/// mark is moved forward first, so one replica takes each.
pub async fn finish_stale(state: &AppState) -> Result<(), BoxError> {
    let now = now_micros();
    let rows = sqlx::query("SELECT id, deleting_at FROM accounts WHERE deleting_at < $1 LIMIT 10")
        .bind(now - STALE_DELETION_MICROS)
        .fetch_all(&state.db.pool)
        .await?;
    for row in rows {
        let id: String = row.try_get("id")?;
        let marked: i64 = row.try_get("deleting_at")?;
        let taken = sqlx::query("UPDATE accounts SET deleting_at = $1 WHERE id = $2 AND deleting_at = $3")
            .bind(now)
            .bind(id.clone())
            .bind(marked)
            .execute(&state.db.pool)
            .await?;
        if taken.rows_affected() == 1 {
            let account_id: Uuid = id.parse()?;
            if let Err(e) = delete_account(state, account_id).await {
                tracing::error!(account = %account_id, "finishing an account deletion: {e}");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confirm_is_the_email_exactly() {
        assert!(confirm_matches("a@example.com", "a@example.com"));
        assert!(!confirm_matches("a@example.com", "A@example.com"));
        assert!(!confirm_matches("a@example.com", " a@example.com"));
        assert!(!confirm_matches("a@example.com", ""));
        // An account without an address (a claimable principal) cannot be confirmed by one.
        assert!(!confirm_matches("", ""));
    }
}
