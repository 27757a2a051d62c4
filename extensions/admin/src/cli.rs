//! `acs admin`: operator keys, runtime flags and account suspensions, on
//! the configured database.

use acs_platform::audit::Actor;
use acs_platform::config::Loaded;
use acs_platform::db::Db;
use acs_platform::extension::BoxError;
use acs_platform::features;
use acs_platform::time_fmt::from_micros;
use uuid::Uuid;

use crate::{accounts, operators};

pub fn command() -> clap::Command {
    let key = clap::Command::new("key")
        .about("Operator keys: they may call /api/admin/* and nothing else")
        .subcommand(
            clap::Command::new("create")
                .about("Mint an operator key; it is printed this once")
                .arg(clap::Arg::new("name").long("name").required(true).help("What the key is for")),
        )
        .subcommand(clap::Command::new("list").about("Every operator key, revoked ones too"))
        .subcommand(
            clap::Command::new("revoke")
                .about("Revoke an operator key")
                .arg(clap::Arg::new("id").required(true).value_parser(clap::value_parser!(Uuid))),
        )
        .subcommand_required(true);
    let on_off = || clap::Arg::new("value").required(true).value_parser(["on", "off", "default"]);
    let features = clap::Command::new("features")
        .about("Runtime flags: every replica follows a change within 2 s")
        .subcommand(
            clap::Command::new("list").about("Each flag: on or off now, and whether an operator's choice holds"),
        )
        .subcommand(
            clap::Command::new("set")
                .about("Turn a flag on or off over the configuration, or back to the configuration's value (default)")
                .arg(clap::Arg::new("name").required(true))
                .arg(on_off()),
        )
        .subcommand_required(true);
    let email = || clap::Arg::new("email").required(true).help("The account's email");
    let accounts = clap::Command::new("accounts")
        .about("Accounts: search, suspend, unsuspend (credits and comps: `acs credits`)")
        .subcommand(
            clap::Command::new("list")
                .about("Accounts, newest first")
                .arg(clap::Arg::new("q").long("q").help("Part of the email, any case"))
                .arg(
                    clap::Arg::new("limit")
                        .long("limit")
                        .default_value("50")
                        .value_parser(clap::value_parser!(i64).range(1..=1000)),
                ),
        )
        .subcommand(
            clap::Command::new("suspend")
                .about("Suspend an account: its keys are refused (running turns end only through the API's suspend)")
                .arg(email()),
        )
        .subcommand(clap::Command::new("unsuspend").about("End a suspension").arg(email()))
        .subcommand_required(true);
    clap::Command::new("admin")
        .about("Operator tools of the admin extension (on the configured database; docs/admin.md)")
        .subcommand(key)
        .subcommand(features)
        .subcommand(accounts)
        .subcommand_required(true)
}

pub async fn run(loaded: &Loaded, matches: &clap::ArgMatches) -> Result<(), BoxError> {
    let db = Db::connect(&loaded.config.database).await?;
    acs_platform::extension::migrate(&db).await?;
    match matches.subcommand() {
        Some(("key", key)) => keys(&db, key).await,
        Some(("features", sub)) => flags(loaded, &db, sub).await,
        Some(("accounts", sub)) => accounts(&db, sub).await,
        _ => Err("unknown admin command".into()),
    }
}

async fn flags(loaded: &Loaded, db: &Db, matches: &clap::ArgMatches) -> Result<(), BoxError> {
    let configured = &loaded.config.features;
    match matches.subcommand() {
        Some(("list", _)) => {
            let stored = features::stored(db).await?;
            for (name, on) in features::effective(configured, &stored) {
                let source = match stored.iter().find(|s| s.name == name) {
                    Some(s) => format!("set by {} at {}", s.updated_by, from_micros(s.updated_at)),
                    None => "configuration".to_owned(),
                };
                println!("{name:<24} {:<3}  {source}", if on { "on" } else { "off" });
            }
        }
        Some(("set", args)) => {
            let name = args.get_one::<String>("name").ok_or("a flag name is required")?;
            if !configured.contains_key(name) {
                let known: Vec<&str> = configured.keys().map(String::as_str).collect();
                return Err(format!("no flag is named {name:?} (known: {})", known.join(", ")).into());
            }
            let value = match args.get_one::<String>("value").map(String::as_str) {
                Some("on") => Some(true),
                Some("off") => Some(false),
                _ => None,
            };
            features::store(db, name, value, &features::Changer { actor: "cli".into(), ip: None }).await?;
            let now = value.unwrap_or_else(|| configured.get(name).copied().unwrap_or(false));
            println!("{name} is {} on every replica within 2 s", if now { "on" } else { "off" });
        }
        _ => return Err("unknown admin features command".into()),
    }
    Ok(())
}

async fn accounts(db: &Db, matches: &clap::ArgMatches) -> Result<(), BoxError> {
    match matches.subcommand() {
        Some(("list", args)) => {
            let q = args.get_one::<String>("q").map(String::as_str).unwrap_or_default();
            let limit = args.get_one::<i64>("limit").copied().unwrap_or(50);
            for a in accounts::search(db, q, None, limit).await? {
                let state = if a.suspended_at.is_some() { "suspended" } else { "" };
                let comped = if a.comped { "comped" } else { "" };
                println!("{}  {:<40} {:>12} {comped:<6} {state}", a.id, a.email, a.credit_balance);
            }
        }
        Some((verb @ ("suspend" | "unsuspend"), args)) => {
            let email = args.get_one::<String>("email").map(|e| e.trim().to_lowercase()).unwrap_or_default();
            let id: Option<String> = sqlx::query_scalar("SELECT id FROM accounts WHERE email = $1")
                .bind(email.clone())
                .fetch_optional(&db.pool)
                .await?;
            let id: Uuid = id.ok_or_else(|| format!("no account has the email {email}"))?.parse()?;
            let actor = Actor { account_id: id, kind: "operator", id: None, ip: None };
            let moved = accounts::store_suspension(db, id, verb == "suspend", &actor).await?;
            println!("{email} {}", if moved { format!("{verb}ed") } else { format!("was {verb}ed already") });
        }
        _ => return Err("unknown admin accounts command".into()),
    }
    Ok(())
}

async fn keys(db: &Db, key: &clap::ArgMatches) -> Result<(), BoxError> {
    match key.subcommand() {
        Some(("create", args)) => {
            let name = args.get_one::<String>("name").map(|n| n.trim()).unwrap_or_default();
            if name.is_empty() || name.chars().count() > 200 {
                return Err("--name should be 1 to 200 characters".into());
            }
            let (id, secret) = operators::create_key(db, name).await?;
            eprintln!("operator key {id} ({name}); it is shown only now:");
            println!("{secret}");
        }
        Some(("list", _)) => {
            for (id, name, prefix, created, used, revoked) in operators::keys(db).await? {
                let used = used.map(|u| from_micros(u).to_string()).unwrap_or_else(|| "never used".into());
                let state = if revoked { "revoked" } else { "live" };
                println!("{id}  {prefix}…  {state:<7}  created {}  {used}  {name}", from_micros(created));
            }
        }
        Some(("revoke", args)) => {
            let id = *args.get_one::<Uuid>("id").ok_or("an id is required")?;
            if !operators::revoke_key(db, id).await? {
                return Err(format!("no live operator key has the id {id}").into());
            }
            println!("revoked operator key {id}");
        }
        _ => return Err("unknown admin key command".into()),
    }
    Ok(())
}
