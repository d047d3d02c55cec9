//! Page designs written from a prompt: by an OpenAI-compatible chat-completions server when one
//! is configured (`--llm-base-url`, `--llm-api-key`, `--llm-model`), else by the built-in
//! offline generator, which picks the premade design closest to the prompt's words and puts the
//! prompt's first sentence on the page as its introduction. Whatever comes back is cleaned and
//! compiled by the caller before it reaches a draft.

use std::time::Duration;

use serde_json::{Value, json};

use crate::render::premade;

/// An OpenAI-compatible provider.
#[derive(Debug, Clone)]
pub struct LlmConfig {
    /// e.g. `https://api.openai.com/v1`; requests go to `{base_url}/chat/completions`.
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
}

/// A design: the page body (minijinja over the lead's variables) and its CSS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesignDraft {
    pub html: String,
    pub css: String,
}

/// Characters of an answer read at most.
const MAX_ANSWER_BYTES: usize = 1_000_000;
/// Attempts on 429 and 5xx answers and on transport errors.
const ATTEMPTS: u32 = 3;

pub struct Generator {
    llm: Option<LlmConfig>,
    client: reqwest::Client,
}

impl Generator {
    pub fn new(llm: Option<LlmConfig>) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(90))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        Self { llm, client }
    }

    /// A design for `prompt`; `current` is the draft to edit (`replace: false`), if any. The
    /// error is a sentence for the run's `error`.
    pub async fn design(
        &self,
        prompt: &str,
        current: Option<&DesignDraft>,
    ) -> Result<DesignDraft, String> {
        match &self.llm {
            Some(llm) => self.ask(llm, prompt, current).await,
            None => Ok(offline(prompt)),
        }
    }

    async fn ask(
        &self,
        llm: &LlmConfig,
        prompt: &str,
        current: Option<&DesignDraft>,
    ) -> Result<DesignDraft, String> {
        let mut user = format!("Brief:\n{prompt}\n");
        if let Some(current) = current {
            user.push_str(&format!(
                "\nEdit this current design; keep what the brief does not ask to change.\n\
                 HTML:\n{}\n\nCSS:\n{}\n",
                current.html, current.css
            ));
        }
        let body = json!({
            "model": llm.model,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": user},
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": "page_design",
                    "strict": true,
                    "schema": {
                        "type": "object",
                        "properties": {"html": {"type": "string"}, "css": {"type": "string"}},
                        "required": ["html", "css"],
                        "additionalProperties": false,
                    },
                },
            },
        });
        let url = format!("{}/chat/completions", llm.base_url.trim_end_matches('/'));
        let mut delay = Duration::from_millis(500);
        let mut last_problem = String::new();
        for attempt in 1..=ATTEMPTS {
            let mut request = self.client.post(&url).json(&body);
            if let Some(key) = &llm.api_key {
                request = request.bearer_auth(key);
            }
            match request.send().await {
                Ok(response) if response.status().is_success() => {
                    let bytes = read_bounded(response).await?;
                    return parse_answer(&bytes);
                }
                Ok(response) => {
                    let status = response.status();
                    last_problem = format!("the model server answered {status}");
                    let retryable = status.as_u16() == 429 || status.is_server_error();
                    if !retryable {
                        return Err(format!(
                            "The design could not be generated: {last_problem}."
                        ));
                    }
                    if let Some(wait) = retry_after(&response) {
                        delay = wait.min(Duration::from_secs(30));
                    }
                }
                Err(err) if err.is_timeout() => {
                    last_problem = "the model server did not answer in time".to_owned();
                }
                Err(_) => last_problem = "the model server could not be reached".to_owned(),
            }
            if attempt < ATTEMPTS {
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
        }
        Err(format!(
            "The design could not be generated: {last_problem} ({ATTEMPTS} attempts)."
        ))
    }
}

const SYSTEM_PROMPT: &str = "You design one personalised web page for a sales lead. Answer a \
JSON object with two strings: `html` (the page body only, no <html>, <head> or <body>) and \
`css`. The HTML is a minijinja template: use {{ first_name }}, {{ company_name }}, \
{{ company_domain }}, {{ email }} for the lead (with | default(\"...\") fallbacks), \
{{ cta_url }} for the call to action's address, {{ branding.company_name }}, \
{{ branding.logo_url }}, {{ branding.primary_color }}, {{ sender.name }}, {{ sender.title }} for \
the sender; wrap optional parts in {% if ... %}. Mark the call to action with data-lps-cta. A \
form must use method=\"post\" and no action. No <script>, no event handler attributes, no \
iframes, no external stylesheets or fonts. Never claim facts about the lead you were not given.";

async fn read_bounded(response: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut response = response;
    let mut bytes = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                bytes.extend_from_slice(&chunk);
                if bytes.len() > MAX_ANSWER_BYTES {
                    return Err("The model's answer was too large.".to_owned());
                }
            }
            Ok(None) => return Ok(bytes),
            Err(_) => return Err("The model's answer was cut off.".to_owned()),
        }
    }
}

fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let seconds: u64 = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(seconds))
}

/// `choices[0].message.content` as `{html, css}`, tolerating a fenced code block around it.
fn parse_answer(bytes: &[u8]) -> Result<DesignDraft, String> {
    let unusable = |why: &str| format!("The model's answer could not be used: {why}.");
    let reply: Value = serde_json::from_slice(bytes).map_err(|_| unusable("not JSON"))?;
    let content = reply["choices"][0]["message"]["content"]
        .as_str()
        .ok_or_else(|| unusable("no message content"))?;
    let content = content.trim();
    let content = content
        .strip_prefix("```json")
        .or_else(|| content.strip_prefix("```"))
        .map(|rest| rest.trim_end().trim_end_matches("```"))
        .unwrap_or(content);
    let design: Value =
        serde_json::from_str(content.trim()).map_err(|_| unusable("its content is not JSON"))?;
    let html = design["html"]
        .as_str()
        .filter(|html| !html.trim().is_empty())
        .ok_or_else(|| unusable("no `html`"))?;
    let css = design["css"].as_str().unwrap_or_default();
    Ok(DesignDraft {
        html: html.to_owned(),
        css: css.to_owned(),
    })
}

/// Which premade design each group of words points to, in order of preference.
const KEYWORDS: [(&str, &[&str]); 5] = [
    (
        "demo-invite",
        &["demo", "walkthrough", "book", "meeting", "call", "trial"],
    ),
    (
        "event-invite",
        &["event", "webinar", "conference", "dinner", "rsvp", "invite"],
    ),
    (
        "proposal",
        &[
            "proposal", "pricing", "price", "pilot", "offer", "plan", "quote",
        ],
    ),
    (
        "case-study",
        &["case", "story", "results", "customer", "success", "study"],
    ),
    (
        "personal-note",
        &["note", "letter", "personal", "reconnect", "thank", "follow"],
    ),
];

/// The offline generator: the premade design whose words the prompt uses most (the spotlight
/// design when none), with the prompt's first sentence as the page's introduction.
pub fn offline(prompt: &str) -> DesignDraft {
    let words: Vec<String> = prompt
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let score = |keys: &[&str]| {
        words
            .iter()
            .filter(|w| keys.iter().any(|k| w.starts_with(k)))
            .count()
    };
    let key = KEYWORDS
        .iter()
        .map(|(key, keys)| (*key, score(keys)))
        .filter(|(_, score)| *score > 0)
        .max_by_key(|(_, score)| *score)
        .map_or("spotlight", |(key, _)| key);
    let design = premade::all()
        .into_iter()
        .find(|p| p.key == key)
        .expect("every keyword names a premade design");
    let intro = first_sentence(prompt);
    let html = if intro.is_empty() {
        design.html.to_owned()
    } else {
        format!(
            "<p class=\"lps-intro\">{}</p>\n{}",
            crate::render::escape_html(&intro),
            design.html
        )
    };
    let css = format!(
        "{}\n.lps-intro {{ margin: 0; padding: .8rem 6vw; font: 600 1rem/1.4 system-ui, sans-serif; \
         background: #f1f5f9; color: #0f172a; }}\n",
        design.css
    );
    DesignDraft { html, css }
}

/// The prompt's first sentence (at most 200 characters), without template delimiters.
fn first_sentence(prompt: &str) -> String {
    let sentence = prompt
        .split(['.', '!', '?', '\n'])
        .map(str::trim)
        .find(|s| !s.is_empty())
        .unwrap_or_default();
    sentence
        .chars()
        .filter(|c| !matches!(c, '{' | '}' | '%' | '#'))
        .take(200)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offline_generator_picks_by_words_and_writes_the_brief_in() {
        let design = offline("Invite CFOs to our cash-flow webinar on Thursday. Keep it short.");
        assert!(design.html.contains("Save my seat"), "the event design");
        assert!(
            design
                .html
                .contains("Invite CFOs to our cash-flow webinar on Thursday</p>")
        );
        let design = offline("Something {{ evil }} <b>bold</b>");
        assert!(
            design
                .html
                .contains("Something  evil  &lt;b&gt;bold&lt;/b&gt;"),
            "{}",
            design.html
        );
        assert!(crate::render::check(&design.html, &design.css).is_ok());
    }

    #[test]
    fn answers_are_read_with_or_without_a_code_fence() {
        let wrap = |content: &str| {
            json!({"choices": [{"message": {"content": content}}]})
                .to_string()
                .into_bytes()
        };
        let plain = parse_answer(&wrap(r#"{"html":"<p>Hi</p>","css":"p{}"}"#)).unwrap();
        assert_eq!(plain.html, "<p>Hi</p>");
        let fenced =
            parse_answer(&wrap("```json\n{\"html\":\"<p>Hi</p>\",\"css\":\"\"}\n```")).unwrap();
        assert_eq!(fenced.html, "<p>Hi</p>");
        assert!(parse_answer(&wrap("I cannot help with that")).is_err());
        assert!(parse_answer(b"<html>").is_err());
        assert!(parse_answer(&wrap(r#"{"css":"p{}"}"#)).is_err());
    }
}
