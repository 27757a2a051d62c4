//! The `acs` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::client;
use acs_core::config::Loaded;
use acs_core::db::Db;
use acs_core::extension;
use acs_core::{credits, secrets, server};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

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
    /// Operator tools for account credits (they work on the configured database).
    #[command(subcommand)]
    Credits(CreditsCommand),
    /// The named agent runtimes (npm packages under `runtimes.dir`; docs/runtimes.md).
    #[command(subcommand)]
    Runtimes(RuntimesCommand),
    /// Operator tools for the machines on this host (they read the configured database).
    #[command(subcommand)]
    Sandboxes(SandboxesCommand),
    /// The egress broker on a host of its own, and its CA (docs/broker.md)
    ///
    /// Without a subcommand it serves: listens on `broker.listen` for the CONNECTs the servers'
    /// machines pass on (servers set `broker.url` to it). It needs the servers' database and
    /// master key.
    Broker {
        #[command(subcommand)]
        command: Option<BrokerCommand>,
    },
    /// Operator tools for OAuth clients (they work on the configured database).
    #[command(name = "oauth-clients", subcommand)]
    OauthClients(OauthClientsCommand),
    /// Sign in to a server and save a new key in ~/.config/acs/credentials.toml (mode 0600).
    Login {
        #[command(flatten)]
        target: client::Target,
        #[command(flatten)]
        args: client::LoginArgs,
    },
    /// Revoke the saved key on its server and forget it.
    Logout {
        #[command(flatten)]
        target: client::Target,
    },
    /// Show the account and key the client commands use.
    Whoami {
        #[command(flatten)]
        target: client::Target,
    },
    /// Ask an agent something and watch the turn as it happens
    ///
    /// A new conversation with the agent; the reply streams to stdout, stages and tool calls to
    /// stderr, permission requests are asked at the terminal. The exit status is the turn's
    /// outcome (0 done, 1 failed, 130 interrupted). Ctrl-C interrupts it.
    Run {
        #[command(flatten)]
        target: client::Target,
        #[command(flatten)]
        args: client::run::RunArgs,
    },
    /// Print a shell completion script
    ///
    /// For example: `acs completions bash > /etc/bash_completion.d/acs`,
    /// `acs completions zsh > "${fpath[1]}/_acs"`, or
    /// `acs completions fish > ~/.config/fish/completions/acs.fish`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Apply a manifest of environments, vaults, agents, teammates, schedules, webhooks
    ///
    /// YAML or JSON (docs/apply.md). One line per document: created, updated, unchanged or error;
    /// the exit status is 1 when any document failed.
    Apply {
        #[command(flatten)]
        target: client::Target,
        #[command(flatten)]
        args: client::apply::ApplyArgs,
    },
    /// Serve sandboxes on this computer for a server (docs/runners.md)
    ///
    /// Dials the server with the runner's token (`POST /api/runners` shows it once) and runs the
    /// machines of agents that choose this runner (`provider: runner`, `runner_id`) under --root,
    /// with the same supervisor and isolation as the server's own machines. Needs root and
    /// bubblewrap, as `acs serve` does. Stays connected, dialling again when the socket drops.
    Runner(crate::runner::RunnerArgs),
}

#[derive(Subcommand)]
pub enum SandboxesCommand {
    /// Every machine under `sandbox.dir`: whether it runs, its uid and disk, its database row
    /// and owner, and what `reap` would do with it.
    List,
    /// Stop machines whose server is gone for good (disk kept) and remove machines no
    /// database row names any more, freeing their network, cgroups and mounts.
    Reap {
        /// Show what would be done, change nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Subcommand)]
pub enum RuntimesCommand {
    /// Install the pinned version of each runtime named (default: all) with npm; one already
    /// at the pinned version is skipped.
    Install { runtimes: Vec<String> },
    /// Show each runtime's pinned package and installed version.
    List,
}

#[derive(Subcommand)]
pub enum CreditsCommand {
    /// Add credits to an account (a `grant` ledger row); a negative amount corrects a mistake.
    Grant {
        email: String,
        #[arg(allow_negative_numbers = true)]
        amount: i64,
    },
    /// Comp an account (it spends nothing and is never refused for credits), or end the comp.
    Comp {
        email: String,
        #[arg(value_parser = ["on", "off"])]
        state: String,
    },
}

#[derive(Subcommand)]
pub enum OauthClientsCommand {
    /// Publish a client: any account may then sign in with it, and only an operator changes
    /// or removes it (until then it signs in only the account that registered it).
    Publish { id: uuid::Uuid },
}

#[derive(Subcommand)]
pub enum BrokerCommand {
    /// Serve the broker (the default).
    Serve,
    /// Print the certificate of the CA machines started now trust (created when there is none).
    Ca,
    /// Make a new CA: machines started from now on trust it; running ones keep theirs until they stop.
    RotateCa,
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

/// The server logs to standard output; every other command to standard
/// error, so its own output (a key it mints, a listing) stays alone on
/// standard output, for scripts.
fn init_logging(loaded: &Loaded, to_stdout: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("RUST_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&loaded.config.log.level));
    let writer = tracing_subscriber::fmt::writer::BoxMakeWriter::new(if to_stdout {
        tracing_subscriber::fmt::writer::BoxMakeWriter::new(std::io::stdout)
    } else {
        tracing_subscriber::fmt::writer::BoxMakeWriter::new(std::io::stderr)
    });
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_target(false).with_writer(writer);
    if loaded.config.log.json { builder.json().init() } else { builder.init() }
}

pub fn main() -> ExitCode {
    // Core's commands, then those the compiled-in extensions add.
    let matches = extension::with_commands(Cli::command()).get_matches();
    // Completions need no configuration: they describe the commands of this build.
    if let Some(("completions", sub)) = matches.subcommand()
        && let Some(shell) = sub.get_one::<clap_complete::Shell>("shell")
    {
        clap_complete::generate(*shell, &mut extension::with_commands(Cli::command()), "acs", &mut std::io::stdout());
        return ExitCode::SUCCESS;
    }
    let loaded = match acs_core::extension::config::load(
        config_file(matches.get_one::<PathBuf>("config").cloned()).as_deref(),
    ) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("acs: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some((command, sub)) = extension::command_of(&matches) {
        init_logging(&loaded, false);
        return finish(
            runtime().and_then(|rt| rt.block_on((command.run)(&loaded, sub)).map_err(|e| anyhow::anyhow!("{e}"))),
        );
    }
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    // Commands that neither serve nor touch the database: the configuration,
    // runtimes, and the client commands, which talk to a server over its API.
    let command = match cli.command {
        Command::Config => {
            print!("{}", loaded.render_masked());
            return ExitCode::SUCCESS;
        }
        Command::Runtimes(c) => return runtimes(&loaded, c),
        Command::Login { target, args } => {
            return finish(runtime().and_then(|rt| rt.block_on(client::login(&target, args))));
        }
        Command::Logout { target } => return finish(runtime().and_then(|rt| rt.block_on(client::logout(&target)))),
        Command::Whoami { target } => return finish(runtime().and_then(|rt| rt.block_on(client::whoami(&target)))),
        Command::Run { target, args } => {
            return match runtime().and_then(|rt| rt.block_on(client::run::run(&target, args))) {
                Ok(outcome) => ExitCode::from(outcome.code()),
                Err(e) => finish(Err(e)),
            };
        }
        Command::Runner(args) => {
            init_logging(&loaded, false);
            return finish(runtime().and_then(|rt| rt.block_on(crate::runner::run(&loaded, args))));
        }
        Command::Apply { target, args } => {
            return match runtime().and_then(|rt| rt.block_on(client::apply::apply(&target, args))) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(1),
                Err(e) => finish(Err(e)),
            };
        }
        other => other,
    };
    let serving = matches!(command, Command::Serve | Command::Broker { command: None | Some(BrokerCommand::Serve) });
    init_logging(&loaded, serving);
    let result = runtime().and_then(|rt| {
        rt.block_on(async move {
            match command {
                Command::Serve => serve(loaded).await,
                Command::Migrate => migrate(loaded).await,
                Command::Keys(KeysCommand::RotateMaster) => rotate_master(loaded).await,
                Command::Credits(c) => credits(loaded, c).await,
                Command::OauthClients(c) => oauth_clients(loaded, c).await,
                Command::Sandboxes(c) => sandboxes(loaded, c).await,
                Command::Broker { command } => broker(loaded, command.unwrap_or(BrokerCommand::Serve)).await,
                Command::Config
                | Command::Runtimes(_)
                | Command::Login { .. }
                | Command::Logout { .. }
                | Command::Whoami { .. }
                | Command::Run { .. }
                | Command::Apply { .. }
                | Command::Runner(_)
                | Command::Completions { .. } => unreachable!("handled above"),
            }
        })
    });
    finish(result)
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the async runtime: {e}"))
}

fn finish(result: anyhow::Result<()>) -> ExitCode {
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

async fn broker(loaded: Loaded, command: BrokerCommand) -> anyhow::Result<()> {
    if let BrokerCommand::Serve = command {
        let listen = loaded.config.broker.listen.clone().unwrap_or_else(|| "127.0.0.1:3129".into());
        let listener = tokio::net::TcpListener::bind(&listen)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
        let app = server::build(loaded).await.map_err(|e| anyhow::anyhow!("{e}"))?;
        let state = app.state.clone();
        server::cancel_on_signal(state.shutdown.clone());
        tokio::spawn(acs_core::features::watch(state.clone()));
        tracing::info!(addr = %listener.local_addr()?, "acs broker is ready");
        return acs_core::sandboxes::broker_host::run(state, listener).await.map_err(|e| anyhow::anyhow!(e));
    }
    let db = Db::connect(&loaded.config.database).await?;
    acs_core::extension::migrate(&db).await?;
    let crypto = secrets::Crypto::new(secrets::load_keyring(&loaded.config.secrets)?);
    let id = match command {
        BrokerCommand::RotateCa => acs_core::broker::ca::create(&db, &crypto).await?,
        _ => acs_core::broker::ca::current_id(&db, &crypto).await?,
    };
    let (_, pem, _, _) = acs_core::broker::ca::list(&db)
        .await?
        .into_iter()
        .find(|(ca, ..)| *ca == id)
        .ok_or_else(|| anyhow::anyhow!("the broker CA {id} is gone"))?;
    print!("{pem}");
    Ok(())
}

async fn migrate(loaded: Loaded) -> anyhow::Result<()> {
    let db = Db::connect(&loaded.config.database).await?;
    acs_core::extension::migrate(&db).await?;
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
    acs_core::extension::migrate(&db).await?;
    let crypto = secrets::Crypto::new(keyring);
    let n = crypto.rewrap_all(&db).await?;
    println!("re-wrapped {n} account data key(s)");
    Ok(())
}

async fn credits(loaded: Loaded, command: CreditsCommand) -> anyhow::Result<()> {
    let db = Db::connect(&loaded.config.database).await?;
    acs_core::extension::migrate(&db).await?;
    match command {
        CreditsCommand::Grant { email, amount } => {
            let balance = credits::operator::grant(&db, &email, amount).await?;
            println!("granted {amount} credits to {email}; balance {balance}");
        }
        CreditsCommand::Comp { email, state } => {
            let on = state == "on";
            let balance = credits::operator::set_comped(&db, &email, on).await?;
            println!("{email} is {}comped; balance {balance}", if on { "" } else { "no longer " });
        }
    }
    Ok(())
}

async fn oauth_clients(loaded: Loaded, command: OauthClientsCommand) -> anyhow::Result<()> {
    let db = Db::connect(&loaded.config.database).await?;
    acs_core::extension::migrate(&db).await?;
    match command {
        OauthClientsCommand::Publish { id } => {
            if !acs_core::oauth::publish(&db, id).await? {
                anyhow::bail!("no OAuth client has the id {id}");
            }
            println!("published OAuth client {id}");
        }
    }
    Ok(())
}

async fn sandboxes(loaded: Loaded, command: SandboxesCommand) -> anyhow::Result<()> {
    use acs_core::sandboxes::host::{self, Reaped};
    let db = Db::connect(&loaded.config.database).await?;
    acs_core::extension::migrate(&db).await?;
    let cfg = &loaded.config.sandbox;
    match command {
        SandboxesCommand::List => {
            println!(
                "{:<36} {:<8} {:<11} {:>9} {:<10} {:<36} verdict",
                "id", "state", "uid", "disk MB", "row", "owner"
            );
            for m in host::survey(&db, cfg).await? {
                let (row, owner) = match m.row {
                    Some((status, owner)) => (status.as_str(), owner.map(|o| o.to_string()).unwrap_or_default()),
                    None => ("-", String::new()),
                };
                println!(
                    "{:<36} {:<8} {:<11} {:>9} {:<10} {:<36} {}",
                    m.machine.id,
                    if m.machine.running { "running" } else { "stopped" },
                    m.machine.uid.map(|u| u.to_string()).unwrap_or_else(|| "-".into()),
                    m.machine.disk_bytes.div_ceil(1 << 20),
                    row,
                    owner,
                    m.verdict.as_str()
                );
            }
        }
        SandboxesCommand::Reap { dry_run } => {
            let done = host::reap(&db, cfg, dry_run).await.map_err(|e| anyhow::anyhow!(e))?;
            let would = if dry_run { "would be " } else { "" };
            for (m, action) in &done {
                let what = match action {
                    Reaped::Stopped => "stopped (disk kept)",
                    Reaped::Removed => "removed",
                };
                println!("{} {would}{what}: {}", m.machine.id, m.verdict.as_str());
            }
            println!("{} machine(s) {would}reaped", done.len());
        }
    }
    Ok(())
}

fn runtimes(loaded: &Loaded, command: RuntimesCommand) -> ExitCode {
    use acs_core::runtimes::{self, InstallOutcome};
    let dir = std::path::Path::new(&loaded.config.runtimes.dir);
    match command {
        RuntimesCommand::List => {
            for s in runtimes::list(dir) {
                let installed = s.installed.unwrap_or_else(|| "not installed".into());
                println!(
                    "{:<9} {:<34} pinned {:<8} installed {installed}",
                    s.pinned.name, s.pinned.package, s.pinned.version
                );
            }
            ExitCode::SUCCESS
        }
        RuntimesCommand::Install { runtimes: names } => match runtimes::install(dir, &names) {
            Ok(outcomes) => {
                for o in outcomes {
                    match o {
                        InstallOutcome::Installed { runtime, version, replaced: Some(old) } => {
                            println!("{runtime}: installed {version} (replacing {old})")
                        }
                        InstallOutcome::Installed { runtime, version, replaced: None } => {
                            println!("{runtime}: installed {version}")
                        }
                        InstallOutcome::Present { runtime, version } => {
                            println!("{runtime}: {version} already installed")
                        }
                    }
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("acs: {e}");
                ExitCode::FAILURE
            }
        },
    }
}
