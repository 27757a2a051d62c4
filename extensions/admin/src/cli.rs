//! `acs admin`: operator keys, minted on the configured database.

use acs_platform::config::Loaded;
use acs_platform::db::Db;
use acs_platform::extension::BoxError;
use acs_platform::time_fmt::from_micros;
use uuid::Uuid;

use crate::operators;

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
    clap::Command::new("admin")
        .about("Operator tools of the admin extension (on the configured database; docs/admin.md)")
        .subcommand(key)
        .subcommand_required(true)
}

pub async fn run(loaded: &Loaded, matches: &clap::ArgMatches) -> Result<(), BoxError> {
    let Some(("key", key)) = matches.subcommand() else { return Err("unknown admin command".into()) };
    let db = Db::connect(&loaded.config.database).await?;
    acs_platform::extension::migrate(&db).await?;
    match key.subcommand() {
        Some(("create", args)) => {
            let name = args.get_one::<String>("name").map(|n| n.trim()).unwrap_or_default();
            if name.is_empty() || name.chars().count() > 200 {
                return Err("--name should be 1 to 200 characters".into());
            }
            let (id, secret) = operators::create_key(&db, name).await?;
            eprintln!("operator key {id} ({name}); it is shown only now:");
            println!("{secret}");
        }
        Some(("list", _)) => {
            for (id, name, prefix, created, used, revoked) in operators::keys(&db).await? {
                let used = used.map(|u| from_micros(u).to_string()).unwrap_or_else(|| "never used".into());
                let state = if revoked { "revoked" } else { "live" };
                println!("{id}  {prefix}…  {state:<7}  created {}  {used}  {name}", from_micros(created));
            }
        }
        Some(("revoke", args)) => {
            let id = *args.get_one::<Uuid>("id").ok_or("an id is required")?;
            if !operators::revoke_key(&db, id).await? {
                return Err(format!("no live operator key has the id {id}").into());
            }
            println!("revoked operator key {id}");
        }
        _ => return Err("unknown admin key command".into()),
    }
    Ok(())
}
