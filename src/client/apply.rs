//! `acs apply -f FILE [--dry-run]`: sends a manifest (YAML or JSON, one or
//! many documents `{kind, name, spec}`) to `POST /api/apply`, where the rules
//! live (docs/apply.md), and prints one line per result row. The exit status
//! is 1 when any document failed.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use serde_json::{Value, json};

use super::{Target, http, refusal, resolve, send};

#[derive(Args, Debug)]
pub struct ApplyArgs {
    /// The manifest: YAML (documents separated by `---`) or JSON; `-` reads standard input.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub file: PathBuf,
    /// Show what would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// `text` (default) or `json` (the result rows, as the API answers them).
    #[arg(long, value_name = "FORMAT", value_parser = ["text", "json"], default_value = "text")]
    pub output: String,
}

/// The documents of a manifest: a JSON array, object or `{documents: [...]}`,
/// or YAML documents (each a document, or a list of them).
pub fn documents(text: &str) -> anyhow::Result<Vec<Value>> {
    let trimmed = text.trim_start();
    let values: Vec<Value> = if trimmed.starts_with('{') || trimmed.starts_with('[') {
        vec![serde_json::from_str(text).context("the manifest is not valid JSON")?]
    } else {
        let mut all = Vec::new();
        for (n, doc) in serde_yaml::Deserializer::from_str(text).enumerate() {
            let v: Value = serde::Deserialize::deserialize(doc).with_context(|| format!("YAML document {}", n + 1))?;
            if !v.is_null() {
                all.push(v);
            }
        }
        all
    };
    let mut out = Vec::new();
    for v in values {
        match v {
            Value::Array(items) => out.extend(items),
            Value::Object(mut o) if o.contains_key("documents") => match o.remove("documents") {
                Some(Value::Array(items)) => out.extend(items),
                _ => bail!("`documents` must be a list"),
            },
            other => out.push(other),
        }
    }
    if out.is_empty() {
        bail!("the manifest holds no documents");
    }
    Ok(out)
}

pub async fn apply(target: &Target, args: ApplyArgs) -> anyhow::Result<bool> {
    let text = if args.file.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).context("reading the manifest from standard input")?
    } else {
        std::fs::read_to_string(&args.file).with_context(|| format!("reading {}", args.file.display()))?
    };
    let docs = documents(&text)?;
    let (url, key, _) = resolve(target)?;
    let path = if args.dry_run { "/api/apply?dry_run=true" } else { "/api/apply" };
    let req = http(&url)?.post(format!("{url}{path}")).bearer_auth(&key).json(&json!({"documents": docs}));
    let (status, body) = send(req).await?;
    if !status.is_success() {
        bail!("{}", refusal(status, &body));
    }
    let rows = body["data"].as_array().cloned().unwrap_or_default();
    if target.json || args.output == "json" {
        println!("{}", serde_json::to_string_pretty(&body["data"])?);
    } else {
        if args.dry_run {
            println!("dry run: nothing was written");
        }
        for r in &rows {
            let s = |k: &str| r[k].as_str().unwrap_or("").to_owned();
            let name = if s("name").is_empty() { "(unnamed)".to_owned() } else { s("name") };
            println!("{:<10} {:<12} {name}", s("result"), s("kind"));
            if let Some(e) = r["error"].as_str() {
                println!("           {e}");
            }
            if let Some(secret) = r["signing_secret"].as_str() {
                println!("           signing secret (shown once): {secret}");
            }
        }
    }
    Ok(rows.iter().all(|r| r["result"] != "error"))
}

#[cfg(test)]
mod tests {
    use super::documents;

    #[test]
    fn yaml_json_and_lists_all_read() {
        let yaml = "kind: Vault\nname: a\nspec: {}\n---\n- kind: Vault\n  name: b\n---\n";
        let d = documents(yaml).unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d[1]["name"], "b");
        assert_eq!(documents(r#"{"documents": [{"kind": "Vault", "name": "c"}]}"#).unwrap()[0]["name"], "c");
        assert_eq!(documents(r#"[{"kind": "Vault"}, {"kind": "Agent"}]"#).unwrap().len(), 2);
        assert!(documents("---\n").is_err());
        assert!(documents("{oops").is_err());
    }
}
