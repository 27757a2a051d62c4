//! Outgoing email: to the log (embedded default), to JSON files in an
//! outbox folder (operators without SMTP, and the tests), or over SMTP.
//! Sending never blocks a request: messages go out on a spawned task.

use std::path::PathBuf;

use lettre::message::Mailbox;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::config::{EmailConfig, MailTransport};

#[derive(Clone)]
pub enum Mailer {
    Log,
    File(PathBuf),
    Smtp { transport: Box<AsyncSmtpTransport<Tokio1Executor>>, from: Mailbox },
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Mail {
    pub to: String,
    pub subject: String,
    pub body: String,
}

impl Mailer {
    pub fn from_config(cfg: &EmailConfig) -> Result<Mailer, String> {
        Ok(match cfg.transport {
            MailTransport::Log => Mailer::Log,
            MailTransport::File => {
                let dir = PathBuf::from(cfg.outbox_dir.clone().unwrap_or_default());
                std::fs::create_dir_all(&dir).map_err(|e| format!("email.outbox_dir {}: {e}", dir.display()))?;
                Mailer::File(dir)
            }
            MailTransport::Smtp => {
                let url = cfg.smtp_url.as_deref().unwrap_or_default();
                let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
                    .map_err(|e| format!("email.smtp_url: {e}"))?
                    .build();
                let transport = Box::new(transport);
                let from = cfg.from.parse().map_err(|e| format!("email.from: {e}"))?;
                Mailer::Smtp { transport, from }
            }
        })
    }

    /// Queues `mail` for delivery; failures are logged, never returned to a caller.
    pub fn send(&self, mail: Mail) {
        let mailer = self.clone();
        tokio::spawn(async move {
            if let Err(e) = mailer.deliver(&mail).await {
                tracing::warn!(to = %mail.to, subject = %mail.subject, error = %e, "email not sent");
            }
        });
    }

    async fn deliver(&self, mail: &Mail) -> Result<(), String> {
        match self {
            Mailer::Log => {
                tracing::info!(to = %mail.to, subject = %mail.subject, body = %mail.body, "email (log transport)");
                Ok(())
            }
            Mailer::File(dir) => {
                let name = format!("{}.json", uuid::Uuid::now_v7());
                let json = serde_json::to_vec_pretty(mail).map_err(|e| e.to_string())?;
                tokio::fs::write(dir.join(name), json).await.map_err(|e| e.to_string())
            }
            Mailer::Smtp { transport, from } => {
                let msg = Message::builder()
                    .from(from.clone())
                    .to(mail.to.parse().map_err(|e| format!("{e}"))?)
                    .subject(&mail.subject)
                    .body(mail.body.clone())
                    .map_err(|e| e.to_string())?;
                transport.send(msg).await.map(|_| ()).map_err(|e| e.to_string())
            }
        }
    }
}
