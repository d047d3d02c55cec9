//! An import under way and done: its progress (live through the job's events), its summary,
//! and its rejected rows as a CSV.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::HeaderMap;
use lps::proto;
use serde::Serialize;

use super::not_shown;
use crate::core_client::Core;
use crate::dashboard::{SignedIn, plural, screen};
use crate::http::session_cookie::Session;

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

pub(super) async fn progress_page(
    core: &Core,
    session: &Session,
    headers: &HeaderMap,
    job_id: String,
    staged: proto::GetCsvImportResponse,
) -> Response {
    let status = match core
        .jobs()
        .get_job_status(session.request(proto::GetJobStatusRequest {
            job_id: Some(job_id.clone()),
        }))
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

/// `GET /dashboard/leads/import/{job_id}/events`: the job's progress as Server-Sent Events
/// (core's `WatchJob`), each `{status, processed_rows, total_rows, failed_rows}`.
pub async fn events(
    State(core): State<Core>,
    SignedIn(session, _): SignedIn,
    Path(job_id): Path<String>,
) -> Response {
    use axum::response::sse::{Event, KeepAlive, Sse};
    use tokio_stream::StreamExt;
    let watch = proto::WatchJobRequest {
        job_id: Some(job_id),
    };
    let stream = match core.jobs().watch_job(session.request(watch)).await {
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
    SignedIn(session, _): SignedIn,
    Path(job_id): Path<String>,
) -> Response {
    let request = proto::ExportCsvImportRejectsRequest {
        job_id: Some(job_id),
    };
    let stream = match core
        .leads()
        .export_csv_import_rejects(session.request(request))
        .await
    {
        Ok(reply) => reply.into_inner(),
        Err(status) => return not_shown(&status),
    };
    let mut csv = crate::spreadsheet::RejectsCsv::default();
    let body =
        crate::spreadsheet::csv_stream(stream, "a download of rejected rows", move |batch| {
            csv.write(batch)
        });
    crate::spreadsheet::csv_attachment("rejected-rows.csv", body)
}
