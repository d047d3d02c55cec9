//! `/dashboard/leads/import`: a CSV file of leads imported from the app (owners and members).
//! The file is uploaded once, streamed to core as it arrives (`crate::csv_upload`, as
//! `POST /leads/import-csv` does; never held whole), and staged there; then the mapping step
//! (`/dashboard/leads/import/{job_id}`) shows every column with its first values and where
//! core would put it, and the first rows as they would be stored; a changed mapping is
//! previewed, then the import starts (core maps the staged rows again and remembers the
//! mapping for the workspace's next file with the same headers). The same address then shows
//! the job's progress, live (`/events`, the job's stream, read by `assets/import.js`), and its
//! summary: created, updated, rejected, with the rejected rows as a CSV (`/rejected.csv`).
//! An upload left at the mapping step is deleted by core after an hour.

use std::collections::BTreeMap;

use axum::extract::{Path, Query, Request, State};
use axum::response::{IntoResponse, Redirect, Response};
use http::{HeaderMap, StatusCode, header};
use lps::csv_import::{CsvFile, LeadField};
use lps::proto;
use serde::Serialize;

use super::leads::Choice;
use super::{Notice, Settings, SignedIn, forged, plural, redirect_with, screen, unavailable};
use crate::core_client::Core;
use crate::csv_upload::{self, Acting, CSV_LIMIT_BYTES, Fed, Unsent};
use crate::http::html_page::message;
use crate::http::session_cookie::as_credential;

/// The fields of the upload form read before its file: a few short ones.
const FIELD_LIMIT_BYTES: usize = 1024;
/// The most fields before the file.
const FIELDS_MOST: usize = 8;

/// A signed-in person's calls to core, for the upload's blocking reader.
struct Person {
    core: Core,
    token: String,
}

impl Acting for Person {
    fn core(&self) -> &Core {
        &self.core
    }

    fn request<T>(&self, message: T) -> tonic::Request<T> {
        as_credential(&self.token, message)
    }
}

#[derive(Serialize)]
struct UploadView {
    csrf: String,
    workspaces: Vec<Choice>,
    workspace_id: i64,
    campaigns: Vec<Choice>,
    campaign_id: Option<i64>,
    audiences: Vec<Choice>,
    limit_mb: usize,
}

/// The workspace a request names, if the person is in it, else their first.
fn workspace_of(
    query: &BTreeMap<String, String>,
    person: &proto::GetSessionResponse,
) -> Option<i64> {
    let asked = query
        .get("workspace_id")
        .and_then(|id| id.parse::<i64>().ok());
    person
        .workspaces
        .iter()
        .find(|w| Some(w.id) == asked)
        .or_else(|| person.workspaces.first())
        .map(|w| w.id)
}

/// `GET /dashboard/leads/import`: the upload form.
pub async fn upload_form(
    State(core): State<Core>,
    SignedIn(token, person): SignedIn,
    headers: HeaderMap,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let Some(workspace_id) = workspace_of(&query, &person) else {
        return super::leads::no_workspace();
    };
    let campaigns = match core
        .campaigns()
        .list_campaigns(as_credential(
            &token,
            proto::ListCampaignsRequest {
                workspace_id: Some(workspace_id),
            },
        ))
        .await
    {
        Ok(reply) => reply.into_inner().campaigns,
        Err(status) => return unavailable(&status),
    };
    let audiences = match core
        .audiences()
        .list_audiences(as_credential(
            &token,
            proto::ListAudiencesRequest {
                workspace_id: Some(workspace_id),
            },
        ))
        .await
    {
        Ok(reply) => reply.into_inner().audiences,
        Err(status) => return unavailable(&status),
    };
    let view = UploadView {
        csrf: person.csrf_token.clone(),
        workspaces: person
            .workspaces
            .iter()
            .map(|w| Choice {
                value: w.id,
                label: w.name.clone(),
            })
            .collect(),
        workspace_id,
        campaigns: campaigns
            .into_iter()
            .map(|c| Choice {
                value: c.id,
                label: c.name,
            })
            .collect(),
        campaign_id: query.get("campaign_id").and_then(|id| id.parse().ok()),
        audiences: audiences
            .into_iter()
            .map(|a| Choice {
                value: a.id,
                label: a.name,
            })
            .collect(),
        limit_mb: CSV_LIMIT_BYTES / (1024 * 1024),
    };
    screen(&headers, "Import leads", "import.html", view)
}

/// `POST /dashboard/leads/import`: the upload (`multipart/form-data`: `csrf_token`,
/// `workspace_id`, `campaign_id`, optional `audience_id`, then `file`, last). The file's rows
/// are staged in core as they arrive; the answer is the mapping step.
pub async fn upload(
    State(core): State<Core>,
    settings: Settings,
    SignedIn(token, person): SignedIn,
    request: Request,
) -> Response {
    let back = "/dashboard/leads/import";
    let alert = |text: &str| redirect_with(&settings, back, &Notice::alert(text));
    let Some(boundary) = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| multer::parse_boundary(value).ok())
    else {
        return alert("Choose a CSV file to import.");
    };
    let limits = multer::Constraints::new().size_limit(
        multer::SizeLimit::new()
            .per_field(FIELD_LIMIT_BYTES as u64)
            // The file's own limit is counted as it streams (`csv_upload`), which says so.
            .for_field("file", u64::MAX),
    );
    let mut form = multer::Multipart::with_constraints(
        request.into_body().into_data_stream(),
        boundary,
        limits,
    );
    let mut fields = BTreeMap::new();
    let file = loop {
        match form.next_field().await {
            Ok(Some(field)) if field.name() == Some("file") => break field,
            Ok(Some(field)) if fields.len() < FIELDS_MOST => {
                let name = field.name().unwrap_or_default().to_owned();
                match field.text().await {
                    Ok(text) => {
                        fields.insert(name, text);
                    }
                    Err(_) => return alert("The form could not be read."),
                }
            }
            Ok(_) => return alert("Choose a CSV file to import."),
            Err(err) if crate::http::server::is_slow_body(&err) => {
                return message(
                    StatusCode::REQUEST_TIMEOUT,
                    "Too slow",
                    "The file came too slowly; please try again.",
                    None,
                );
            }
            Err(_) => return alert("The form could not be read."),
        }
    };
    if let Some(refusal) = forged(&person, &fields) {
        return refusal;
    }
    let number = |name: &str| fields.get(name).and_then(|v| v.trim().parse::<i64>().ok());
    let start = proto::StartCsvImportRequest {
        workspace_id: number("workspace_id"),
        campaign_id: number("campaign_id"),
        audience_id: number("audience_id"),
        headers: Vec::new(),
        mapping: Vec::new(),
        from: Some("dashboard-import".to_owned()),
    };
    if start.campaign_id.is_none() {
        return alert("Choose the campaign whose pages the leads get.");
    }
    let (frames, fed) = csv_upload::receive(file);
    let person = Person {
        core: core.clone(),
        token,
    };
    let handle = tokio::runtime::Handle::current();
    let staged = tokio::task::spawn_blocking(move || stage(&handle, &person, start, frames)).await;
    let fed = fed.await.unwrap_or(Fed::Whole);
    let too_large = format!(
        "The file is over {} MB; split it, or use `lps import`.",
        CSV_LIMIT_BYTES / (1024 * 1024)
    );
    match (staged, fed) {
        (Ok(Ok(job_id)), _) => {
            Redirect::to(&format!("/dashboard/leads/import/{job_id}")).into_response()
        }
        (_, Fed::TooLarge) => alert(&too_large),
        (_, Fed::TooSlow) => alert("The file came too slowly; please try again."),
        (Ok(Err(Staging::Refused(status))), _) if status.code() == tonic::Code::Unavailable => {
            unavailable(&status)
        }
        (Ok(Err(Staging::Refused(status))), _) => alert(status.message()),
        (Ok(Err(Staging::NotCsv(reason))), _) => {
            alert(&format!("This file cannot be imported: {reason}"))
        }
        (Err(err), _) => {
            tracing::error!(error = %err, "reading a dashboard CSV upload failed");
            alert("The file could not be read; please try again.")
        }
    }
}

/// Why an upload was not staged.
enum Staging {
    NotCsv(lps::csv_import::NotCsv),
    Refused(tonic::Status),
}

/// Reads the upload (on a blocking thread): its header row starts the job, its rows are
/// staged, and the job waits for the mapping step. Answers the job's id.
fn stage(
    handle: &tokio::runtime::Handle,
    person: &Person,
    mut start: proto::StartCsvImportRequest,
    frames: csv_upload::Frames,
) -> Result<String, Staging> {
    let mut file = CsvFile::open(frames).map_err(Staging::NotCsv)?;
    start.headers = file.headers.clone();
    let started = handle
        .block_on(person.core.leads().start_csv_import(person.request(start)))
        .map_err(Staging::Refused)?
        .into_inner();
    match csv_upload::send_rows(handle, person, &started.job_id, &mut file) {
        Ok(0) => {
            let abandon = person.request(proto::FinishCsvImportRequest {
                job_id: started.job_id.clone(),
                abandon: true,
                mapping: Vec::new(),
            });
            let _ = handle.block_on(person.core.leads().finish_csv_import(abandon));
            Err(Staging::Refused(tonic::Status::invalid_argument(
                "The file has a header row but no rows.",
            )))
        }
        Ok(_) => Ok(started.job_id),
        Err(Unsent::NotCsv(reason)) => Err(Staging::NotCsv(reason)),
        Err(Unsent::Core(status)) => Err(Staging::Refused(status)),
    }
}

#[derive(Serialize)]
struct ColumnView {
    index: usize,
    header: String,
    /// The first values of the column, as in the file.
    samples: Vec<String>,
    /// What the column may go to: (target as spelled, label), the chosen one marked.
    targets: Vec<TargetChoice>,
    recognised: bool,
}

#[derive(Serialize)]
struct TargetChoice {
    value: String,
    label: String,
    chosen: bool,
}

#[derive(Serialize)]
struct PreviewRow {
    line: u64,
    /// The stored values, in the order of `keys`.
    values: Vec<String>,
    error: Option<String>,
}

#[derive(Serialize)]
struct MappingView {
    csrf: String,
    job_id: String,
    total: String,
    columns: Vec<ColumnView>,
    /// The keys the preview shows, in column order.
    keys: Vec<String>,
    previews: Vec<PreviewRow>,
    /// Whether the page previews a mapping not yet chosen (from the form).
    previewing: bool,
    /// Why the mapping asked for could not be previewed.
    alert: Option<String>,
}

#[derive(Serialize)]
struct ProgressView {
    job_id: String,
    workspace_id: i64,
    campaign_id: i64,
    running: bool,
    failed_job: bool,
    processed: i64,
    total: i64,
    progress_text: String,
    created: i64,
    updated: i64,
    rejected: i64,
    error: Option<String>,
    errors: Vec<String>,
}

/// `GET /dashboard/leads/import/{job_id}`: the mapping step while the file is staged (a
/// `column_N` per column previews that mapping), else the import's progress and summary.
pub async fn import_page(
    State(core): State<Core>,
    SignedIn(token, person): SignedIn,
    headers: HeaderMap,
    Path(job_id): Path<String>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let get = |mapping: Vec<String>| {
        let request = as_credential(
            &token,
            proto::GetCsvImportRequest {
                job_id: Some(job_id.clone()),
                mapping,
            },
        );
        let core = core.clone();
        async move { core.leads().get_csv_import(request).await }
    };
    let staged = match get(Vec::new()).await {
        Ok(reply) => reply.into_inner(),
        Err(status) => return not_shown(&status),
    };
    if !staged.receiving {
        return progress_page(&core, &token, &headers, job_id, staged).await;
    }
    let chosen = choices(&staged.columns, &query);
    let previewing = !chosen.is_empty();
    let staged = if previewing {
        match get(chosen).await {
            Ok(reply) => reply.into_inner(),
            // A mapping core refuses (two columns for one field, say): the job's, saying why.
            Err(status) if status.code() == tonic::Code::InvalidArgument => {
                let alert = Some(status.message().to_owned());
                return mapping_page(&person, &headers, job_id, staged, false, alert);
            }
            Err(status) => return not_shown(&status),
        }
    } else {
        staged
    };
    mapping_page(&person, &headers, job_id, staged, previewing, None)
}

fn mapping_page(
    person: &proto::GetSessionResponse,
    headers: &HeaderMap,
    job_id: String,
    staged: proto::GetCsvImportResponse,
    previewing: bool,
    alert: Option<String>,
) -> Response {
    let columns: Vec<ColumnView> = staged
        .columns
        .iter()
        .enumerate()
        .map(|(index, column)| ColumnView {
            index,
            header: column.header.clone(),
            samples: staged
                .rows
                .iter()
                .filter_map(|row| row.fields.get(index))
                .filter(|value| !value.trim().is_empty())
                .take(3)
                .cloned()
                .collect(),
            targets: targets(&column.header, &column.target),
            recognised: column.recognised,
        })
        .collect();
    let mut keys: Vec<String> = Vec::new();
    for column in &staged.columns {
        let key = match column.target.as_str() {
            "ignore" => continue,
            target => target.strip_prefix("custom:").unwrap_or(target).to_owned(),
        };
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let previews = staged
        .previews
        .into_iter()
        .map(|preview| PreviewRow {
            line: preview.line,
            values: keys
                .iter()
                .map(|key| preview.values.get(key).cloned().unwrap_or_default())
                .collect(),
            error: preview.error,
        })
        .collect();
    let view = MappingView {
        csrf: person.csrf_token.clone(),
        job_id,
        total: plural(staged.total_rows, "row", "rows"),
        columns,
        keys,
        previews,
        previewing,
        alert,
    };
    screen(
        headers,
        "Import leads: columns",
        "import_mapping.html",
        view,
    )
}

/// Where a column may go: every lead field, a custom variable named from its header (or the
/// one chosen), or nowhere; `target` marked.
fn targets(header: &str, target: &str) -> Vec<TargetChoice> {
    let mut choices: Vec<(String, String)> = LeadField::ALL
        .iter()
        .map(|field| (field.key().to_owned(), field_label(*field).to_owned()))
        .collect();
    if let Some(key) = lps::csv_import::custom_key(header) {
        choices.push((format!("custom:{key}"), format!("Custom variable “{key}”")));
    }
    if let Some(key) = target.strip_prefix("custom:")
        && !choices.iter().any(|(value, _)| value == target)
    {
        choices.push((target.to_owned(), format!("Custom variable “{key}”")));
    }
    choices.push(("ignore".to_owned(), "Leave out".to_owned()));
    choices
        .into_iter()
        .map(|(value, label)| TargetChoice {
            chosen: value == target,
            value,
            label,
        })
        .collect()
}

fn field_label(field: LeadField) -> &'static str {
    match field {
        LeadField::Email => "Email",
        LeadField::FirstName => "First name",
        LeadField::LastName => "Last name",
        LeadField::CompanyName => "Company name",
        LeadField::CompanyDomain => "Company domain",
        LeadField::Title => "Job title",
        LeadField::Phone => "Phone",
        LeadField::SocialProfileUrl => "LinkedIn or other profile URL",
    }
}

/// The mapping a form chose, `Header=target` per column (`column_N` fields), if it chose one.
fn choices(columns: &[proto::CsvColumn], form: &BTreeMap<String, String>) -> Vec<String> {
    columns
        .iter()
        .enumerate()
        .filter_map(|(index, column)| {
            let target = form.get(&format!("column_{index}"))?;
            Some(format!("{}={target}", column.header))
        })
        .collect()
}

async fn progress_page(
    core: &Core,
    token: &str,
    headers: &HeaderMap,
    job_id: String,
    staged: proto::GetCsvImportResponse,
) -> Response {
    let status = match core
        .jobs()
        .get_job_status(as_credential(
            token,
            proto::GetJobStatusRequest {
                job_id: Some(job_id.clone()),
            },
        ))
        .await
    {
        Ok(reply) => reply.into_inner(),
        Err(status) => return not_shown(&status),
    };
    use proto::job_status::State;
    let state = State::try_from(status.status).unwrap_or(State::Unspecified);
    let running = !matches!(state, State::Completed | State::Failed);
    let stored = status.processed_rows - status.failed_rows;
    let view = ProgressView {
        job_id,
        workspace_id: staged.workspace_id,
        campaign_id: staged.campaign_id,
        running,
        failed_job: state == State::Failed,
        processed: status.processed_rows,
        total: status.total_rows,
        progress_text: format!(
            "{} of {} handled",
            status.processed_rows,
            plural(status.total_rows, "row", "rows")
        ),
        created: status.created_rows,
        updated: (stored - status.created_rows).max(0),
        rejected: status.failed_rows,
        error: status.error,
        errors: status
            .errors
            .iter()
            .take(5)
            .map(|e| e.message.clone())
            .collect(),
    };
    screen(headers, "Import leads", "import_progress.html", view)
}

/// A job that cannot be shown: not found (or not the person's), or core unavailable.
fn not_shown(status: &tonic::Status) -> Response {
    match status.code() {
        tonic::Code::NotFound | tonic::Code::InvalidArgument | tonic::Code::PermissionDenied => {
            message(
                StatusCode::NOT_FOUND,
                "Not found",
                "This import does not exist (an upload left at its mapping step is deleted after an hour).",
                Some(crate::http::html_page::Link {
                    href: "/dashboard/leads/import",
                    text: "Import a file",
                }),
            )
        }
        _ => unavailable(status),
    }
}

/// `POST /dashboard/leads/import/{job_id}`: the mapping step's answer, with a `column_N` per
/// column: `action` `preview` shows the rows under those columns, `start` queues the import
/// under them, `cancel` deletes the upload.
pub async fn start(
    State(core): State<Core>,
    settings: Settings,
    SignedIn(token, person): SignedIn,
    Path(job_id): Path<String>,
    axum::extract::Form(form): axum::extract::Form<BTreeMap<String, String>>,
) -> Response {
    if let Some(refusal) = forged(&person, &form) {
        return refusal;
    }
    let here = format!("/dashboard/leads/import/{job_id}");
    let staged = match core
        .leads()
        .get_csv_import(as_credential(
            &token,
            proto::GetCsvImportRequest {
                job_id: Some(job_id.clone()),
                mapping: Vec::new(),
            },
        ))
        .await
    {
        Ok(reply) => reply.into_inner(),
        Err(status) => return not_shown(&status),
    };
    let action = form.get("action").map(String::as_str);
    if action == Some("preview") {
        let mut query = form_urlencoded::Serializer::new(String::new());
        for (name, value) in form.iter().filter(|(name, _)| name.starts_with("column_")) {
            query.append_pair(name, value);
        }
        return Redirect::to(&format!("{here}?{}", query.finish())).into_response();
    }
    let cancel = action == Some("cancel");
    let finish = proto::FinishCsvImportRequest {
        job_id: job_id.clone(),
        abandon: cancel,
        mapping: if cancel {
            Vec::new()
        } else {
            choices(&staged.columns, &form)
        },
    };
    match core
        .leads()
        .finish_csv_import(as_credential(&token, finish))
        .await
    {
        Ok(_) if cancel => redirect_with(
            &settings,
            "/dashboard/leads/import",
            &Notice::news("The upload was deleted; nothing was imported."),
        ),
        Ok(_) => Redirect::to(&here).into_response(),
        Err(status) if status.code() == tonic::Code::InvalidArgument => {
            redirect_with(&settings, &here, &Notice::alert(status.message()))
        }
        Err(status) => not_shown(&status),
    }
}

/// `GET /dashboard/leads/import/{job_id}/events`: the job's progress as Server-Sent Events
/// (core's `WatchJob`), each `{status, processed_rows, total_rows, failed_rows}`.
pub async fn events(
    State(core): State<Core>,
    SignedIn(token, _): SignedIn,
    Path(job_id): Path<String>,
) -> Response {
    use axum::response::sse::{Event, KeepAlive, Sse};
    use tokio_stream::StreamExt;
    let watch = proto::WatchJobRequest {
        job_id: Some(job_id),
    };
    let stream = match core.jobs().watch_job(as_credential(&token, watch)).await {
        Ok(reply) => reply.into_inner(),
        Err(status) => return not_shown(&status),
    };
    let events = stream.map_while(|item| item.ok()).map(|status| {
        let state = proto::job_status::State::try_from(status.status)
            .map(|s| s.as_str_name().to_ascii_lowercase())
            .unwrap_or_default();
        let event = Event::default().json_data(serde_json::json!({
            "status": state,
            "processed_rows": status.processed_rows,
            "total_rows": status.total_rows,
            "failed_rows": status.failed_rows,
        }));
        Ok::<_, std::convert::Infallible>(event.unwrap_or_default())
    });
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// `GET /dashboard/leads/import/{job_id}/rejected.csv`: the rows the import rejected, as they
/// were in the file, with their line and why (`GET /leads/export-rejected-csv`'s file).
pub async fn rejected(
    State(core): State<Core>,
    SignedIn(token, _): SignedIn,
    Path(job_id): Path<String>,
) -> Response {
    use tokio_stream::StreamExt;
    let request = proto::ExportCsvImportRejectsRequest {
        job_id: Some(job_id),
    };
    let stream = match core
        .leads()
        .export_csv_import_rejects(as_credential(&token, request))
        .await
    {
        Ok(reply) => reply.into_inner(),
        Err(status) => return not_shown(&status),
    };
    let mut csv = crate::spreadsheet::RejectsCsv::default();
    let chunks = stream.map(move |batch| match batch {
        Ok(batch) => Ok(csv.write(batch)),
        Err(status) => {
            tracing::warn!(%status, "a download of rejected rows stopped");
            Err(std::io::Error::other("core stopped answering"))
        }
    });
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"rejected-rows.csv\"",
            ),
            (header::CACHE_CONTROL, "no-store"),
        ],
        axum::body::Body::from_stream(chunks),
    )
        .into_response()
}

/// The import screens' script (first-party): the progress bar follows the job live.
pub async fn script() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        include_str!("assets/import.js"),
    )
        .into_response()
}
