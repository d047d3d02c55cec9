//! `LeadsService`'s CSV imports (`services/leads.rs` delegates here): a file's columns mapped
//! and previewed, a job started, its rows staged, its end (its mapping kept, queued or abandoned),
//! the staged file read back for the mapping step, and the rejected rows streamed.

use tonic::{Request, Response, Status};

use crate::App;
use crate::auth::Principal;
use crate::csv_import;
use crate::domain::csv_imports as domain;
use crate::proto;
use crate::validate::{EarlierViolations, Validated, optional_text, required};

pub(super) async fn map_columns(
    app: &App,
    request: Request<proto::MapCsvColumnsRequest>,
) -> Result<Response<proto::MapCsvColumnsResponse>, Status> {
    let earlier = EarlierViolations::of(&request);
    let principal = &Principal::of(&request)?.clone();
    let proto::MapCsvColumnsRequest {
        workspace_id,
        headers,
        mapping,
        rows,
    } = request.into_inner();
    let (workspace_id,) = (required("workspace_id", workspace_id),).validated(&earlier)?;
    let mapping = domain::map_columns(app, principal, workspace_id, &headers, &mapping).await?;
    let previews = domain::previews(&mapping, rows.into_iter().map(csv_row).collect())?
        .into_iter()
        .map(csv_preview)
        .collect();
    Ok(Response::new(proto::MapCsvColumnsResponse {
        columns: csv_columns(mapping),
        previews,
    }))
}

pub(super) async fn start(
    app: &App,
    request: Request<proto::StartCsvImportRequest>,
) -> Result<Response<proto::StartCsvImportResponse>, Status> {
    let earlier = EarlierViolations::of(&request);
    let principal = &Principal::of(&request)?.clone();
    let proto::StartCsvImportRequest {
        workspace_id,
        campaign_id,
        audience_id,
        headers,
        mapping,
        from,
    } = request.into_inner();
    let (workspace_id, campaign_id, from) = (
        required("workspace_id", workspace_id),
        required("campaign_id", campaign_id),
        optional_text("from", from, 255),
    )
        .validated(&earlier)?;
    let start = domain::Start {
        workspace_id,
        campaign_id,
        audience_id,
        headers,
        choices: mapping,
        from,
    };
    let (job_id, mapping) = domain::start(app, principal, start).await?;
    Ok(Response::new(proto::StartCsvImportResponse {
        job_id,
        columns: csv_columns(mapping),
    }))
}

pub(super) async fn add_rows(
    app: &App,
    request: Request<proto::AddCsvImportRowsRequest>,
) -> Result<Response<proto::AddCsvImportRowsResponse>, Status> {
    let principal = &Principal::of(&request)?.clone();
    let proto::AddCsvImportRowsRequest { job_id, rows } = request.into_inner();
    let rows = rows.into_iter().map(csv_row).collect();
    let total_rows = domain::add_rows(app, principal, &job_id, rows).await?;
    Ok(Response::new(proto::AddCsvImportRowsResponse {
        total_rows,
    }))
}

pub(super) async fn finish(
    app: &App,
    request: Request<proto::FinishCsvImportRequest>,
) -> Result<Response<proto::FinishCsvImportResponse>, Status> {
    let principal = &Principal::of(&request)?.clone();
    let proto::FinishCsvImportRequest {
        job_id,
        abandon,
        mapping,
    } = request.into_inner();
    let total_rows = domain::finish(app, principal, &job_id, abandon, &mapping).await?;
    Ok(Response::new(proto::FinishCsvImportResponse { total_rows }))
}

pub(super) async fn staged(
    app: &App,
    request: Request<proto::GetCsvImportRequest>,
) -> Result<Response<proto::GetCsvImportResponse>, Status> {
    let principal = &Principal::of(&request)?.clone();
    let (job_id,) = (required("job_id", request.get_ref().job_id.clone()),).validated(&request)?;
    let proto::GetCsvImportRequest { mapping, .. } = request.into_inner();
    let domain::Staged {
        workspace_id,
        campaign_id,
        audience_id,
        receiving,
        total_rows,
        mapping,
        rows,
        previews,
    } = domain::staged(app, principal, &job_id, &mapping).await?;
    Ok(Response::new(proto::GetCsvImportResponse {
        workspace_id,
        campaign_id,
        audience_id,
        receiving,
        total_rows,
        columns: csv_columns(mapping),
        rows: rows
            .into_iter()
            .map(|csv_import::Row { line, fields }| proto::CsvRow { line, fields })
            .collect(),
        previews: previews.into_iter().map(csv_preview).collect(),
    }))
}

pub(super) async fn rejects(
    app: &App,
    request: Request<proto::ExportCsvImportRejectsRequest>,
) -> Result<Response<RejectsStream>, Status> {
    let principal = Principal::of(&request)?.clone();
    let (job_id,) = (required("job_id", request.get_ref().job_id.clone()),).validated(&request)?;
    let app = app.clone();
    let (headers, first) = domain::rejects(&app, &principal, &job_id, 0).await?;
    let (sender, receiver) = tokio::sync::mpsc::channel(1);
    tokio::spawn(async move {
        let mut message = proto::ExportCsvImportRejectsResponse {
            headers,
            rows: Vec::new(),
        };
        let mut batch = first;
        loop {
            let last = batch.last().map(|reject| reject.line);
            message.rows = batch.into_iter().map(csv_reject).collect();
            if sender.send(Ok(message)).await.is_err() {
                return;
            }
            let Some(after) = last else { return };
            let next = tokio::select! {
                next = domain::rejects(&app, &principal, &job_id, after) => next,
                _ = sender.closed() => return,
            };
            match next {
                Ok((_, rows)) if rows.is_empty() => return,
                Ok((_, rows)) => batch = rows,
                Err(error) => {
                    let _ = sender.send(Err(Status::from(error))).await;
                    return;
                }
            }
            message = proto::ExportCsvImportRejectsResponse::default();
        }
    });
    Ok(Response::new(Box::pin(
        tokio_stream::wrappers::ReceiverStream::new(receiver),
    )))
}

fn csv_columns(mapping: csv_import::Mapping) -> Vec<proto::CsvColumn> {
    mapping
        .columns
        .into_iter()
        .map(|column| proto::CsvColumn {
            target: column.target.spelled(),
            header: column.header,
            recognised: column.recognised,
        })
        .collect()
}

/// A lead as listed in job and search results.
fn csv_reject(
    domain::Reject {
        line,
        fields,
        reason,
    }: domain::Reject,
) -> proto::CsvReject {
    proto::CsvReject {
        line,
        fields,
        reason,
    }
}

pub type RejectsStream = std::pin::Pin<
    Box<
        dyn tokio_stream::Stream<Item = Result<proto::ExportCsvImportRejectsResponse, Status>>
            + Send,
    >,
>;

fn csv_row(proto::CsvRow { line, fields }: proto::CsvRow) -> csv_import::Row {
    csv_import::Row { line, fields }
}

fn csv_preview(domain::Preview { line, values }: domain::Preview) -> proto::CsvPreview {
    let (values, error) = match values {
        Ok(values) => (values.into_iter().collect(), None),
        Err(reason) => (Default::default(), Some(reason)),
    };
    proto::CsvPreview {
        line,
        values,
        error,
    }
}
