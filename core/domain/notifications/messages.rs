//! What a channel is sent: for Slack a Block Kit message, for Microsoft Teams an Adaptive Card
//! (as a Workflows webhook takes it), for email a message with a plain-text and an HTML part
//! (`domain/letters.rs`), for a workspace webhook the event's own JSON (the body a lead's callback
//! gets). Each says who, at which company, on which campaign, what they did,
//! their score, and links to the lead in the app.
//!
//! Every text of a lead's or a visitor's is escaped for the chat's markup: a name like
//! `<https://evil.example|Click>` shows as typed, never as a link or a mention.

use serde_json::{Value, json};

use super::ChannelKind;
use crate::domain::callback_events::CallbackEvent;
use crate::domain::letters::{Button, Fact, Item, Letter};
use crate::mailer::Mail;
use crate::store::notification_channels::{Engaged, LeadCard};

/// Why a teammate gets an email channel's messages, and how they stop.
const EMAIL_FOOTER: &str = "You get this because an owner of your lps workspace added you to \
    an email channel (Settings › Notifications). Your mail app's unsubscribe button stops \
    these emails to you.";

/// A message before it is queued: a chat's or webhook's JSON, or an email still to be
/// addressed to the channel's teammates.
#[derive(Debug, Clone)]
pub enum Message {
    /// The body as sent.
    Json(String),
    Mail(Mail),
}

/// Who and what a message is about, read when it is queued.
#[derive(Debug, Clone)]
pub struct About {
    pub name: String,
    pub email: Option<String>,
    pub company: Option<String>,
    pub campaign: Option<String>,
    pub score: f64,
    /// The lead's page in the app.
    pub app_url: String,
}

impl About {
    pub fn of(card: LeadCard, score: f64, app_url: String) -> Self {
        let last = serde_json::from_str::<Value>(&card.custom_values)
            .ok()
            .and_then(|values| {
                values
                    .get("last_name")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
        let name = crate::domain::lead::display_name(card.first_name.as_deref(), last.as_deref());
        Self {
            name,
            email: card.email,
            company: card.company_name,
            campaign: card.campaign_name,
            score,
            app_url,
        }
    }

    /// The lead as a person reads it: their name, else their email, else "A lead".
    fn who(&self) -> String {
        if !self.name.is_empty() {
            return self.name.clone();
        }
        self.email.clone().unwrap_or_else(|| "A lead".to_owned())
    }
}

/// What happened, in words (`is hot`, `submitted a form`), and the headline's mark.
fn what(event: &CallbackEvent) -> (&'static str, String) {
    match event {
        CallbackEvent::LeadHot(hot) => ("🔥", format!("is hot (score {:.1})", hot.score)),
        CallbackEvent::FormSubmitted(form) => {
            ("📝", format!("submitted the form {}", form.form_id))
        }
        CallbackEvent::PageViewed(_) => ("👀", "viewed their page".to_owned()),
        CallbackEvent::PageGenerated(_) => ("📄", "got their page".to_owned()),
    }
}

/// What a workspace webhook is sent: the event's own JSON, as a lead's callback.
pub fn event_body(event: &CallbackEvent) -> String {
    serde_json::to_string(event).expect("an event serialises")
}

/// The message a Slack, Teams or email channel is sent about `event` (a webhook:
/// [`event_body`]).
pub fn body(kind: ChannelKind, event: &CallbackEvent, about: &About) -> Message {
    match kind {
        ChannelKind::Slack => Message::Json(slack(event, about).to_string()),
        ChannelKind::Teams => Message::Json(teams(event, about).to_string()),
        ChannelKind::Email => Message::Mail(email(event, about)),
        ChannelKind::Webhook => Message::Json(event_body(event)),
    }
}

/// The facts under the headline: (label, value), plain text.
fn facts(about: &About) -> Vec<(&'static str, String)> {
    let mut facts = Vec::new();
    if let Some(company) = about.company.as_deref().filter(|c| !c.is_empty()) {
        facts.push(("Company", company.to_owned()));
    }
    if let Some(email) = about.email.as_deref().filter(|e| !e.is_empty()) {
        facts.push(("Email", email.to_owned()));
    }
    if let Some(campaign) = about.campaign.as_deref() {
        facts.push(("Campaign", campaign.to_owned()));
    }
    facts.push(("Score", format!("{:.1}", about.score)));
    facts
}

fn slack(event: &CallbackEvent, about: &About) -> Value {
    let (mark, did) = what(event);
    let headline = format!("{mark} {} {did}", about.who());
    let fields: Vec<Value> = facts(about)
        .into_iter()
        .map(|(label, value)| json!({"type": "mrkdwn", "text": format!("*{label}*\n{}", slack_escape(&value))}))
        .collect();
    json!({
        // The notification's text (and what a client without blocks shows).
        "text": headline,
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn",
                "text": format!("{mark} *{}* {}", slack_escape(&about.who()), slack_escape(&did))}},
            {"type": "section", "fields": fields},
            {"type": "actions", "elements": [{
                "type": "button",
                "text": {"type": "plain_text", "text": "Open the lead in lps"},
                "url": about.app_url,
            }]},
        ],
    })
}

fn email(event: &CallbackEvent, about: &About) -> Mail {
    let (mark, did) = what(event);
    let headline = format!("{mark} {} {did}", about.who());
    Letter {
        subject: headline.clone(),
        headline,
        facts: facts(about)
            .into_iter()
            .map(|(label, value)| Fact { label, value })
            .collect(),
        button: Some(Button {
            label: "Open the lead in lps",
            url: about.app_url.clone(),
        }),
        footer: Some(EMAIL_FOOTER.to_owned()),
        ..Letter::default()
    }
    .written()
}

fn teams(event: &CallbackEvent, about: &About) -> Value {
    let (mark, did) = what(event);
    let headline = format!("{mark} {} {did}", about.who());
    let facts: Vec<Value> = facts(about)
        .into_iter()
        .map(|(label, value)| json!({"title": label, "value": teams_escape(&value)}))
        .collect();
    json!({
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": null,
            "content": {
                "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                "type": "AdaptiveCard",
                "version": "1.4",
                "body": [
                    {"type": "TextBlock", "text": teams_escape(&headline), "weight": "Bolder",
                     "size": "Medium", "wrap": true},
                    {"type": "FactSet", "facts": facts},
                ],
                "actions": [{"type": "Action.OpenUrl", "title": "Open the lead in lps",
                             "url": about.app_url}],
            },
        }],
    })
}

/// A lead in a morning digest: who, and what they did yesterday.
#[derive(Debug, Clone)]
pub struct DigestLine {
    pub about: About,
    /// `viewed their page 2 times, clicked 1 time`.
    pub did: String,
}

impl DigestLine {
    pub fn of(about: About, engaged: &Engaged) -> Self {
        let times = |n: i64| {
            if n == 1 {
                "1 time".to_owned()
            } else {
                format!("{n} times")
            }
        };
        let mut did = Vec::new();
        if engaged.views > 0 {
            did.push(format!("viewed their page {}", times(engaged.views)));
        }
        if engaged.clicks > 0 {
            did.push(format!("clicked {}", times(engaged.clicks)));
        }
        if engaged.forms > 0 {
            did.push(format!("submitted a form {}", times(engaged.forms)));
        }
        if did.is_empty() {
            did.push("read their page".to_owned());
        }
        Self {
            about,
            did: did.join(", "),
        }
    }

    /// `Ada Lovelace (Engines & Co)`, plain text.
    fn who(&self) -> String {
        match self.about.company.as_deref().filter(|c| !c.is_empty()) {
            Some(company) => format!("{} ({company})", self.about.who()),
            None => self.about.who(),
        }
    }
}

/// The morning digest: yesterday's engaged leads (`total` in all, `lines` the most engaged).
pub fn digest_body(
    kind: ChannelKind,
    workspace: &str,
    day: &str,
    lines: &[DigestLine],
    total: i64,
    app_url: &str,
) -> Message {
    let leads = if total == 1 {
        "1 lead".to_owned()
    } else {
        format!("{total} leads")
    };
    let headline = format!("☀️ {day} in {workspace}: {leads} engaged");
    let more = total - lines.len() as i64;
    let more = (more > 0).then(|| format!("…and {more} more in lps."));
    match kind {
        ChannelKind::Slack => {
            let mut text = lines
                .iter()
                .map(|line| {
                    format!(
                        "• <{}|{}>: {}",
                        line.about.app_url,
                        slack_escape(&line.who()),
                        slack_escape(&line.did)
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            if let Some(more) = &more {
                text.push_str(&format!("\n{}", slack_escape(more)));
            }
            Message::Json(
                json!({"text": headline, "blocks": [
                    {"type": "section", "text": {"type": "mrkdwn", "text": format!("*{}*", slack_escape(&headline))}},
                    {"type": "section", "text": {"type": "mrkdwn", "text": text}},
                    {"type": "actions", "elements": [{"type": "button",
                        "text": {"type": "plain_text", "text": "Open lps"}, "url": app_url}]},
                ]})
                .to_string(),
            )
        }
        ChannelKind::Teams => {
            let mut body = vec![json!({"type": "TextBlock", "text": teams_escape(&headline),
                "weight": "Bolder", "size": "Medium", "wrap": true})];
            body.extend(lines.iter().map(|line| {
                json!({"type": "TextBlock", "wrap": true, "text": format!(
                    "[{}]({}): {}", teams_escape(&line.who()), line.about.app_url,
                    teams_escape(&line.did))})
            }));
            if let Some(more) = &more {
                body.push(json!({"type": "TextBlock", "wrap": true, "text": teams_escape(more)}));
            }
            Message::Json(
                json!({"type": "message", "attachments": [{
                    "contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": null,
                    "content": {"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                        "type": "AdaptiveCard", "version": "1.4", "body": body,
                        "actions": [{"type": "Action.OpenUrl", "title": "Open lps", "url": app_url}]}}]})
                .to_string(),
            )
        }
        ChannelKind::Email | ChannelKind::Webhook => Message::Mail(
            Letter {
                items: lines
                    .iter()
                    .map(|line| Item {
                        title: line.who(),
                        detail: line.did.clone(),
                        url: line.about.app_url.clone(),
                    })
                    .collect(),
                paragraphs: more.into_iter().collect(),
                ..about_no_lead(&headline, app_url)
            }
            .written(),
        ),
    }
}

/// A channel's first message: that it works.
pub fn test_body(kind: ChannelKind, workspace: &str, app_url: &str) -> Message {
    if kind == ChannelKind::Webhook {
        return Message::Json(json!({"event": "channel.test", "workspace": workspace}).to_string());
    }
    let text = format!("✅ lps will post here about the leads of {workspace}.");
    notice(kind, &text, app_url)
}

/// Past a channel's hourly bound: one message saying the rest are in the app.
pub fn summary_body(kind: ChannelKind, most: i64, app_url: &str) -> Message {
    let text = format!(
        "⏸ More leads engaged this hour than the {most} messages a channel gets; the rest \
         are in lps."
    );
    notice(kind, &text, app_url)
}

/// An email channel's message about no lead in particular: its headline (also its subject),
/// a button to the app and why the reader gets it.
fn about_no_lead(headline: &str, app_url: &str) -> Letter {
    Letter {
        subject: headline.to_owned(),
        headline: headline.to_owned(),
        button: Some(Button {
            label: "Open lps",
            url: app_url.to_owned(),
        }),
        footer: Some(EMAIL_FOOTER.to_owned()),
        ..Letter::default()
    }
}

/// A message of one sentence about no lead in particular, with a link to the app.
fn notice(kind: ChannelKind, text: &str, app_url: &str) -> Message {
    if kind == ChannelKind::Email {
        return Message::Mail(about_no_lead(text, app_url).written());
    }
    Message::Json(
        match kind {
            ChannelKind::Slack => json!({"text": text, "blocks": [
                {"type": "section", "text": {"type": "mrkdwn", "text": slack_escape(text)}},
                {"type": "actions", "elements": [{"type": "button",
                    "text": {"type": "plain_text", "text": "Open lps"}, "url": app_url}]},
            ]}),
            ChannelKind::Teams => json!({"type": "message", "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": null,
            "content": {"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                "type": "AdaptiveCard", "version": "1.4",
                "body": [{"type": "TextBlock", "text": teams_escape(text), "wrap": true}],
                "actions": [{"type": "Action.OpenUrl", "title": "Open lps", "url": app_url}]}}]}),
            ChannelKind::Webhook | ChannelKind::Email => json!({"text": text}),
        }
        .to_string(),
    )
}

/// Slack's `mrkdwn`: `&`, `<` and `>` are its markup (links, mentions); formatting marks are
/// neutralised so a name cannot restyle the message.
fn slack_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            // A zero-width joiner after a formatting mark keeps it literal.
            '*' | '_' | '~' | '`' => {
                out.push(c);
                out.push('\u{200B}');
            }
            _ => out.push(c),
        }
    }
    out
}

/// Adaptive Cards' Markdown subset: each mark it knows escaped with a backslash, so a name
/// cannot become a link or styling.
fn teams_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '\\' | '*' | '_' | '[' | ']' | '(' | ')' | '~' | '`' | '#' | '<' | '>'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::callback_events::LeadHot;

    fn about(name: &str) -> About {
        About {
            name: name.to_owned(),
            email: Some("ada@example.com".to_owned()),
            company: Some("Engines & Co".to_owned()),
            campaign: Some("Autumn".to_owned()),
            score: 15.0,
            app_url: "https://lps.example/dashboard/leads/7".to_owned(),
        }
    }

    fn hot() -> CallbackEvent {
        CallbackEvent::LeadHot(LeadHot {
            lead_id: 7,
            campaign_id: 3,
            score: 15.0,
            threshold: 8.0,
            page_url: None,
            hot_at: "2026-11-26T12:00:00.000000Z".into(),
        })
    }

    fn json(message: Message) -> Value {
        match message {
            Message::Json(body) => serde_json::from_str(&body).unwrap(),
            Message::Mail(mail) => panic!("a chat message, not an email: {mail:?}"),
        }
    }

    #[test]
    fn slack_gets_block_kit_with_the_lead_escaped() {
        let body = json(body(
            ChannelKind::Slack,
            &hot(),
            &about("<https://evil.example|Ada>"),
        ));
        let section = body["blocks"][0]["text"]["text"].as_str().unwrap();
        assert!(
            section.contains("&lt;https://evil.example|Ada&gt;"),
            "{section}"
        );
        assert!(!section.contains("<https"), "{section}");
        assert_eq!(
            body["blocks"][2]["elements"][0]["url"],
            "https://lps.example/dashboard/leads/7"
        );
        let fields = body["blocks"][1]["fields"].to_string();
        assert!(fields.contains("Engines &amp; Co"), "{fields}");
        assert!(
            body["text"]
                .as_str()
                .unwrap()
                .contains("is hot (score 15.0)")
        );
    }

    #[test]
    fn teams_gets_an_adaptive_card_with_the_lead_escaped() {
        let body = json(body(
            ChannelKind::Teams,
            &hot(),
            &about("[Ada](https://evil.example)"),
        ));
        let card = &body["attachments"][0]["content"];
        assert_eq!(card["type"], "AdaptiveCard");
        let headline = card["body"][0]["text"].as_str().unwrap();
        assert!(
            headline.contains(r"\[Ada\]\(https://evil.example\)"),
            "{headline}"
        );
        assert_eq!(card["actions"][0]["type"], "Action.OpenUrl");
        assert_eq!(card["body"][1]["facts"][3]["value"], "15.0");
    }

    #[test]
    fn notices_link_to_the_app_in_each_chats_form() {
        let slack = json(summary_body(
            ChannelKind::Slack,
            100,
            "https://lps.example/dashboard",
        ));
        assert!(
            slack["text"]
                .as_str()
                .unwrap()
                .contains("the rest are in lps")
        );
        assert_eq!(
            slack["blocks"][1]["elements"][0]["url"],
            "https://lps.example/dashboard"
        );
        let teams = json(test_body(
            ChannelKind::Teams,
            "Acme <b>",
            "https://lps.example/dashboard",
        ));
        let card = &teams["attachments"][0]["content"];
        assert!(
            card["body"][0]["text"]
                .as_str()
                .unwrap()
                .contains(r"Acme \<b\>"),
            "{card}"
        );
        let hook = json(test_body(ChannelKind::Webhook, "Acme", "x"));
        assert_eq!(hook, json!({"event": "channel.test", "workspace": "Acme"}));
    }

    #[test]
    fn an_email_says_the_same_in_both_parts_with_the_lead_escaped() {
        let Message::Mail(mail) = body(ChannelKind::Email, &hot(), &about("<b>Ada</b>")) else {
            panic!("an email");
        };
        assert_eq!(mail.subject, "🔥 <b>Ada</b> is hot (score 15.0)");
        assert!(mail.html.contains("&lt;b&gt;Ada"), "{}", mail.html);
        assert!(mail.html.contains("Engines &amp; Co"));
        assert!(mail.text.contains("Company: Engines & Co"), "{}", mail.text);
        assert!(mail.text.contains("https://lps.example/dashboard/leads/7"));
        assert!(mail.text.contains("unsubscribe"));
        assert!(mail.to.is_empty(), "addressed when queued");
    }

    #[test]
    fn a_webhook_gets_the_events_own_json() {
        let sent = event_body(&hot());
        assert_eq!(sent, serde_json::to_string(&hot()).unwrap());
    }
}
