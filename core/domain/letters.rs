//! The email lps writes: one layout (`templates/email/message.html` and its plain-text twin
//! `message.txt`) for an email channel's messages and digests (`notifications/`),
//! invitations (`teammates/`) and password resets (`oauth/password_resets.rs`).
//! The HTML is auto-escaped, so a lead's name is text in every part.

use std::sync::LazyLock;

use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde::Serialize;

use crate::mailer::Mail;

static TEMPLATES: LazyLock<Environment<'static>> = LazyLock::new(|| {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|name| {
        if name.ends_with(".html") {
            AutoEscape::Html
        } else {
            AutoEscape::None
        }
    });
    env.add_template(
        "message.html",
        include_str!("../../templates/email/message.html"),
    )
    .expect("the email template parses");
    env.add_template(
        "message.txt",
        include_str!("../../templates/email/message.txt"),
    )
    .expect("the email template parses");
    env
});

/// What an email says, before it is addressed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Letter {
    pub subject: String,
    pub headline: String,
    pub paragraphs: Vec<String>,
    pub facts: Vec<Fact>,
    pub items: Vec<Item>,
    pub button: Option<Button>,
    pub footer: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Fact {
    pub label: &'static str,
    pub value: String,
}

/// A line of a list: a lead, with what they did and a link to them.
#[derive(Debug, Clone, Serialize)]
pub struct Item {
    pub title: String,
    pub detail: String,
    pub url: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Button {
    pub label: &'static str,
    pub url: String,
}

impl Letter {
    /// Both parts written, to nobody yet.
    pub fn written(&self) -> Mail {
        let render = |name: &str| {
            TEMPLATES
                .get_template(name)
                .and_then(|template| {
                    template.render(minijinja::Value::from(minijinja::value::Serde(self)))
                })
                .expect("the email templates render every letter")
        };
        Mail {
            to: Vec::new(),
            subject: self.subject.clone(),
            text: render("message.txt"),
            html: render("message.html"),
            unsubscribe: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leads_text_is_escaped_in_html_and_kept_in_text() {
        let mail = Letter {
            subject: "Ada is hot".into(),
            headline: "<b>Ada</b> is hot".into(),
            paragraphs: vec!["Engines & Co".into()],
            facts: vec![Fact {
                label: "Score",
                value: "15.0".into(),
            }],
            items: vec![Item {
                title: "<script>".into(),
                detail: "viewed".into(),
                url: "https://lps.example/dashboard/leads/7".into(),
            }],
            button: Some(Button {
                label: "Open the lead in lps",
                url: "https://lps.example/dashboard/leads/7?a=1&b=2".into(),
            }),
            footer: Some("Why you got this.".into()),
        }
        .written();
        assert!(
            mail.html.contains("&lt;b&gt;Ada&lt;&#x2f;b&gt; is hot"),
            "{}",
            mail.html
        );
        assert!(mail.html.contains("Engines &amp; Co"));
        assert!(!mail.html.contains("<script>"));
        assert!(mail.text.contains("<b>Ada</b> is hot"));
        assert!(mail.text.contains("Score: 15.0"));
        assert!(
            mail.text
                .contains("Open the lead in lps: https://lps.example/dashboard/leads/7?a=1&b=2")
        );
        assert!(mail.text.contains("Why you got this."));
    }
}
