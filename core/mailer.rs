//! Email over SMTP (`--smtp-url`, `--smtp-from`), with the `lettre` crate: email channels'
//! messages, invitations and password resets. Each message has a plain-text and an HTML part
//! (the HTML from `templates/email/message.html`, auto-escaped), and, when it is one a person
//! can stop, `List-Unsubscribe` with one-click unsubscription (RFC 8058).
//!
//! The SMTP server is the operator's, named on the command line, so it is not held to the
//! outbound guard's private-network policy that strangers' URLs are. Every send is bounded by
//! [`TIMEOUT`] (connect, each command, the whole message).

use std::collections::BTreeMap;
use std::time::Duration;

use lettre::message::header::{HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use serde::{Deserialize, Serialize};

/// How long one message may take to hand to the SMTP server.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// The most addresses one message goes to.
pub const MOST_RECIPIENTS: usize = 20;

/// Hands messages to the configured SMTP server.
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

/// One message, as queued in the outbox (its JSON payload) or sent at once.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Mail {
    pub to: Vec<String>,
    pub subject: String,
    pub text: String,
    pub html: String,
    /// Where one click stops such messages (`List-Unsubscribe`), per address; an address
    /// without one gets a message it cannot stop (an invitation, a password reset).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unsubscribe: BTreeMap<String, String>,
}

impl Mailer {
    /// From `smtp[s]://user:pass@host:port` and the `From` address, checked now so a typo
    /// stops the start rather than every message.
    pub fn new(url: &str, from: &str) -> anyhow::Result<Self> {
        let from: Mailbox = from
            .parse()
            .map_err(|e| anyhow::anyhow!("--smtp-from {from:?} is not an address: {e}"))?;
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .map_err(|e| anyhow::anyhow!("--smtp-url is not an SMTP URL: {e}"))?
            .timeout(Some(TIMEOUT))
            .build();
        Ok(Self { transport, from })
    }

    /// Sends `mail`, a copy to each of its addresses (each with its own unsubscribe link);
    /// why not, in words, when the server refused one or could not be reached.
    pub async fn send(&self, mail: &Mail) -> Result<(), String> {
        if mail.to.is_empty() || mail.to.len() > MOST_RECIPIENTS {
            return Err(format!(
                "a message goes to 1 to {MOST_RECIPIENTS} addresses"
            ));
        }
        for to in &mail.to {
            let message = self.message(mail, to)?;
            let sending = self.transport.send(message);
            match tokio::time::timeout(TIMEOUT * 2, sending).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(format!("SMTP: {e}")),
                Err(_) => {
                    return Err(format!(
                        "SMTP: no answer within {} s",
                        (TIMEOUT * 2).as_secs()
                    ));
                }
            }
        }
        Ok(())
    }

    fn message(&self, mail: &Mail, to: &str) -> Result<Message, String> {
        let mailbox: Mailbox = to
            .parse()
            .map_err(|e| format!("{to:?} is not an address: {e}"))?;
        let mut builder = Message::builder()
            .from(self.from.clone())
            .to(mailbox)
            .subject(mail.subject.clone());
        if let Some(url) = mail.unsubscribe.get(to) {
            builder = builder
                .raw_header(HeaderValue::new(
                    HeaderName::new_from_ascii_str("List-Unsubscribe"),
                    format!("<{url}>"),
                ))
                .raw_header(HeaderValue::new(
                    HeaderName::new_from_ascii_str("List-Unsubscribe-Post"),
                    "List-Unsubscribe=One-Click".to_owned(),
                ));
        }
        builder
            .multipart(MultiPart::alternative_plain_html(
                mail.text.clone(),
                mail.html.clone(),
            ))
            .map_err(|e| format!("the message could not be built: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mail() -> Mail {
        Mail {
            to: vec!["ada@example.com".into()],
            subject: "Ada is hot".into(),
            text: "Ada is hot".into(),
            html: "<p>Ada is hot</p>".into(),
            unsubscribe: BTreeMap::from([(
                "ada@example.com".to_owned(),
                "https://lps.example/dashboard/unsubscribe?c=1&e=x&s=y".to_owned(),
            )]),
        }
    }

    #[tokio::test]
    async fn a_message_has_both_parts_and_one_click_unsubscription() {
        let mailer = Mailer::new("smtp://127.0.0.1:2525", "lps <lps@example.com>").unwrap();
        let formatted = String::from_utf8(
            mailer
                .message(&mail(), "ada@example.com")
                .unwrap()
                .formatted(),
        )
        .unwrap();
        assert!(formatted.contains("Content-Type: multipart/alternative"));
        assert!(formatted.contains("Content-Type: text/plain"));
        assert!(formatted.contains("Content-Type: text/html"));
        assert!(
            formatted.contains(
                "List-Unsubscribe: <https://lps.example/dashboard/unsubscribe?c=1&e=x&s=y>"
            )
        );
        assert!(formatted.contains("List-Unsubscribe-Post: List-Unsubscribe=One-Click"));
    }

    #[test]
    fn a_bad_configuration_is_refused_at_the_start() {
        assert!(Mailer::new("http://mail.example", "lps@example.com").is_err());
        assert!(Mailer::new("smtp://127.0.0.1:25", "not an address").is_err());
    }

    #[tokio::test]
    async fn too_many_recipients_are_refused_before_any_connection() {
        let mailer = Mailer::new("smtp://127.0.0.1:9", "lps@example.com").unwrap();
        let mut many = mail();
        many.to = (0..=MOST_RECIPIENTS)
            .map(|i| format!("p{i}@example.com"))
            .collect();
        assert!(mailer.send(&many).await.unwrap_err().contains("1 to 20"));
    }
}
