//! The `acs` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use acs_core::config::{self, Loaded};
use acs_core::db::Db;
use acs_core::{secrets, server};
use clap::{Parser, Subcommand};

/// acs, the Agent Computer Service: runs AI coding agents in isolated
/// sandboxes behind an HTTP/JSON API.
#[derive(Parser)]
#[command(name = "acs", version, propagate_version = true)]
pub struct Cli {
    /// Configuration file (TOML). Without it, `config/default.toml` is read when
    /// present; `ACS_*` environment variables override both (nested keys with `__`,
    /// e.g. ACS_DATABASE__URL).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Start the server (migrates the database first; SQLite file is created on first start).
    Serve,
    /// Apply database migrations and exit.
    Migrate,
    /// Print the effective configuration, secrets masked.
    Config,
    /// Manage encryption keys.
    #[command(subcommand)]
    Keys(KeysCommand),
}

#[derive(Subcommand)]
pub enum KeysCommand {
    /// Start using a new master key and re-wrap every account's data key with it.
    /// With a key file, a new key is generated and put first (old keys stay so
    /// running servers keep reading); with `secrets.master_keys`, put the new key
    /// first in the configuration, then run this. Servers need no restart.
    RotateMaster,
}

fn config_file(explicit: Option<PathBuf>) -> Option<PathBuf> {
    explicit.or_else(|| {
        let default = PathBuf::from("config/default.toml");
        default.exists().then_some(default)
    })
}

fn init_logging(loaded: &Loaded) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("RUST_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&loaded.config.log.level));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_target(false);
    if loaded.config.log.json { builder.json().init() } else { builder.init() }
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let loaded = match config::load(config_file(cli.config).as_deref()) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("acs: {e}");
            return ExitCode::from(2);
        }
    };
    if let Command::Config = cli.command {
        print!("{}", loaded.render_masked());
        return ExitCode::SUCCESS;
    }
    init_logging(&loaded);
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("acs: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = rt.block_on(async move {
        match cli.command {
            Command::Serve => serve(loaded).await,
            Command::Migrate => migrate(loaded).await,
            Command::Keys(KeysCommand::RotateMaster) => rotate_master(loaded).await,
            Command::Config => unreachable!("handled above"),
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("acs: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(loaded: Loaded) -> anyhow::Result<()> {
    let listen = loaded.config.listen.clone();
    let listener =
        tokio::net::TcpListener::bind(&listen).await.map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
    let running = server::start(loaded, listener).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    server::cancel_on_signal(running.state.shutdown.clone());
    tracing::info!(addr = %running.addr, "acs is ready: http://{}/docs", running.addr);
    running.wait().await.map_err(|e| anyhow::anyhow!("{e}"))
}

async fn migrate(loaded: Loaded) -> anyhow::Result<()> {
    let db = Db::connect(&loaded.config.database).await?;
    db.migrate().await?;
    println!("migrations applied");
    Ok(())
}

async fn rotate_master(loaded: Loaded) -> anyhow::Result<()> {
    let mut keyring = secrets::load_keyring(&loaded.config.secrets)?;
    if keyring.file().is_some() {
        let id = keyring.rotate_file()?;
        println!("new master key {id} is now current");
    }
    let db = Db::connect(&loaded.config.database).await?;
    db.migrate().await?;
    let crypto = secrets::Crypto::new(keyring);
    let n = crypto.rewrap_all(&db).await?;
    println!("re-wrapped {n} account data key(s)");
    Ok(())
}
