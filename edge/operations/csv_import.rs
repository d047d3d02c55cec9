//! `POST /leads/import-csv` (extension): a CSV file as the body, streamed. The file is read
//! as it arrives by core's reader (`lps::csv_import`: encoding, delimiter, what is not a CSV)
//! on a blocking thread, its header row sent to core (`StartCsvImport`, which maps the
//! columns), then its rows a thousand at a time (`AddCsvImportRows`), then its end
//! (`FinishCsvImport`); a file that cannot be read to its end abandons the job, so nothing is
//! stored. Memory is bounded by a few body frames and one batch of rows, whatever the size.

use std::io::{self, Read};

use axum::body::Bytes;
use axum::extract::{RawQuery, Request, State};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use lps::csv_import::{CsvFile, NotCsv, Row};
use lps::proto;
use lps::wire::FieldViolation;
use serde::Deserialize;
use utoipa::IntoParams;

use super::caller::{Caller, Reply};
use super::error::{ApiError, ErrorBody};
use super::input::{Check, Input, Lenient, query_object};
use super::leads::JobIdBody;
use crate::core_client::Core;
use crate::rest::fallback::{body_over, body_too_slow};

/// The largest CSV file accepted; beyond it, 413 and nothing stored.
pub const CSV_LIMIT_BYTES: usize = 50 * 1024 * 1024;
/// Rows sent to core per call.
const ROWS_PER_CALL: usize = 1_000;
/// Body frames waiting to be read (each at most hyper's frame size).
const FRAMES_BUFFERED: usize = 8;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ImportCsvQuery {
    #[param(value_type = i64)]
    pub workspace_id: Lenient<i64>,
    /// The campaign whose pages the leads get.
    #[param(value_type = i64)]
    pub campaign_id: Lenient<i64>,
    /// An audience the leads join.
    #[param(value_type = Option<i64>)]
    pub audience_id: Lenient<i64>,
    /// Choices over the recognised mapping, each `Header=field` (`email`, `first_name`,
    /// `last_name`, `company_name`, `company_domain`, `title`, `phone`, `social_profile_url`,
    /// `custom:NAME` or `ignore`): repeated (`mapping[]=...`) or comma-separated. Without it,
    /// the workspace's mapping remembered for the same header row, else the recognised one.
    #[param(value_type = Option<Vec<String>>)]
    pub mapping: Lenient<Vec<String>>,
}

/// Extension: imports a CSV file of leads (the body, `text/csv`, at most 50 MiB, streamed)
/// into a campaign as one job; poll `GET /leads/get-status` with the `job_id` as for
/// `/leads/upsert-leads`. UTF-8 with or without a BOM, or Windows-1252; `,`, `;` or tab
/// (sniffed); quoted fields may hold line breaks. The header row's columns are recognised
/// (the exports of HubSpot, Salesforce, Apollo, Sales Navigator, lemlist, Pipedrive and
/// Google Contacts; unknown headers become custom variables) unless `mapping` says otherwise.
/// A row that is not a lead fails in the job with its line and why. A file that is not a CSV
/// (binary, a line over 1 MiB, more than 1,000 columns) is 422 and nothing is stored; over
/// 50 MiB, 413. `Idempotency-Key` is not honoured here (the file is not kept).
#[utoipa::path(post, path = "/leads/import-csv", tag = "Leads",
    params(ImportCsvQuery),
    request_body(content = String, content_type = "text/csv", description = "The CSV file"),
    responses((status = 200, body = JobIdBody),
        (status = 404, body = ErrorBody, description = "Campaign or audience not found"),
        (status = 413, body = ErrorBody, description = "The file is over 50 MiB"),
        (status = 422, body = ErrorBody, description = "Invalid fields, or the file is not a CSV")))]
pub(super) async fn import_csv(
    State(core): State<Core>,
    RawQuery(query): RawQuery,
    request: Request,
) -> Result<Reply<JobIdBody>, Response> {
    let Input(query, mut check) = Input::<ImportCsvQuery>::read(
        query_object(query.as_deref().unwrap_or("")),
        Check::default(),
    );
    let (parts, body) = request.into_parts();
    let caller = Caller::from_parts(core.clone(), &parts);
    let start = proto::StartCsvImportRequest {
        workspace_id: check.field("workspace_id", query.workspace_id),
        campaign_id: check.field("campaign_id", query.campaign_id),
        audience_id: check.field("audience_id", query.audience_id),
        mapping: check.field("mapping", query.mapping).unwrap_or_default(),
        from: Some("import-csv".to_owned()),
        headers: Vec::new(),
    };
    if !caller.has_valid_credential().await {
        // Core answers 401 without a byte of the body read.
        return Err(start_refused(caller, check, start).await);
    }
    let (frames, received) = tokio::sync::mpsc::channel(FRAMES_BUFFERED);
    let feeding = tokio::spawn(feed(body, frames));
    let later = Caller::from_parts(core, &parts);
    let handle = tokio::runtime::Handle::current();
    let reading = tokio::task::spawn_blocking(move || {
        read_file(&handle, caller, later, check, start, Frames::new(received))
    });
    let read = reading.await.unwrap_or_else(|err| {
        tracing::error!(error = %err, "reading a CSV import failed");
        Err(Failure::Api(Box::new(ApiError::from(
            tonic::Status::internal("Internal server error."),
        ))))
    });
    let fed = feeding.await.unwrap_or(Fed::Whole);
    match (read, fed) {
        (Ok(reply), _) => Ok(reply),
        // The body's own failure explains a file cut short better than what its reader saw.
        (Err(Failure::Abandoned(abandoned)), fed) => {
            let (caller, error) = *abandoned;
            match fed {
                Fed::TooLarge => Err(body_over(&caller, CSV_LIMIT_BYTES).await),
                Fed::TooSlow => Err(body_too_slow(&caller).await),
                Fed::Whole | Fed::Cut => Err(error.into_response()),
            }
        }
        (Err(Failure::Api(error)), _) => Err(error.into_response()),
    }
}

/// Asks core to start with what was found wrong; core answers with every violation.
async fn start_refused(
    caller: Caller,
    check: Check,
    start: proto::StartCsvImportRequest,
) -> Response {
    let answer = caller
        .call(
            check,
            start,
            |core, request| async move { core.leads().start_csv_import(request).await },
            |r| JobIdBody { job_id: r.job_id },
        )
        .await;
    match answer {
        Ok(reply) => reply.into_response(),
        Err(error) => error.into_response(),
    }
}

/// How the body arrived.
enum Fed {
    Whole,
    TooLarge,
    TooSlow,
    /// The client went away, or the reader stopped listening.
    Cut,
}

/// Sends the body's frames to the reader, at most [`CSV_LIMIT_BYTES`] in all.
async fn feed(body: axum::body::Body, frames: tokio::sync::mpsc::Sender<io::Result<Bytes>>) -> Fed {
    let mut stream = body.into_data_stream();
    let mut total = 0usize;
    while let Some(frame) = stream.next().await {
        let (fed, frame) = match frame {
            Ok(bytes) => {
                total += bytes.len();
                if total > CSV_LIMIT_BYTES {
                    (
                        Some(Fed::TooLarge),
                        Err(io::Error::other("the file is too large")),
                    )
                } else {
                    (None, Ok(bytes))
                }
            }
            Err(err) if crate::http::server::is_slow_body(&err) => (
                Some(Fed::TooSlow),
                Err(io::Error::other("the body came too slowly")),
            ),
            Err(err) => (Some(Fed::Cut), Err(io::Error::other(err.to_string()))),
        };
        if frames.send(frame).await.is_err() {
            return fed.unwrap_or(Fed::Cut);
        }
        if let Some(fed) = fed {
            return fed;
        }
    }
    Fed::Whole
}

/// The body's frames as a reader, on a blocking thread.
struct Frames {
    received: tokio::sync::mpsc::Receiver<io::Result<Bytes>>,
    current: Bytes,
}

impl Frames {
    fn new(received: tokio::sync::mpsc::Receiver<io::Result<Bytes>>) -> Self {
        Self {
            received,
            current: Bytes::new(),
        }
    }
}

impl Read for Frames {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            match self.received.blocking_recv() {
                Some(frame) => self.current = frame?,
                None => return Ok(0),
            }
        }
        let n = self.current.len().min(buf.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

/// Why an import did not end in a job.
enum Failure {
    /// Refused before the job existed.
    Api(Box<ApiError>),
    /// The job was abandoned (nothing stored); the caller answers why.
    Abandoned(Box<(Caller, ApiError)>),
}

/// Reads the file and hands it to core: the header row, the rows, the end.
fn read_file(
    handle: &tokio::runtime::Handle,
    caller: Caller,
    later: Caller,
    mut check: Check,
    mut start: proto::StartCsvImportRequest,
    frames: Frames,
) -> Result<Reply<JobIdBody>, Failure> {
    let mut file = match CsvFile::open(frames) {
        Ok(file) => Some(file),
        Err(reason) => {
            check.violation(FieldViolation::new("file", reason.to_string()));
            None
        }
    };
    start.headers = file.as_ref().map(|f| f.headers.clone()).unwrap_or_default();
    let started = handle
        .block_on(caller.call(
            check,
            start,
            |core, request| async move { core.leads().start_csv_import(request).await },
            |r| r.job_id,
        ))
        .map_err(|error| Failure::Api(Box::new(error)))?;
    let job_id = started.into_json().as_str().unwrap_or_default().to_owned();
    let Some(file) = file.as_mut() else {
        return Err(Failure::Api(Box::new(ApiError::from(
            tonic::Status::internal("Internal server error."),
        ))));
    };
    match send_rows(handle, &later, &job_id, file) {
        Ok(()) => {}
        Err(error) => {
            let abandon = later.request(proto::FinishCsvImportRequest {
                job_id: job_id.clone(),
                abandon: true,
            });
            let abandoned = handle.block_on(later.core().leads().finish_csv_import(abandon));
            if let Err(status) = abandoned {
                tracing::error!(%status, job_id, "an abandoned CSV import was not deleted");
            }
            return Err(Failure::Abandoned(Box::new((later, error))));
        }
    }
    let finish = later.request(proto::FinishCsvImportRequest {
        job_id: job_id.clone(),
        abandon: false,
    });
    let finished = handle
        .block_on(later.core().leads().finish_csv_import(finish))
        .map_err(|status| Failure::Api(Box::new(status.into())))?;
    Ok(Reply::new(finished, |_| JobIdBody { job_id }))
}

/// Every row of the file to core, a batch at a time.
fn send_rows(
    handle: &tokio::runtime::Handle,
    caller: &Caller,
    job_id: &str,
    file: &mut CsvFile<Frames>,
) -> Result<(), ApiError> {
    let mut batch: Vec<Row> = Vec::with_capacity(ROWS_PER_CALL);
    loop {
        let row = file.next_row().map_err(not_csv)?;
        let done = row.is_none();
        batch.extend(row);
        if batch.len() == ROWS_PER_CALL || (done && !batch.is_empty()) {
            let rows = batch
                .drain(..)
                .map(|Row { line, fields }| proto::CsvRow { line, fields })
                .collect();
            let request = caller.request(proto::AddCsvImportRowsRequest {
                job_id: job_id.to_owned(),
                rows,
            });
            handle.block_on(caller.core().leads().add_csv_import_rows(request))?;
        }
        if done {
            return Ok(());
        }
    }
}

/// A file found not to be a CSV part way: 422 on `file`, as at its start.
fn not_csv(reason: NotCsv) -> ApiError {
    let message = reason.to_string();
    ApiError::from(
        <tonic::Status as tonic_types::StatusExt>::with_error_details(
            tonic::Code::InvalidArgument,
            message.clone(),
            tonic_types::ErrorDetails::with_bad_request_violation("file", message),
        ),
    )
}
