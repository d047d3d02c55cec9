//! `/dashboard/leads/import`: a CSV file of leads imported from the app (owners and members).
//! The file is uploaded once, streamed to core as it arrives (`crate::csv_upload`, as
//! `POST /leads/import-csv` does; never held whole), and staged there; then the mapping step
//! (`/dashboard/leads/import/{job_id}`) shows every column with its first values and where
//! core would put it, and the first rows as they would be stored; a changed mapping is
//! previewed, then the import starts (core keeps the mapping as the job's, by which its
//! worker maps the staged rows, and remembers the mapping for the workspace's next file with
//! the same headers). The same address then shows the job's progress, live (`/events`, the
//! job's stream, read by `assets/import.js`), and its summary: created, updated, rejected,
//! with the rejected rows as a CSV (`/rejected.csv`).
//! An upload left at the mapping step is deleted by core after an hour.
//!
//! Here the upload; the mapping step in `mapping.rs`; the progress, its events and the
//! rejected rows in `progress.rs`.

use std::collections::BTreeMap;

use axum::extract::{Query, Request, State};
use axum::response::{IntoResponse, Redirect, Response};
use http::{HeaderMap, StatusCode, header};
use lps::csv_import::CsvFile;
use lps::proto;
use serde::Serialize;

mod mapping;
mod progress;

pub use mapping::{import_page, start};
pub use progress::{events, rejected};

use super::leads::Choice;
use super::{Notice, Settings, SignedIn, forged, redirect_with, screen, unavailable};
use crate::core_client::Core;
use crate::csv_upload::{self, Acting, CSV_LIMIT_BYTES, Fed, Unsent};
use crate::http::html_page::message;
use crate::http::session_cookie::Session;
/// The fields of the upload form read before its file: a few short ones.
const FIELD_LIMIT_BYTES: usize = 1024;

/// The most fields before the file.
const FIELDS_MOST: usize = 8;

/// A signed-in person's calls to core, for the upload's blocking reader.
struct Person {
    core: Core,
    session: Session,
}

impl Acting for Person {
    fn core(&self) -> &Core {
        &self.core
    }

    fn request<T>(&self, message: T) -> tonic::Request<T> {
        self.session.request(message)
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

/// `GET /dashboard/leads/import`: the upload form.
pub async fn upload_form(
    State(core): State<Core>,
    SignedIn(session, person): SignedIn,
    headers: HeaderMap,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let Some(workspace_id) = super::chosen_workspace(&query, &person).map(|w| w.id) else {
        return super::no_workspace("Leads");
    };
    let (campaigns, audiences) =
        match super::leads::campaigns_and_audiences(&core, &session, workspace_id).await {
            Ok(both) => both,
            Err(status) => return unavailable(&status),
        };
    let view = UploadView {
        csrf: person.csrf_token.clone(),
        workspaces: Choice::workspaces(&person),
        workspace_id,
        campaigns: Choice::campaigns(&campaigns),
        campaign_id: super::number(&query, "campaign_id"),
        audiences: Choice::audiences(&audiences),
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
    SignedIn(session, person): SignedIn,
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
    let too_large = || {
        format!(
            "The file is over {} MB; split it, or use `lps import`.",
            CSV_LIMIT_BYTES / (1024 * 1024)
        )
    };
    // The form's other fields and the parts' heads, at most, besides the file.
    let allowance = FIELDS_MOST * (FIELD_LIMIT_BYTES + 256) + 1024;
    if csv_upload::announced_too_large(request.headers(), allowance) {
        csv_upload::drop_body(request.into_body()).await;
        return alert(&too_large());
    }
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
    let number = |name: &str| super::number(&fields, name);
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
        session,
    };
    let handle = tokio::runtime::Handle::current();
    let staged = tokio::task::spawn_blocking(move || stage(&handle, &person, start, frames)).await;
    let fed = fed.await.unwrap_or(Fed::Whole);
    match (staged, fed) {
        (Ok(Ok(job_id)), _) => {
            Redirect::to(&format!("/dashboard/leads/import/{job_id}")).into_response()
        }
        (_, Fed::TooLarge) => alert(&too_large()),
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

/// A job that cannot be shown: not found (or not the person's), or core unavailable.
pub(super) fn not_shown(status: &tonic::Status) -> Response {
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

/// The import screens' script (first-party): the progress bar follows the job live.
pub async fn script() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        include_str!("../assets/import.js"),
    )
        .into_response()
}
