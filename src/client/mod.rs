//! The CLI's client commands: they talk to a running server over its API
//! (`--url`/`ACS_URL`, `--key`/`ACS_API_KEY`, else the saved login of
//! `credentials`), print for people by default and JSON with `--json`.

pub mod apply;
pub mod credentials;
pub mod run;

use std::io::{BufRead, IsTerminal, Write};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use serde_json::{Value, json};

use credentials::{Credentials, Server, normalize_url};

/// Where the server is when nothing names it.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8080";

#[derive(Args, Debug, Clone)]
pub struct Target {
    /// The server's address (default: the saved default login, else http://127.0.0.1:8080).
    #[arg(long, env = "ACS_URL")]
    pub url: Option<String>,
    /// An API key to use instead of the saved one.
    #[arg(long, env = "ACS_API_KEY", hide_env_values = true)]
    pub key: Option<String>,
    /// Print JSON for scripts instead of text for people.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct LoginArgs {
    /// Approve the login in a browser (device login) instead of typing a password here.
    #[arg(long)]
    pub device: bool,
    /// With --device: only print the address, don't try to open a browser.
    #[arg(long)]
    pub no_browser: bool,
    /// The account's email (asked for when absent).
    #[arg(long)]
    pub email: Option<String>,
    /// Read the password from the first line of standard input (for scripts).
    #[arg(long)]
    pub password_stdin: bool,
    /// Save this login under NAME (default: the entry for this address, else `default`).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Create the account first (a new server's first user, or anyone where registration is open).
    #[arg(long, conflicts_with = "device")]
    pub register: bool,
    /// With --register: the operator's registration code, when the server asks for one.
    #[arg(long, value_name = "CODE", requires = "register")]
    pub access_code: Option<String>,
}

/// A client for the server at `url`. A plain-http server needs no trust
/// roots: loading the system's (a file per root) was most of a short
/// command's time, so they are read only for an https one.
fn http(url: &str) -> anyhow::Result<reqwest::Client> {
    // One TLS provider for the process; a second call finds it installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = reqwest::Client::builder().timeout(Duration::from_secs(30));
    if url.starts_with("http://") {
        builder = builder.tls_certs_only(std::iter::empty());
    }
    Ok(builder.build()?)
}

/// A refusal's message, from the spec's error body.
fn refusal(status: reqwest::StatusCode, body: &Value) -> String {
    let code = body["error"].as_str().unwrap_or("error");
    match body["message"].as_str() {
        Some(m) => format!("{m} ({status}, {code})"),
        None => format!("{code} ({status})"),
    }
}

async fn send(req: reqwest::RequestBuilder) -> anyhow::Result<(reqwest::StatusCode, Value)> {
    let res = req.send().await.context("the server did not answer")?;
    let status = res.status();
    let text = res.text().await.unwrap_or_default();
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "this machine".into())
}

/// Reads a line from the terminal; `secret` turns echo off while typing.
fn ask(prompt: &str, secret: bool) -> anyhow::Result<String> {
    eprint!("{prompt}");
    std::io::stderr().flush()?;
    let stdin = std::io::stdin();
    let fd = 0;
    let mut saved: Option<libc::termios> = None;
    if secret && stdin.is_terminal() {
        // SAFETY: termios calls on standard input with a zeroed struct they fill.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(fd, &mut t) == 0 {
                saved = Some(t);
                t.c_lflag &= !libc::ECHO;
                libc::tcsetattr(fd, libc::TCSANOW, &t);
            }
        }
    }
    let mut line = String::new();
    let read = stdin.lock().read_line(&mut line);
    if let Some(t) = saved {
        // SAFETY: restores the settings read above.
        unsafe { libc::tcsetattr(fd, libc::TCSANOW, &t) };
        eprintln!();
    }
    read?;
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}

/// `acs login`: a new full-scope key, by password or device login, saved.
pub async fn login(target: &Target, args: LoginArgs) -> anyhow::Result<()> {
    let path = credentials::path()?;
    let mut creds = Credentials::load(&path)?;
    let url = normalize_url(
        target.url.as_deref().or_else(|| creds.find(None).map(|(_, s)| s.url.as_str())).unwrap_or(DEFAULT_URL),
    );
    let client = http(&url)?;
    let key_name = format!("acs CLI on {}", host_name());
    let key = if args.device {
        device_login(&client, &url, &key_name, args.no_browser || !std::io::stderr().is_terminal(), target.json).await?
    } else {
        let email = match args.email {
            Some(e) => e,
            None => ask("Email: ", false)?,
        };
        let password = if args.password_stdin {
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line)?;
            line.trim_end_matches(['\r', '\n']).to_owned()
        } else {
            ask("Password: ", true)?
        };
        if args.register {
            let mut body = json!({"email": email, "password": password});
            if let Some(code) = &args.access_code {
                body["access_code"] = json!(code);
            }
            let (status, answer) = send(client.post(format!("{url}/api/auth/register")).json(&body)).await?;
            if !status.is_success() {
                bail!("registration refused: {}", refusal(status, &answer));
            }
            if !target.json {
                eprintln!("Created the account {email} on {url}.");
            }
        }
        let (status, body) = send(
            client
                .post(format!("{url}/api/auth/login"))
                .json(&json!({"email": email, "password": password, "key_name": key_name})),
        )
        .await?;
        if status != reqwest::StatusCode::CREATED {
            bail!("sign-in refused: {}", refusal(status, &body));
        }
        body["data"]["api_key"].as_str().context("the server's answer has no key")?.to_owned()
    };
    let (status, me) = send(client.get(format!("{url}/api/auth/me")).bearer_auth(&key)).await?;
    if !status.is_success() {
        bail!("the new key does not work: {}", refusal(status, &me));
    }
    let email = me["data"]["email"].as_str().map(str::to_owned);
    let name = args.name.unwrap_or_else(|| creds.name_for(&url));
    creds.servers.insert(name.clone(), Server { url: url.clone(), key, email: email.clone() });
    if creds.default.as_ref().is_none_or(|d| !creds.servers.contains_key(d)) {
        creds.default = Some(name.clone());
    }
    creds.save(&path)?;
    if target.json {
        println!("{}", json!({"url": url, "name": name, "email": email, "credentials": path}));
    } else {
        let who = email.as_deref().unwrap_or("the account");
        println!("Signed in to {url} as {who}; the key is saved as `{name}` in {}.", path.display());
    }
    Ok(())
}

/// RFC 8628 from the device's side: show the code, open the page, poll.
async fn device_login(
    client: &reqwest::Client,
    url: &str,
    key_name: &str,
    no_browser: bool,
    quiet: bool,
) -> anyhow::Result<String> {
    let (status, d) = send(client.post(format!("{url}/api/auth/device")).json(&json!({"name": key_name}))).await?;
    if status != reqwest::StatusCode::OK {
        bail!("device login refused: {}", refusal(status, &d));
    }
    let device_code = d["device_code"].as_str().context("no device_code in the answer")?.to_owned();
    let complete = d["verification_uri_complete"].as_str().unwrap_or_default();
    let code = d["user_code"].as_str().unwrap_or_default();
    let mut interval = d["interval"].as_u64().unwrap_or(5).max(1);
    eprintln!("To sign in, open {complete}\nand check that it shows the code {code}.");
    if !no_browser && std::process::Command::new("xdg-open").arg(complete).spawn().is_err() {
        eprintln!("(no browser could be opened here; open the address yourself)");
    }
    if !quiet {
        eprintln!("Waiting for approval...");
    }
    loop {
        tokio::time::sleep(Duration::from_secs(interval)).await;
        let (status, body) =
            send(client.post(format!("{url}/api/auth/device/token")).json(&json!({"device_code": device_code})))
                .await?;
        match body["error"].as_str() {
            None if status.is_success() => {
                return Ok(body["data"]["api_key"].as_str().context("the server's answer has no key")?.to_owned());
            }
            Some("authorization_pending") => {}
            // RFC 8628 3.5: a client told to slow down adds 5 seconds.
            Some("slow_down") => interval += 5,
            _ => bail!("device login ended: {}", refusal(status, &body)),
        }
    }
}

/// The key and address a command uses: `--key`/`ACS_API_KEY`, else the
/// saved login for `--url` (or the default one).
pub fn resolve(target: &Target) -> anyhow::Result<(String, String, Option<String>)> {
    let creds = Credentials::load(&credentials::path()?)?;
    let saved = creds.find(target.url.as_deref());
    let url = normalize_url(target.url.as_deref().or(saved.map(|(_, s)| s.url.as_str())).unwrap_or(DEFAULT_URL));
    match (&target.key, saved) {
        (Some(k), _) => Ok((url, k.clone(), None)),
        (None, Some((name, s))) => Ok((url, s.key.clone(), Some(name.to_owned()))),
        (None, None) => bail!("not signed in to {url}: run `acs login` (or pass --key / ACS_API_KEY)"),
    }
}

/// `acs logout`: revokes the saved key on the server and forgets it.
pub async fn logout(target: &Target) -> anyhow::Result<()> {
    let path = credentials::path()?;
    let mut creds = Credentials::load(&path)?;
    let Some((name, server)) = creds.find(target.url.as_deref()).map(|(n, s)| (n.to_owned(), s.clone())) else {
        bail!("no saved login{}", target.url.as_deref().map(|u| format!(" for {u}")).unwrap_or_default());
    };
    let client = http(&server.url)?;
    let url = &server.url;
    // Revoking needs the key's id; a key the server no longer knows is simply forgotten.
    let revoked = match send(client.get(format!("{url}/api/auth/me")).bearer_auth(&server.key)).await {
        Ok((status, me)) if status.is_success() => {
            let id = me["data"]["key"]["id"].as_str().unwrap_or_default();
            let (status, body) = send(client.delete(format!("{url}/api/keys/{id}")).bearer_auth(&server.key)).await?;
            if status != reqwest::StatusCode::NO_CONTENT {
                bail!("the server refused to revoke the key: {}", refusal(status, &body));
            }
            true
        }
        Ok(_) => false,
        Err(e) => bail!("{e:#}; the key is kept so you can retry"),
    };
    creds.servers.remove(&name);
    if creds.default.as_deref() == Some(name.as_str()) {
        creds.default = creds.servers.keys().next().cloned();
    }
    creds.save(&path)?;
    if target.json {
        println!("{}", json!({"url": url, "name": name, "revoked": revoked}));
    } else if revoked {
        println!("Signed out of {url}; the key is revoked and forgotten.");
    } else {
        println!("Signed out of {url}; the server no longer knew the key, so it is only forgotten.");
    }
    Ok(())
}

/// `acs whoami`: the account and key a command would use.
pub async fn whoami(target: &Target) -> anyhow::Result<()> {
    let (url, key, _) = resolve(target)?;
    let (status, me) = send(http(&url)?.get(format!("{url}/api/auth/me")).bearer_auth(&key)).await?;
    if !status.is_success() {
        bail!("{}", refusal(status, &me));
    }
    if target.json {
        println!("{}", me["data"]);
    } else {
        let email = me["data"]["email"].as_str().unwrap_or("(no email)");
        let scope = me["data"]["key"]["scope"].as_str().unwrap_or("?");
        println!("{email} on {url} ({scope} key)");
    }
    Ok(())
}
