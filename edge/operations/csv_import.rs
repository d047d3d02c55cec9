//! `POST /leads/import-csv` (extension): a CSV file as the body, streamed through
//! `crate::csv_upload` (core's reader on a blocking thread, the rows to core a thousand at a
//! time); its header row starts the job (`StartCsvImport`, which maps the columns) and its
//! end queues it (`FinishCsvImport`); a file that cannot be read to its end abandons the job,
//! so nothing is stored. And `GET /leads/export-rejected-csv` (extension): the rows an
//! import rejected, as they were, with why.

use axum::extract::{RawQuery, Request, State};
use axum::response::{IntoResponse, Response};
use lps::csv_import::{CsvFile, NotCsv};
use lps::proto;
use lps::wire::FieldViolation;
use serde::Deserialize;
use utoipa::IntoParams;

use super::caller::{Caller, Reply};
use super::error::{ApiError, ErrorBody};
use super::input::{Check, Input, Lenient, query_object};
use super::leads::JobIdBody;
use crate::core_client::Core;
use crate::csv_upload::{self, Acting, Fed, Frames, Unsent};
use crate::rest::fallback::{body_over, body_too_slow};
use crate::spreadsheet::RejectsCsv;

pub use crate::csv_upload::CSV_LIMIT_BYTES;

impl Acting for Caller {
    fn core(&self) -> &Core {
        Caller::core(self)
    }

    fn request<T>(&self, message: T) -> tonic::Request<T> {
        Caller::request(self, message)
    }
}

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
    if csv_upload::announced_too_large(&parts.headers, 0) {
        csv_upload::drop_body(body).await;
        return Err(body_over(&caller, CSV_LIMIT_BYTES).await);
    }
    let (frames, fed) = csv_upload::receive(body.into_data_stream());
    let later = Caller::from_parts(core, &parts);
    let handle = tokio::runtime::Handle::current();
    let reading = tokio::task::spawn_blocking(move || {
        read_file(&handle, caller, later, check, start, frames)
    });
    let read = reading.await.unwrap_or_else(|err| {
        tracing::error!(error = %err, "reading a CSV import failed");
        Err(Failure::Api(Box::new(ApiError::from(
            tonic::Status::internal("Internal server error."),
        ))))
    });
    let fed = fed.await.unwrap_or(Fed::Whole);
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
    if let Err(unsent) = csv_upload::send_rows(handle, &later, &job_id, file) {
        let error = match unsent {
            Unsent::NotCsv(reason) => not_csv(reason),
            Unsent::Core(status) => ApiError::from(status),
        };
        return Err(Failure::Abandoned(Box::new((later, error))));
    }
    let finish = later.request(proto::FinishCsvImportRequest {
        job_id: job_id.clone(),
        abandon: false,
        mapping: Vec::new(),
    });
    let finished = handle
        .block_on(later.core().leads().finish_csv_import(finish))
        .map_err(|status| Failure::Api(Box::new(status.into())))?;
    Ok(Reply::new(finished, |_| JobIdBody { job_id }))
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

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RejectsQuery {
    /// The job `POST /leads/import-csv` answered.
    #[param(value_type = String)]
    pub job_id: Lenient<String>,
}

/// Extension: the rows a CSV import (`POST /leads/import-csv`, the dashboard's import) could
/// not store, as a CSV file: the file's own columns as they were, then `rejected_line` (the
/// row's line in the file; the header is line 1) and `rejected_reason`. Fixed, the file imports
/// again as it is (those two columns are recognised and left out). Streamed; formula-safe.
/// Rows are kept 30 days after the import. A job that is not a CSV import is 404, as an
/// unknown one.
#[utoipa::path(get, path = "/leads/export-rejected-csv", tag = "Leads",
    params(RejectsQuery),
    responses((status = 200, content_type = "text/csv", body = String,
            description = "The rejected rows"),
        (status = 404, body = ErrorBody, description = "No CSV import with this job id"),
        (status = 422, body = ErrorBody, description = "Invalid fields")))]
pub(super) async fn export_rejected_csv(
    caller: Caller,
    Input(query, mut check): Input<RejectsQuery>,
) -> Result<Response, ApiError> {
    let request = proto::ExportCsvImportRejectsRequest {
        job_id: check.field("job_id", query.job_id),
    };
    let mut csv = RejectsCsv::default();
    caller
        .download(
            check,
            request,
            |core, request| async move { core.leads().export_csv_import_rejects(request).await },
            "text/csv; charset=utf-8",
            "attachment; filename=\"rejected-rows.csv\"",
            move |batch| csv.write(batch),
        )
        .await
}
