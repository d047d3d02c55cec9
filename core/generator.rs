//! Page designs written from a prompt: by the model provider ([`crate::llm`]) when one is
//! configured, else by the built-in offline generator, which picks the premade design closest
//! to the prompt's words and puts the prompt's first sentence on the page as its introduction. Whatever comes back is cleaned and
//! compiled by the caller before it reaches a draft.

use crate::llm::{self, Llm, LlmConfig, LlmError};
use crate::render::premade;

/// A design: the page body (minijinja over the lead's variables) and its CSS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesignDraft {
    pub html: String,
    pub css: String,
}

pub struct Generator {
    llm: Option<Llm>,
}

impl Generator {
    pub fn new(llm: Option<LlmConfig>) -> Self {
        Self {
            llm: llm.map(Llm::new),
        }
    }

    /// A design for `prompt`; `current` is the draft to edit (`replace: false`), if any. The
    /// error is a sentence for the run's `error`.
    pub async fn design(
        &self,
        prompt: &str,
        current: Option<&DesignDraft>,
    ) -> Result<DesignDraft, String> {
        match &self.llm {
            Some(llm) => ask(llm, prompt, current).await.map_err(|err| match err {
                LlmError::Failed(problem) => {
                    format!("The design could not be generated: {problem}.")
                }
                LlmError::Unusable(why) => format!("The model's answer could not be used: {why}."),
            }),
            None => Ok(offline(prompt)),
        }
    }
}

async fn ask(
    llm: &Llm,
    prompt: &str,
    current: Option<&DesignDraft>,
) -> Result<DesignDraft, LlmError> {
    let mut user = format!("Brief:\n{prompt}\n");
    if let Some(current) = current {
        user.push_str(&format!(
            "\nEdit this current design; keep what the brief does not ask to change.\n\
             HTML:\n{}\n\nCSS:\n{}\n",
            current.html, current.css
        ));
    }
    let format = llm::string_fields_schema("page_design", &["html", "css"]);
    let content = llm.chat(SYSTEM_PROMPT, &user, Some(format)).await?;
    parse_design(&content)
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

/// The model's content as `{html, css}` (a fenced code block around it is fine).
fn parse_design(content: &str) -> Result<DesignDraft, LlmError> {
    let design = llm::json_object(content)?;
    let html = design["html"]
        .as_str()
        .filter(|html| !html.trim().is_empty())
        .ok_or_else(|| LlmError::Unusable("no `html`".to_owned()))?;
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
    fn designs_need_html() {
        let design = parse_design(r#"{"html":"<p>Hi</p>","css":"p{}"}"#).unwrap();
        assert_eq!(design.html, "<p>Hi</p>");
        assert!(parse_design(r#"{"css":"p{}"}"#).is_err());
        assert!(parse_design(r#"{"html":"  ","css":""}"#).is_err());
    }
}
