//! Page designs written from a prompt by the model provider ([`crate::llm`]). Without one,
//! generation is refused before it is paid for (`domain/design_runs.rs`): a premade design
//! passed off as a generated one would be a template sold for credits. Whatever comes back is
//! cleaned and compiled by the caller before it reaches a draft. With a model, a campaign's
//! prompt also drafts its words ([`Generator::copy`]).

use crate::llm::{self, Llm, LlmConfig, LlmError};
use crate::render::copy::CampaignCopy;

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

    /// Whether a model is configured (without one, a campaign's words keep their neutral
    /// defaults: the prompt is an instruction, never words for the prospect).
    pub fn has_model(&self) -> bool {
        self.llm.is_some()
    }

    /// A campaign's words drafted by the model from its brief, if it answers usable ones
    /// (within the copy's rules); `None` otherwise, or without a model.
    pub async fn copy(&self, prompt: &str) -> Option<CampaignCopy> {
        let llm = self.llm.as_ref()?;
        let format = llm::string_fields_schema(
            "campaign_copy",
            &["headline", "intro", "points", "cta_label", "signoff"],
        );
        let user = format!("Brief:\n{prompt}\n");
        let content = match llm.chat(COPY_PROMPT, &user, Some(format)).await {
            Ok(content) => content,
            Err(err) => {
                tracing::warn!(error = ?err, "a campaign's words could not be drafted");
                return None;
            }
        };
        let answer = llm::json_object(&content).ok()?;
        let text = |key: &str| answer[key].as_str().map(str::to_owned);
        let copy = CampaignCopy::default().merged(CampaignCopy {
            headline: text("headline"),
            intro: text("intro"),
            points: text("points").map(|p| p.lines().map(str::to_owned).collect()),
            cta_label: text("cta_label"),
            signoff: text("signoff"),
            ..Default::default()
        });
        copy.violations().is_empty().then_some(copy)
    }

    /// A design for `prompt`; `current` is the draft to edit (`replace: false`), if any. The
    /// error is a sentence for the run's `error` (a run queued before the model was removed
    /// ends there, and its credits are given back).
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
            None => Err(crate::error::Outage::NoModel.message().to_owned()),
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

const COPY_PROMPT: &str = "You write the words of a personalised web page a sales team sends \
to each lead. Answer a JSON object of strings: `headline` (at most 200 characters), `intro` (at \
most 1,000), `points` (two to four short points, one per line, at most 200 characters each), \
`cta_label` (the button, at most 60 characters) and `signoff` (at most 200). You may name the \
lead's values as {{ first_name | default(\"there\") }} and {{ company_name | default(\"your team\") }}. \
Never claim facts about the lead, figures or dates you were not given; no HTML.";

const SYSTEM_PROMPT: &str = "You design one personalised web page for a sales lead. Answer a \
JSON object with two strings: `html` (the page body only, no <html>, <head> or <body>) and \
`css`. The HTML is a minijinja template: use {{ first_name }}, {{ company_name }}, \
{{ company_domain }}, {{ email }} for the lead (with | default(\"...\") fallbacks), \
{{ cta_url }} for the call to action's address, {{ branding.company_name }}, \
{{ branding.logo_url }}, {{ branding.primary_color }}, {{ branding.on_primary }} (text on the \
brand colour), {{ branding.primary_text }} (the brand colour readable on white), \
{{ sender.name }}, {{ sender.title }} for the sender, and the campaign's words: \
{{ copy.headline }}, {{ copy.intro }}, {{ copy.points }} (a list), {{ copy.cta_label }}, \
{{ copy.signoff }}, {{ copy.event_when }}, {{ copy.event_where }}; wrap optional parts in \
{% if ... %}. Mark the call to action with data-lps-cta. A \
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn designs_need_html() {
        let design = parse_design(r#"{"html":"<p>Hi</p>","css":"p{}"}"#).unwrap();
        assert_eq!(design.html, "<p>Hi</p>");
        assert!(parse_design(r#"{"css":"p{}"}"#).is_err());
        assert!(parse_design(r#"{"html":"  ","css":""}"#).is_err());
    }
}
