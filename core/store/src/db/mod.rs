//! Storage: one pool over SQLite or PostgreSQL through sqlx's `Any` driver.
//!
//! Every query is written once, with `$1`-style placeholders that both
//! databases accept; the backends differ only in how they connect and in
//! their migration files (`migrations/sqlite`, `migrations/postgres`).
//! Portable column types: ids are TEXT (UUID), times are BIGINT
//! microseconds, booleans are INTEGER 0/1 (the `Any` driver cannot read a
//! SQLite BOOLEAN), JSON is TEXT.

use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::migrate::Migrator;
use sqlx::{AnyPool, Executor, Row};
use uuid::Uuid;

use crate::config::DatabaseConfig;

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("../../migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("../../migrations/postgres");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

#[derive(Clone, Debug)]
pub struct Db {
    pub pool: AnyPool,
    pub backend: Backend,
}

impl Db {
    /// Connects; a SQLite file is created when missing.
    pub async fn connect(cfg: &DatabaseConfig) -> Result<Db, sqlx::Error> {
        sqlx::any::install_default_drivers();
        let backend = if cfg.url.starts_with("sqlite:") { Backend::Sqlite } else { Backend::Postgres };
        let url = match backend {
            Backend::Sqlite if !cfg.url.contains("mode=") => {
                let sep = if cfg.url.contains('?') { '&' } else { '?' };
                format!("{}{sep}mode=rwc", cfg.url)
            }
            _ => cfg.url.clone(),
        };
        let pool = AnyPoolOptions::new()
            .max_connections(cfg.max_connections.max(1))
            .acquire_timeout(Duration::from_secs(5))
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if backend == Backend::Sqlite {
                        // WAL lets readers run beside the one writer; the busy
                        // timeout makes writers wait instead of failing.
                        conn.execute(
                            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                             PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;",
                        )
                        .await?;
                    }
                    Ok(())
                })
            })
            .connect(&url)
            .await?;
        Ok(Db { pool, backend })
    }

    /// Applies core's migrations, then each extension's, in that order.
    /// Each extension keeps its history in a table of its own
    /// (`_sqlx_migrations_<name>`), so versions never clash across crates
    /// and an extension's files can be numbered from 1. Core ignores
    /// versions it once applied and no longer has: migration 5 moved to the
    /// webhooks extension (docs/extensions.md).
    pub async fn migrate(&self, extensions: &[(&str, &Migrator)]) -> Result<(), sqlx::migrate::MigrateError> {
        let core = match self.backend {
            Backend::Sqlite => &SQLITE_MIGRATIONS,
            Backend::Postgres => &POSTGRES_MIGRATIONS,
        };
        self.adopt_rewritten(core).await?;
        let mut core = Migrator::with_migrations(core.iter().cloned().collect());
        core.set_ignore_missing(true);
        core.run(&self.pool).await?;
        for (name, migrator) in extensions {
            let mut own = Migrator::with_migrations(migrator.iter().cloned().collect());
            own.dangerous_set_table_name(format!("_sqlx_migrations_{name}"));
            own.run(&self.pool).await?;
        }
        Ok(())
    }

    /// Core migrations rewritten after release, each with the checksum of its
    /// old text per dialect. Migration 1 lost the support extension's table
    /// (now the extension's own migration). A database that ran the old text
    /// gets the new checksum recorded, so history validates; any other
    /// checksum is left for sqlx to refuse.
    const REWRITTEN: &[(i64, Backend, &str)] = &[
        (
            1,
            Backend::Sqlite,
            "023ae3a659b5353edefc367c9bd0badd838fd936c42374d29e95f22f0d68fc0e873be7035fa9cec895a5ed2a49fc8024",
        ),
        (
            1,
            Backend::Postgres,
            "d0cfd1ea9b3ccafb81735759ac1f97bf1270e1fd2681f215a9e17d50bd12a64d144e3347588ee7524a25eded7437504b",
        ),
    ];

    async fn adopt_rewritten(&self, core: &Migrator) -> Result<(), sqlx::migrate::MigrateError> {
        let exists = match self.backend {
            Backend::Sqlite => "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
            Backend::Postgres => {
                "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = '_sqlx_migrations' AND table_schema = current_schema()"
            }
        };
        let count: i64 = sqlx::query_scalar(exists).fetch_one(&self.pool).await?;
        if count == 0 {
            return Ok(());
        }
        for (version, _, old) in Self::REWRITTEN.iter().filter(|(_, backend, _)| *backend == self.backend) {
            let Some(now) = core.iter().find(|m| m.version == *version) else { continue };
            let old = hex::decode(old).expect("a checksum in hex");
            sqlx::query("UPDATE _sqlx_migrations SET checksum = $1 WHERE version = $2 AND checksum = $3")
                .bind(now.checksum.to_vec())
                .bind(*version)
                .bind(old)
                .execute(&self.pool)
                .await?;
        }
        Ok(())
    }

    /// Starts a transaction. On SQLite it takes the write lock at once
    /// (`BEGIN IMMEDIATE`, waiting out the busy timeout): a deferred
    /// transaction that reads and then writes fails outright when another
    /// connection commits in between (`SQLITE_BUSY_SNAPSHOT`), which the
    /// busy timeout does not cover. Every transaction here writes.
    pub async fn begin(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error> {
        match self.backend {
            Backend::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await,
            Backend::Postgres => self.pool.begin().await,
        }
    }

    /// Readiness: the database answers and its schema is readable (a bare
    /// `SELECT 1` would pass on a SQLite file that no longer holds a database).
    pub async fn ping(&self) -> bool {
        let probe = sqlx::query("SELECT version FROM _sqlx_migrations ORDER BY version DESC LIMIT 1")
            .fetch_optional(&self.pool);
        tokio::time::timeout(Duration::from_secs(2), probe).await.map(|r| matches!(r, Ok(Some(_)))).unwrap_or(false)
    }
}

/// True when the error is a unique-constraint violation on either backend.
pub fn is_unique_violation(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(d) => {
            d.is_unique_violation() || d.code().is_some_and(|c| c == "23505" || c == "2067" || c == "1555")
        }
        _ => false,
    }
}

/// Typed readers for the portable column encodings.
pub trait RowExt {
    fn uuid(&self, col: &str) -> Result<Uuid, sqlx::Error>;
    fn opt_uuid(&self, col: &str) -> Result<Option<Uuid>, sqlx::Error>;
    fn flag(&self, col: &str) -> Result<bool, sqlx::Error>;
    fn json(&self, col: &str) -> Result<Option<serde_json::Value>, sqlx::Error>;
}

fn decode_err(col: &str, e: impl std::error::Error + Send + Sync + 'static) -> sqlx::Error {
    sqlx::Error::ColumnDecode { index: col.to_owned(), source: Box::new(e) }
}

impl RowExt for AnyRow {
    fn uuid(&self, col: &str) -> Result<Uuid, sqlx::Error> {
        let s: String = self.try_get(col)?;
        Uuid::from_str(&s).map_err(|e| decode_err(col, e))
    }

    fn opt_uuid(&self, col: &str) -> Result<Option<Uuid>, sqlx::Error> {
        let s: Option<String> = self.try_get(col)?;
        s.map(|s| Uuid::from_str(&s).map_err(|e| decode_err(col, e))).transpose()
    }

    fn flag(&self, col: &str) -> Result<bool, sqlx::Error> {
        Ok(self.try_get::<i64, _>(col)? != 0)
    }

    fn json(&self, col: &str) -> Result<Option<serde_json::Value>, sqlx::Error> {
        let s: Option<String> = self.try_get(col)?;
        s.map(|s| serde_json::from_str(&s).map_err(|e| decode_err(col, e))).transpose()
    }
}
