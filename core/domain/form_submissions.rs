//! Forms visitors submit on lead pages: stored durably before the visitor is answered, and
//! read back newest first. A submission is classed as a page view is ([`VisitClass`]): one
//! from automation or a scanner network is kept and listed with its reason, but never scores,
//! never counts as engagement, and sends neither `form_submitted` nor `lead.hot`.

use std::collections::BTreeMap;

use crate::auth::Principal;
use crate::domain::announcements::{self, Receiver};
use crate::domain::callback_events::{CallbackEvent, FormSubmitted};
use crate::domain::campaigns;
use crate::domain::engagement::automation_reason;
use crate::domain::engagement_feed::FeedEvent;
use crate::domain::visit_class::VisitClass;
use crate::store::designs;
use crate::store::form_submissions::{self, NewSubmission, SubmissionRow};
use crate::{App, Result, time};

/// Fields kept of one submission, and characters kept of one value: a form post is public.
const MAX_FIELDS: usize = 50;
const MAX_VALUE_CHARS: usize = 10_000;

/// A form posted on a lead's page.
pub struct Submission {
    pub campaign_slug: String,
    pub lead_slug: String,
    pub form_id: Option<String>,
    pub ip_address: String,
    pub user_agent: String,
    /// The page's script saw `navigator.webdriver`.
    pub webdriver: bool,
    pub fields: BTreeMap<String, String>,
    /// Posted on this workspace's own domain: only its pages take the form.
    pub workspace_id: Option<i64>,
}

/// What a submission is taken for, and why when it is not a person's: automation first (a
/// webdriver, a headless or bot browser, a scanner's user agent), then a scanner network
/// (`scanner_network`, the range found). A form needs a person's hand, so what is neither is a
/// person's; there is no "unconfirmed" class for submissions.
pub fn classify(
    user_agent: &str,
    webdriver: bool,
    scanner_range: Option<&str>,
) -> (VisitClass, Option<String>) {
    if let Some(reason) = automation_reason(user_agent, webdriver) {
        return (VisitClass::Automated, Some(reason));
    }
    match scanner_range {
        Some(range) => (
            VisitClass::ScannerNetwork,
            Some(format!("from a scanner network ({range})")),
        ),
        None => (VisitClass::Person, None),
    }
}

/// Stores a submission on a live lead page; false when there is no live page at that address.
/// Each visitor address may post as often as a credential may call the API.
pub async fn submit(app: &App, submission: Submission) -> Result<bool> {
    app.limiter
        .check(&format!("form:{}", submission.ip_address))
        .await
        .into_result()?;
    let Some(page) = designs::page(
        app.db.pool(),
        &submission.campaign_slug,
        &submission.lead_slug,
    )
    .await?
    else {
        return Ok(false);
    };
    if page.is_live == 0
        || submission
            .workspace_id
            .is_some_and(|w| w != page.workspace_id)
    {
        return Ok(false);
    }
    let mut fields: BTreeMap<String, String> = submission
        .fields
        .into_iter()
        .filter(|(name, _)| !name.trim().is_empty())
        .take(MAX_FIELDS)
        .map(|(name, value)| (name, value.chars().take(MAX_VALUE_CHARS).collect()))
        .collect();
    let form_id = submission
        .form_id
        .or_else(|| fields.remove("form_id"))
        .map(|id| id.trim().to_owned())
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| "form-1".to_owned());
    let email_key = fields
        .keys()
        .find(|name| name.eq_ignore_ascii_case("email"))
        .cloned();
    let email = email_key
        .and_then(|key| fields.remove(&key))
        .map(|email| email.trim().to_owned())
        .filter(|email| !email.is_empty());
    let page_url = crate::domain::domains::page_addresses(app).await?.page_url(
        page.workspace_id,
        &submission.campaign_slug,
        &submission.lead_slug,
    );
    let fields_json = serde_json::to_string(&fields).unwrap_or_else(|_| "{}".into());
    let range = app.scanner_networks.find(&submission.ip_address);
    let (class, reason) = classify(
        &submission.user_agent,
        submission.webdriver,
        range.as_deref(),
    );
    let now = time::now();
    let mut tx = app.db.begin_write().await?;
    let id = form_submissions::insert(
        &mut *tx,
        &NewSubmission {
            workspace_id: page.workspace_id,
            campaign_id: page.campaign_id,
            lead_id: page.lead_id,
            form_id: &form_id,
            page_url: &page_url,
            ip_address: &submission.ip_address,
            email: email.as_deref(),
            fields: &fields_json,
            class: class.as_str(),
            reason: reason.as_deref(),
        },
        now,
    )
    .await?;
    if class != VisitClass::Person {
        tx.commit().await?;
        tracing::info!(
            class = class.as_str(),
            reason,
            "a form submission kept, not counted"
        );
        return Ok(true);
    }
    // Scored first, so what the submission's message says of the lead's score counts it.
    let mut scores = crate::domain::score::Evidence::default();
    scores.add(
        page.workspace_id,
        page.campaign_id,
        page.lead_id,
        crate::domain::score::FORM,
        now,
    );
    let hot = scores.apply(app, &mut tx).await?;
    // The submission, announced to whoever listens (the lead's callback address, the
    // workspace's channels) in the same transaction: the outbox delivers it.
    let listeners =
        announcements::listeners_of_lead(&mut tx, page.workspace_id, page.lead_id).await?;
    let mut announced = false;
    if let Some(listeners) = listeners {
        let event = CallbackEvent::FormSubmitted(FormSubmitted {
            lead_id: page.lead_id,
            campaign_id: page.campaign_id,
            submission_id: id,
            form_id: form_id.clone(),
            page_url: page_url.clone(),
            email: email.clone(),
            fields: serde_json::to_value(&fields).unwrap_or_default(),
            created_at: time::iso8601(&time::to_proto(now)),
        });
        let to = Receiver {
            workspace_id: page.workspace_id,
            url: listeners.callback_url.as_deref(),
            job_id: None,
        };
        announced = announcements::announce(&mut tx, app, &to, vec![event], now).await?;
    }
    let event = FeedEvent {
        event: "form_submitted".to_owned(),
        workspace_id: page.workspace_id,
        campaign_id: page.campaign_id,
        lead_id: page.lead_id,
        occurred_at: now,
        seconds: 0,
        target: Some(form_id),
    };
    crate::domain::engagement::note_activity(&mut tx, std::slice::from_ref(&event)).await?;
    app.feed
        .announce(&mut tx, app.db.dialect(), std::slice::from_ref(&event))
        .await?;
    tx.commit().await?;
    app.feed.publish_local(vec![event]);
    if announced || hot {
        app.callbacks_due.notify_one();
    }
    Ok(true)
}

/// The newest submissions in a workspace (or every one the principal reaches), of one
/// campaign if given ("Campaign not found" when it is not the principal's).
pub async fn list(
    app: &App,
    principal: &Principal,
    workspace_id: Option<i64>,
    campaign_id: Option<i64>,
    before_id: Option<i64>,
    limit: i64,
) -> Result<Vec<SubmissionRow>> {
    let workspaces: Vec<i64> = match workspace_id {
        Some(id) => vec![principal.reach(&app.db, id).await?.id],
        None => principal
            .workspaces(&app.db)
            .await?
            .into_iter()
            .map(|workspace| workspace.id)
            .collect(),
    };
    if let Some(id) = campaign_id {
        let campaign = campaigns::reachable(&app.db, principal, id).await?;
        if !workspaces.contains(&campaign.workspace_id) {
            return Err(crate::Error::NotFound("Campaign not found"));
        }
    }
    Ok(form_submissions::newest(app.db.pool(), &workspaces, campaign_id, before_id, limit).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

    #[test]
    fn automation_and_scanner_networks_are_classed_and_people_are_not() {
        assert_eq!(classify(FIREFOX, false, None), (VisitClass::Person, None));
        let (class, reason) = classify(FIREFOX, true, None);
        assert_eq!(class, VisitClass::Automated);
        assert!(reason.unwrap().contains("webdriver"));
        let headless = FIREFOX.replace("Firefox", "HeadlessChrome");
        assert_eq!(classify(&headless, false, None).0, VisitClass::Automated);
        assert_eq!(classify("", false, None).0, VisitClass::Automated);
        let (class, reason) = classify(FIREFOX, false, Some("203.0.113.0/24"));
        assert_eq!(class, VisitClass::ScannerNetwork);
        assert_eq!(reason.unwrap(), "from a scanner network (203.0.113.0/24)");
    }
}
