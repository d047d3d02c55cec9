//! A CSV file imported as one job: its columns mapped (the workspace's remembered choices for
//! the same header row, else recognised by `crate::csv_import`), its rows staged as the caller
//! reads the file, then queued for the worker at the file's end, or deleted when the file
//! could not be read to its end (nothing stored). Staged rows wait in `job_chunks` as `staged`
//! and the worker only claims `pending` ones.

use std::collections::BTreeMap;

use uuid::Uuid;

use crate::auth::Principal;
use crate::csv_import::{self, MAX_COLUMNS, Mapping, Row, normalise_header};
use crate::domain::campaigns;
use crate::domain::jobs::{self, JobOptions};
use crate::domain::lead::LeadPayload;
use crate::domain::leads::audience_in;
use crate::error::FieldViolation;
use crate::store::csv_imports;
use crate::store::jobs::{CHUNK_LEADS, NewJob};
use crate::{App, Error, Result, time};

/// Most rows one call may stage.
pub const MAX_ROWS_PER_CALL: usize = CHUNK_LEADS;

/// The file's columns as they will be stored: the caller's choices (`Header=field`) or, when
/// there are none, the workspace's remembered ones, over recognition.
pub async fn map_columns(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    headers: &[String],
    choices: &[String],
) -> Result<Mapping> {
    principal.reach(&app.db, workspace_id).await?;
    resolve(app, workspace_id, headers, choices).await
}

async fn resolve(
    app: &App,
    workspace_id: i64,
    headers: &[String],
    choices: &[String],
) -> Result<Mapping> {
    if headers.is_empty() || headers.iter().all(|h| h.trim().is_empty()) {
        return Err(invalid("headers", "The file has no header row."));
    }
    if headers.len() > MAX_COLUMNS {
        return Err(invalid(
            "headers",
            &format!(
                "The file has {} columns; at most {MAX_COLUMNS} are accepted.",
                headers.len()
            ),
        ));
    }
    let remembered;
    let choices = if choices.is_empty() {
        remembered = csv_imports::remembered(app.db.pool(), workspace_id, &headers_key(headers))
            .await?
            .and_then(|json| serde_json::from_str::<Vec<String>>(&json).ok())
            .unwrap_or_default();
        &remembered
    } else {
        choices
    };
    let parsed = choices
        .iter()
        .map(|entry| csv_import::parse_choice(entry))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|message| invalid("mapping", &message))?;
    Mapping::recognise(headers)
        .with_choices(&parsed)
        .map_err(|message| invalid("mapping", &message))
}

fn invalid(field: &str, message: &str) -> Error {
    Error::invalid(FieldViolation::new(field, message))
}

/// What identifies a header row for remembering its mapping: its normalised headers.
fn headers_key(headers: &[String]) -> String {
    headers
        .iter()
        .map(|h| normalise_header(h))
        .collect::<Vec<_>>()
        .join("\t")
}

/// The mapping written as choices, one `Header=target` per column (what a job and the
/// remembered mapping keep).
fn spelled(mapping: &Mapping) -> Vec<String> {
    mapping
        .columns
        .iter()
        .map(|c| format!("{}={}", c.header, c.target.spelled()))
        .collect()
}

/// What `POST /leads/import-csv` asks for.
pub struct Start {
    pub workspace_id: i64,
    pub campaign_id: i64,
    pub audience_id: Option<i64>,
    pub headers: Vec<String>,
    pub choices: Vec<String>,
    pub from: Option<String>,
}

/// Makes the job that receives the file's rows; remembers choices given for the workspace.
pub async fn start(app: &App, principal: &Principal, start: Start) -> Result<(String, Mapping)> {
    let campaign = campaigns::reachable(&app.db, principal, start.campaign_id).await?;
    if campaign.workspace_id != start.workspace_id {
        return Err(Error::NotFound("Campaign not found"));
    }
    let audience_id = audience_in(&app.db, campaign.workspace_id, start.audience_id).await?;
    let mapping = resolve(app, campaign.workspace_id, &start.headers, &start.choices).await?;
    let options = JobOptions {
        from: start.from,
        csv: Some(jobs::CsvJob {
            headers: start.headers.clone(),
            choices: spelled(&mapping),
        }),
        ..JobOptions::default()
    };
    let options = serde_json::to_string(&options).map_err(|e| Error::Internal(e.into()))?;
    let id = Uuid::new_v4().to_string();
    let now = time::now();
    let mut tx = app.db.begin_write().await?;
    crate::store::jobs::insert(
        &mut *tx,
        &NewJob {
            id: &id,
            workspace_id: campaign.workspace_id,
            kind: "upsert",
            campaign_id: Some(campaign.id),
            audience_id,
            callback_url: None,
            options: &options,
            total_rows: 0,
        },
        now,
    )
    .await?;
    if !start.choices.is_empty() {
        let choices =
            serde_json::to_string(&spelled(&mapping)).map_err(|e| Error::Internal(e.into()))?;
        csv_imports::remember(
            &mut *tx,
            campaign.workspace_id,
            &headers_key(&start.headers),
            &choices,
            now,
        )
        .await?;
    }
    tx.commit().await?;
    Ok((id, mapping))
}

/// The job's mapping if it is a CSV import still receiving its file.
async fn receiving(app: &App, principal: &Principal, job_id: &str) -> Result<(i64, Mapping)> {
    let job = jobs::reachable(&app.db, principal, job_id).await?;
    let options: JobOptions = serde_json::from_str(&job.options).unwrap_or_default();
    let Some(csv) = options.csv else {
        return Err(Error::JobNotFound);
    };
    if !csv_imports::receiving(app.db.pool(), job_id).await? {
        return Err(invalid(
            "job_id",
            "The job's file was already read to its end.",
        ));
    }
    let parsed = csv
        .choices
        .iter()
        .filter_map(|entry| csv_import::parse_choice(entry).ok())
        .collect::<Vec<_>>();
    let mapping = Mapping::recognise(&csv.headers)
        .with_choices(&parsed)
        .map_err(|e| Error::Internal(anyhow::anyhow!(e)))?;
    Ok((job.total_rows, mapping))
}

/// A row as the lead it will be, or a lead that fails with why it is not one.
fn payload(mapping: &Mapping, row: &Row) -> LeadPayload {
    match mapping.values(&row.fields) {
        Ok(values) => LeadPayload {
            values,
            ..LeadPayload::default()
        },
        Err(reason) => LeadPayload {
            values: BTreeMap::new(),
            invalid: Some(format!("Line {}: {reason}", row.line)),
            ..LeadPayload::default()
        },
    }
}

/// Stages the next rows of the file; returns how many are staged in all.
pub async fn add_rows(
    app: &App,
    principal: &Principal,
    job_id: &str,
    rows: Vec<Row>,
) -> Result<i64> {
    if rows.len() > MAX_ROWS_PER_CALL {
        return Err(invalid(
            "rows",
            &format!("At most {MAX_ROWS_PER_CALL} rows may be sent at once."),
        ));
    }
    let (staged, mapping) = receiving(app, principal, job_id).await?;
    if rows.is_empty() {
        return Ok(staged);
    }
    let leads: Vec<LeadPayload> = rows.iter().map(|row| payload(&mapping, row)).collect();
    let chunks: Vec<(usize, String)> = leads
        .chunks(CHUNK_LEADS)
        .map(|chunk| serde_json::to_string(chunk).map(|json| (chunk.len(), json)))
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| Error::Internal(e.into()))?;
    let mut tx = app.db.begin_write().await?;
    let total = csv_imports::stage(&mut tx, job_id, staged, &chunks).await?;
    tx.commit().await?;
    Ok(total)
}

/// Queues the staged rows (the file was read to its end), or deletes the job and its rows.
pub async fn finish(app: &App, principal: &Principal, job_id: &str, abandon: bool) -> Result<i64> {
    let (staged, _) = receiving(app, principal, job_id).await?;
    let mut tx = app.db.begin_write().await?;
    if abandon {
        csv_imports::abandon(&mut tx, job_id).await?;
        tx.commit().await?;
        return Ok(0);
    }
    if staged == 0 {
        csv_imports::abandon(&mut tx, job_id).await?;
        tx.commit().await?;
        return Err(invalid("file", "The file has a header row but no rows."));
    }
    csv_imports::queue(&mut *tx, job_id).await?;
    tx.commit().await?;
    app.work.notify_one();
    Ok(staged)
}
