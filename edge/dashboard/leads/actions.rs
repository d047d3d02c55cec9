//! What a person does to leads from the dashboard: acts on the leads selected in the list, or
//! on every lead its filter matches (add them to an audience, download them as CSV, erase
//! them: asked first, through core's erasure), and adds one lead, whose page link shows at
//! once.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::extract::{Form, State};
use axum::response::Response;
use lps::proto;

use super::{Filter, csv_download};
use crate::core_client::Core;
use crate::dashboard::{
    Confirmation, Notice, Settings, SignedIn, confirm, forged, plural, redirect_with, text,
    unavailable,
};
use crate::http::session_cookie::Session;

/// The most leads one action on a filtered set takes (larger sets: narrow the filter, or use
/// the API). A CSV download of a filtered set has no such bound.
const BULK_MOST: i64 = 10_000;
/// Lead ids per call to core (an erasure's most).
const IDS_PER_CALL: usize = 1_000;
/// How long adding a lead to a campaign waits for its page before saying it is on its way.
const PAGE_WAIT: Duration = Duration::from_secs(10);

/// What a bulk action is done to.
enum Scope {
    /// The leads ticked in the list (or named by `lead_ids`, as the confirmation carries them).
    Selected(Vec<i64>),
    /// Every lead the filter matches.
    All,
}

impl Scope {
    fn read(form: &BTreeMap<String, String>) -> Self {
        if form.get("scope").is_some_and(|scope| scope == "all") {
            return Self::All;
        }
        let ticked = form
            .keys()
            .filter_map(|key| key.strip_prefix("lead_"))
            .filter_map(|id| id.parse().ok());
        let listed = form
            .get("lead_ids")
            .into_iter()
            .flat_map(|ids| ids.split(','))
            .filter_map(|id| id.trim().parse().ok());
        let mut ids: Vec<i64> = ticked.chain(listed).collect();
        ids.sort_unstable();
        ids.dedup();
        Self::Selected(ids)
    }
}

/// `POST /dashboard/leads/bulk`: the list's actions (`action`: `audience`, `export`,
/// `erase`) on the selected leads or all that match (`scope`).
pub async fn bulk(
    State(core): State<Core>,
    settings: Settings,
    SignedIn(session, person): SignedIn,
    Form(form): Form<BTreeMap<String, String>>,
) -> Response {
    if let Some(refusal) = forged(&person, &form) {
        return refusal;
    }
    let Some(filter) = Filter::read(&form, &person) else {
        return crate::dashboard::no_workspace("Leads");
    };
    let back = format!("/dashboard/leads?{}", filter.query(None));
    let alert = |text: &str| redirect_with(&settings, &back, &Notice::alert(text));
    let scope = Scope::read(&form);
    if matches!(&scope, Scope::Selected(ids) if ids.is_empty()) {
        return alert("Select at least one lead, or choose all that match.");
    }
    match form.get("action").map(String::as_str) {
        Some("export") => {
            let leads = match &scope {
                Scope::All => filter.request(),
                Scope::Selected(ids) => proto::SearchLeadsRequest {
                    workspace_id: Some(filter.workspace_id),
                    lead_ids: ids.clone(),
                    ..Default::default()
                },
            };
            let request = proto::ExportLeadsRequest {
                filter: Some(leads),
                campaign_id: None,
            };
            match core.leads().export_leads(session.request(request)).await {
                Ok(reply) => csv_download(reply.into_inner()),
                Err(status) => unavailable(&status),
            }
        }
        Some("audience") => {
            let ids = match lead_ids(&core, &session, &filter, &scope).await {
                Ok(Ok(ids)) => ids,
                Ok(Err(refusal)) => return alert(&refusal),
                Err(status) => return unavailable(&status),
            };
            let outcome = add_to_audience(&core, &session, &filter, &form, &ids).await;
            let notice = match outcome {
                Ok(Ok(done)) => Notice::news(&done),
                Ok(Err(refusal)) => Notice::alert(&refusal),
                Err(status) => Notice::alert(status.message()),
            };
            redirect_with(&settings, &back, &notice)
        }
        Some("erase") => erase(&core, &session, &person, &settings, &filter, &form, scope).await,
        _ => alert("Choose what to do with the leads."),
    }
}

/// The ids of the leads a scope names: the selected, or every match (at most [`BULK_MOST`],
/// else why not).
async fn lead_ids(
    core: &Core,
    session: &Session,
    filter: &Filter,
    scope: &Scope,
) -> Result<Result<Vec<i64>, String>, tonic::Status> {
    let Scope::Selected(ids) = scope else {
        return matching_ids(core, session, filter).await;
    };
    Ok(Ok(ids.clone()))
}

/// Every lead the filter matches, read a page at a time by cursor (newest first).
async fn matching_ids(
    core: &Core,
    session: &Session,
    filter: &Filter,
) -> Result<Result<Vec<i64>, String>, tonic::Status> {
    let mut ids = Vec::new();
    let mut after = None;
    loop {
        let request = proto::SearchLeadsRequest {
            limit: Some(100),
            after,
            sort: None,
            ..filter.request()
        };
        let page = core
            .leads()
            .search_leads(session.request(request))
            .await?
            .into_inner();
        if page.total > BULK_MOST {
            return Ok(Err(format!(
                "{} match; one action takes at most {BULK_MOST}. Narrow the filter, or use the API.",
                plural(page.total, "lead", "leads")
            )));
        }
        ids.extend(page.leads.iter().map(|lead| lead.lead_id));
        match page.next_cursor {
            Some(next) if ids.len() as i64 <= BULK_MOST => after = Some(next),
            _ => return Ok(Ok(ids)),
        }
    }
}

/// Adds the leads to the audience the form names (`to_audience`), or to a new one
/// (`new_audience`); answers what was done, or why not.
async fn add_to_audience(
    core: &Core,
    session: &Session,
    filter: &Filter,
    form: &BTreeMap<String, String>,
    ids: &[i64],
) -> Result<Result<String, String>, tonic::Status> {
    if ids.is_empty() {
        return Ok(Err("No lead matches.".to_owned()));
    }
    let workspace_id = Some(filter.workspace_id);
    let mut chunks = ids.chunks(IDS_PER_CALL);
    let (audience_id, name, mut added, mut skipped) =
        if form.get("to_audience").is_some_and(|to| to == "new") {
            let Some(name) = text(form, "new_audience") else {
                return Ok(Err("Name the new audience.".to_owned()));
            };
            let first = chunks.next().unwrap_or_default();
            let created = core
                .audiences()
                .create_audience(session.request(proto::CreateAudienceRequest {
                    workspace_id,
                    name: Some(name.clone()),
                    lead_ids: first.to_vec(),
                    ..Default::default()
                }))
                .await?
                .into_inner();
            let added = created.lead_count;
            (created.audience_id, name, added, first.len() as i64 - added)
        } else {
            let Some(audience_id) =
                crate::dashboard::number(form, "to_audience").filter(|id| *id != 0)
            else {
                return Ok(Err("Choose an audience.".to_owned()));
            };
            let audiences = core
                .audiences()
                .list_audiences(session.request(proto::ListAudiencesRequest { workspace_id }))
                .await?
                .into_inner()
                .audiences;
            let Some(audience) = audiences.into_iter().find(|a| a.id == audience_id) else {
                return Ok(Err("That audience is not there any more.".to_owned()));
            };
            (audience.id, audience.name, 0, 0)
        };
    for chunk in chunks {
        let reply = core
            .audiences()
            .add_leads(session.request(proto::AudienceLeadsRequest {
                workspace_id,
                audience_id: Some(audience_id),
                lead_ids: chunk.to_vec(),
            }))
            .await?
            .into_inner();
        added += reply.added;
        skipped += reply.skipped;
    }
    let mut done = format!(
        "Added {} to the audience \u{201c}{name}\u{201d}.",
        plural(added, "lead", "leads")
    );
    match skipped {
        0 => {}
        1 => done.push_str(" 1 lead was already in it."),
        _ => done.push_str(&format!(" {skipped} leads were already in it.")),
    }
    Ok(Ok(done))
}

/// Erases the leads the scope names, once the person said yes on the page this shows first
/// (for all that match: yes to that many, so a set that grew meanwhile is asked about again).
async fn erase(
    core: &Core,
    session: &Session,
    person: &proto::GetSessionResponse,
    settings: &Settings,
    filter: &Filter,
    form: &BTreeMap<String, String>,
    scope: Scope,
) -> Response {
    let back = format!("/dashboard/leads?{}", filter.query(None));
    let ids = match lead_ids(core, session, filter, &scope).await {
        Ok(Ok(ids)) => ids,
        Ok(Err(refusal)) => return redirect_with(settings, &back, &Notice::alert(&refusal)),
        Err(status) => return unavailable(&status),
    };
    if ids.is_empty() {
        return redirect_with(settings, &back, &Notice::alert("No lead matches."));
    }
    let count = ids.len().to_string();
    let agreed =
        form.get("confirmed").is_some_and(|yes| yes == "yes") && form.get("count") == Some(&count);
    if !agreed {
        let mut fields = filter.fields();
        fields.push(("action", "erase".to_owned()));
        fields.push(("confirmed", "yes".to_owned()));
        fields.push(("count", count));
        match scope {
            Scope::All => fields.push(("scope", "all".to_owned())),
            Scope::Selected(ids) => fields.push((
                "lead_ids",
                ids.iter().map(i64::to_string).collect::<Vec<_>>().join(","),
            )),
        }
        return confirm(
            "Erase leads",
            Confirmation {
                question: format!(
                    "Erase {} and every trace of them?",
                    plural(ids.len() as i64, "lead", "leads")
                ),
                consequence: "Their values, pages (whose addresses stop working at once), visits, form submissions, enrichments and callbacks are removed for good, and campaign figures lose what they contributed. This cannot be undone.",
                action: "/dashboard/leads/bulk",
                csrf: person.csrf_token.clone(),
                fields,
                button: "Erase for good",
                back,
            },
        );
    }
    let mut erased = 0;
    for chunk in ids.chunks(IDS_PER_CALL) {
        let request = proto::DeleteLeadsRequest {
            workspace_id: Some(filter.workspace_id),
            lead_ids: chunk.to_vec(),
        };
        match core.leads().delete_leads(session.request(request)).await {
            Ok(reply) => erased += reply.into_inner().deleted,
            Err(status) => {
                let said = format!(
                    "Erased {} before this failed: {}",
                    plural(erased, "lead", "leads"),
                    status.message()
                );
                return redirect_with(settings, &back, &Notice::alert(&said));
            }
        }
    }
    let done = format!(
        "Erased {} and every trace of them.",
        plural(erased, "lead", "leads")
    );
    redirect_with(settings, &back, &Notice::news(&done))
}

/// `POST /dashboard/leads/add`: one lead, from the Leads page or a campaign's (`campaign_id`:
/// its page there, shown at once on the lead's page; without one, no page yet). Back to
/// where the form was (`from`) when it cannot be added.
pub async fn add(
    State(core): State<Core>,
    settings: Settings,
    SignedIn(session, person): SignedIn,
    Form(form): Form<BTreeMap<String, String>>,
) -> Response {
    if let Some(refusal) = forged(&person, &form) {
        return refusal;
    }
    let Some(workspace) = crate::dashboard::chosen_workspace(&form, &person) else {
        return crate::dashboard::no_workspace("Leads");
    };
    let campaign_id = crate::dashboard::number(&form, "campaign_id");
    let back = match (form.get("from").map(String::as_str), campaign_id) {
        (Some("campaign"), Some(id)) => format!("/dashboard/campaigns/{id}"),
        _ => format!("/dashboard/leads?workspace_id={}", workspace.id),
    };
    let values: BTreeMap<String, String> = ["email", "first_name", "company_name"]
        .into_iter()
        .filter_map(|key| text(&form, key).map(|value| (key.to_owned(), value)))
        .collect();
    let outcome = match campaign_id {
        Some(campaign_id) => add_with_page(&core, &session, campaign_id, values).await,
        None => add_without_page(&core, &session, workspace.id, values).await,
    };
    match outcome {
        Ok(Added::Stored { lead_id, page_url }) => {
            let said = match page_url {
                Some(url) => format!("Lead added. Their page: {url}"),
                None => "Lead added. Add them to a campaign to give them a page.".to_owned(),
            };
            redirect_with(
                &settings,
                &format!("/dashboard/leads/{lead_id}"),
                &Notice::news(&said),
            )
        }
        Ok(Added::Pending) => redirect_with(
            &settings,
            &back,
            &Notice::news("The lead is being added; their page appears in the list in a moment."),
        ),
        Ok(Added::Refused(why)) => redirect_with(&settings, &back, &Notice::alert(&why)),
        Err(status) => redirect_with(&settings, &back, &Notice::alert(status.message())),
    }
}

/// What adding one lead came to.
enum Added {
    Stored {
        lead_id: i64,
        page_url: Option<String>,
    },
    /// Queued, not stored within [`PAGE_WAIT`].
    Pending,
    /// Why the lead was not stored (its values broke a rule).
    Refused(String),
}

/// A lead's values as core reads them.
fn values_struct(values: BTreeMap<String, String>) -> prost_types::Struct {
    use prost_types::value::Kind;
    prost_types::Struct {
        fields: values
            .into_iter()
            .map(|(key, value)| {
                let value = prost_types::Value {
                    kind: Some(Kind::StringValue(value)),
                };
                (key, value)
            })
            .collect(),
    }
}

/// Upserts the lead into the campaign (the API's job, as `/leads/upsert-lead` queues it) and
/// waits for the job, so its page link can be shown at once.
async fn add_with_page(
    core: &Core,
    session: &Session,
    campaign_id: i64,
    values: BTreeMap<String, String>,
) -> Result<Added, tonic::Status> {
    let request = proto::UpsertLeadRequest {
        campaign_id: Some(campaign_id),
        from: Some("dashboard".to_owned()),
        values: Some(values_struct(values)),
        ..Default::default()
    };
    let job_id = core
        .leads()
        .upsert_lead(session.request(request))
        .await?
        .into_inner()
        .job_id;
    let watch = proto::WatchJobRequest {
        job_id: Some(job_id.clone()),
    };
    let mut statuses = core
        .jobs()
        .watch_job(session.request(watch))
        .await?
        .into_inner();
    let ended = tokio::time::timeout(PAGE_WAIT, async {
        loop {
            match statuses.message().await? {
                Some(status) if status.status() == proto::job_status::State::Completed => {
                    return Ok(Some(status));
                }
                Some(status) if status.status() == proto::job_status::State::Failed => {
                    return Ok(Some(status));
                }
                Some(_) => {}
                None => return Ok::<_, tonic::Status>(None),
            }
        }
    })
    .await;
    let status = match ended {
        Ok(Ok(Some(status))) => status,
        Ok(Ok(None)) | Err(_) => return Ok(Added::Pending),
        Ok(Err(status)) => return Err(status),
    };
    if let Some(error) = status.errors.first() {
        return Ok(Added::Refused(error.message.clone()));
    }
    let leads = core
        .jobs()
        .get_job_leads(session.request(proto::GetJobLeadsRequest {
            job_id: Some(job_id),
        }))
        .await?
        .into_inner()
        .leads;
    Ok(match leads.into_iter().next() {
        Some(lead) => Added::Stored {
            lead_id: lead.lead_id,
            page_url: lead.service_page_url,
        },
        None => Added::Refused(
            status
                .error
                .unwrap_or_else(|| "The lead could not be stored.".to_owned()),
        ),
    })
}

/// Imports the lead into the workspace at once (no campaign, so no page yet).
async fn add_without_page(
    core: &Core,
    session: &Session,
    workspace_id: i64,
    values: BTreeMap<String, String>,
) -> Result<Added, tonic::Status> {
    use prost_types::value::Kind;
    let mut lead = BTreeMap::new();
    lead.insert(
        "values".to_owned(),
        prost_types::Value {
            kind: Some(Kind::StructValue(values_struct(values))),
        },
    );
    let request = proto::ImportLeadsRequest {
        workspace_id: Some(workspace_id),
        leads: vec![proto::LeadInput {
            lead: Some(prost_types::Value {
                kind: Some(Kind::StructValue(prost_types::Struct { fields: lead })),
            }),
        }],
        from: Some("dashboard".to_owned()),
        sync: true,
        ..Default::default()
    };
    let reply = core
        .leads()
        .import_leads(session.request(request))
        .await?
        .into_inner();
    Ok(match (reply.lead_ids.first(), reply.errors.first()) {
        (Some(lead_id), _) => Added::Stored {
            lead_id: *lead_id,
            page_url: None,
        },
        (None, Some(error)) => Added::Refused(error.message.clone()),
        (None, None) => Added::Refused("The lead could not be stored.".to_owned()),
    })
}
