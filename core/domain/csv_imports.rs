//! A CSV file imported as one job: its columns mapped (the workspace's remembered choices for
//! the same header row, else recognised by `crate::csv_import`), its rows staged as the caller
//! reads the file, then queued for the worker at the file's end, or deleted when the file
//! could not be read to its end (nothing stored). Staged rows wait in `job_chunks` as `staged`,
//! kept as they were read, and the worker only claims `pending` ones: it maps each row by the
//! job's mapping as it stands when the file is queued (`chunk_leads`), so a mapping changed
//! at the mapping step rewrites nothing.

use std::collections::BTreeMap;
use std::time::Duration;

use uuid::Uuid;

use crate::auth::Principal;
use crate::csv_import::{self, MAX_COLUMNS, MAX_ROWS_PER_CALL, Mapping, Row, normalise_header};
use crate::domain::campaigns;
use crate::domain::jobs::{self, JobOptions};
use crate::domain::lead::LeadPayload;
use crate::domain::leads::audience_in;
use crate::error::FieldViolation;
use crate::store::csv_imports;
use crate::store::jobs::{CHUNK_LEADS, NewJob};
use crate::{App, Error, Result, time};

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

/// How many rows the job has staged, if it is a CSV import still receiving its file.
async fn receiving(app: &App, principal: &Principal, job_id: &str) -> Result<i64> {
    let (job, _) = csv_job(app, principal, job_id).await?;
    if !csv_imports::receiving(app.db.pool(), job_id).await? {
        return Err(invalid(
            "job_id",
            "The job's file was already read to its end.",
        ));
    }
    Ok(job.total_rows)
}

/// The job and its file if it is a CSV import the principal reaches.
async fn csv_job(
    app: &App,
    principal: &Principal,
    job_id: &str,
) -> Result<(crate::store::jobs::JobRow, jobs::CsvJob)> {
    let job = jobs::reachable(&app.db, principal, job_id).await?;
    let options: JobOptions = serde_json::from_str(&job.options).unwrap_or_default();
    match options.csv {
        Some(csv) => Ok((job, csv)),
        // Another kind of job has no file: as if there were no such import.
        None => Err(Error::NotFound("CSV import not found")),
    }
}

/// The mapping a job keeps (its choices over recognition).
pub fn job_mapping(csv: &jobs::CsvJob) -> Result<Mapping> {
    let parsed = csv
        .choices
        .iter()
        .filter_map(|entry| csv_import::parse_choice(entry).ok())
        .collect::<Vec<_>>();
    Mapping::recognise(&csv.headers)
        .with_choices(&parsed)
        .map_err(|e| Error::Internal(anyhow::anyhow!(e)))
}

/// Rows of a staged file the mapping step shows.
pub const SHOWN_ROWS: usize = 5;

/// A CSV import as the mapping step shows it.
pub struct Staged {
    pub workspace_id: i64,
    pub campaign_id: i64,
    pub audience_id: Option<i64>,
    /// Whether its rows are still staged (not yet queued).
    pub receiving: bool,
    pub total_rows: i64,
    pub mapping: Mapping,
    /// The first rows as they are in the file.
    pub rows: Vec<Row>,
    /// The same rows as they would be stored under `mapping`.
    pub previews: Vec<Preview>,
}

/// The import's file as staged, mapped by the job or, to preview them, by `choices`.
pub async fn staged(
    app: &App,
    principal: &Principal,
    job_id: &str,
    choices: &[String],
) -> Result<Staged> {
    let (job, csv) = csv_job(app, principal, job_id).await?;
    let mapping = if choices.is_empty() {
        job_mapping(&csv)?
    } else {
        resolve(app, job.workspace_id, &csv.headers, choices).await?
    };
    let receiving = csv_imports::receiving(app.db.pool(), job_id).await?;
    let rows: Vec<Row> = match csv_imports::first_staged(app.db.pool(), job_id).await? {
        Some(payload) => serde_json::from_str::<Vec<Row>>(&payload)
            .unwrap_or_default()
            .into_iter()
            .take(SHOWN_ROWS)
            .collect(),
        None => Vec::new(),
    };
    let previews = previews(&mapping, rows.clone())?;
    Ok(Staged {
        workspace_id: job.workspace_id,
        campaign_id: job.campaign_id.unwrap_or_default(),
        audience_id: job.audience_id,
        receiving,
        total_rows: job.total_rows,
        mapping,
        rows,
        previews,
    })
}

/// A staged chunk of the file as the leads its rows will be under the job's `mapping`, or
/// `None` if the chunk cannot be read as rows.
pub fn chunk_leads(mapping: &Mapping, payload: &str) -> Option<Vec<LeadPayload>> {
    let rows: Vec<Row> = serde_json::from_str(payload).ok()?;
    Some(rows.into_iter().map(|row| lead(mapping, row)).collect())
}

/// A row as the lead it will be, or a lead that fails with why it is not one; either way it
/// carries the row, given back as it was if it fails.
fn lead(mapping: &Mapping, row: Row) -> LeadPayload {
    match mapping.values(&row.fields) {
        Ok(values) => LeadPayload {
            values,
            row: Some(row),
            ..LeadPayload::default()
        },
        Err(reason) => LeadPayload {
            values: BTreeMap::new(),
            invalid: Some(format!("Line {}: {reason}", row.line)),
            row: Some(row),
            ..LeadPayload::default()
        },
    }
}

/// Most rows a preview maps.
pub const MAX_PREVIEW_ROWS: usize = 20;

/// A row of the file as the lead it would be: its values, or why it is not a lead.
pub struct Preview {
    pub line: u64,
    pub values: std::result::Result<BTreeMap<String, String>, String>,
}

/// The first rows of a file as they would be stored under `mapping`.
pub fn previews(mapping: &Mapping, rows: Vec<Row>) -> Result<Vec<Preview>> {
    if rows.len() > MAX_PREVIEW_ROWS {
        return Err(invalid(
            "rows",
            &format!("At most {MAX_PREVIEW_ROWS} rows are previewed."),
        ));
    }
    Ok(rows
        .into_iter()
        .map(|row| Preview {
            line: row.line,
            values: mapping.values(&row.fields),
        })
        .collect())
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
    let staged = receiving(app, principal, job_id).await?;
    if rows.is_empty() {
        return Ok(staged);
    }
    // The rows as read: the worker maps them by the job's mapping as it is when they are
    // queued, so a mapping chosen at the file's end costs nothing to apply.
    let chunks: Vec<(usize, String)> = rows
        .chunks(CHUNK_LEADS)
        .map(|chunk| serde_json::to_string(chunk).map(|json| (chunk.len(), json)))
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| Error::Internal(e.into()))?;
    let mut tx = app.db.begin_write().await?;
    let total = csv_imports::stage(&mut tx, job_id, staged, &chunks, time::now()).await?;
    tx.commit().await?;
    Ok(total)
}

/// Queues the staged rows (the file was read to its end), to be mapped under `choices` when
/// there are some (kept as the job's mapping and remembered for the workspace); or
/// deletes the job and its rows.
pub async fn finish(
    app: &App,
    principal: &Principal,
    job_id: &str,
    abandon: bool,
    choices: &[String],
) -> Result<i64> {
    let staged = receiving(app, principal, job_id).await?;
    let mut chosen = None;
    if !abandon && !choices.is_empty() {
        let (job, csv) = csv_job(app, principal, job_id).await?;
        let mapping = resolve(app, job.workspace_id, &csv.headers, choices).await?;
        let mut options: JobOptions = serde_json::from_str(&job.options).unwrap_or_default();
        options.csv = Some(jobs::CsvJob {
            headers: csv.headers.clone(),
            choices: spelled(&mapping),
        });
        let options = serde_json::to_string(&options).map_err(|e| Error::Internal(e.into()))?;
        let remembered =
            serde_json::to_string(&spelled(&mapping)).map_err(|e| Error::Internal(e.into()))?;
        chosen = Some((
            job.workspace_id,
            headers_key(&csv.headers),
            options,
            remembered,
        ));
    }
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
    if let Some((workspace_id, headers, options, remembered)) = chosen {
        let now = time::now();
        csv_imports::set_options(&mut *tx, job_id, &options).await?;
        csv_imports::remember(&mut *tx, workspace_id, &headers, &remembered, now).await?;
    }
    csv_imports::queue(&mut *tx, job_id).await?;
    tx.commit().await?;
    app.work.notify_one();
    Ok(staged)
}

/// Rejected rows read at a time.
pub const REJECTS_PER_BATCH: u32 = 500;
/// How long a rejected row is kept for download.
pub const REJECTS_KEPT: Duration = Duration::from_secs(30 * 24 * 3600);

/// A row of the file that was not stored: as it was, and why.
pub struct Reject {
    pub line: u64,
    pub fields: Vec<String>,
    pub reason: String,
}

/// The file's header row and its next [`REJECTS_PER_BATCH`] rejected rows after `after_line`.
pub async fn rejects(
    app: &App,
    principal: &Principal,
    job_id: &str,
    after_line: u64,
) -> Result<(Vec<String>, Vec<Reject>)> {
    let (_, csv) = csv_job(app, principal, job_id).await?;
    let rows = csv_imports::rejects(app.db.pool(), job_id, after_line, REJECTS_PER_BATCH).await?;
    let rows = rows
        .into_iter()
        .map(|(line, fields, reason)| Reject {
            line: u64::try_from(line).unwrap_or_default(),
            fields: serde_json::from_str(&fields).unwrap_or_default(),
            reason,
        })
        .collect();
    Ok((csv.headers, rows))
}

/// What the worker keeps of a CSV job's rows that failed: each row as it was, with why (the
/// reason without the `Line N: ` the job's error list puts before it).
pub fn rejected_rows<'a>(
    payloads: &'a [LeadPayload],
    reasons: impl Iterator<Item = Option<&'a str>> + 'a,
) -> Vec<(i64, String, &'a str)> {
    payloads
        .iter()
        .zip(reasons)
        .filter_map(|(payload, reason)| {
            let (row, reason) = (payload.row.as_ref()?, reason?);
            let prefix = format!("Line {}: ", row.line);
            let reason = reason.strip_prefix(prefix.as_str()).unwrap_or(reason);
            let fields = serde_json::to_string(&row.fields).ok()?;
            Some((i64::try_from(row.line).ok()?, fields, reason))
        })
        .collect()
}

/// How often abandoned imports and old rejected rows are swept, at most.
const SWEEP_EVERY: Duration = Duration::from_secs(5 * 60);

/// Sweeps now and then every [`SWEEP_EVERY`] (or half the abandonment time, if shorter), for
/// good.
pub async fn sweep_forever(app: App) {
    let every = SWEEP_EVERY
        .min(app.config.import_abandoned_after / 2)
        .max(Duration::from_millis(500));
    loop {
        match sweep(&app, time::now()).await {
            Ok((0, 0)) => {}
            Ok((abandoned, rejects)) => {
                tracing::info!(
                    abandoned,
                    rejects,
                    "abandoned CSV imports and old rejected rows swept"
                );
            }
            Err(err) => tracing::warn!(error = %err, "CSV imports not swept"),
        }
        tokio::time::sleep(every).await;
    }
}

/// Deletes CSV imports idle for the configured abandonment time (the job and its staged
/// rows, as `finish` with `abandon` does) and rejected rows older than [`REJECTS_KEPT`];
/// answers how many of each.
pub async fn sweep(app: &App, now: time::Micros) -> Result<(u64, u64)> {
    let idle_since = now - app.config.import_abandoned_after.as_micros() as i64;
    let abandoned = csv_imports::abandoned(app.db.pool(), idle_since).await?;
    for job_id in &abandoned {
        let mut tx = app.db.begin_write().await?;
        // Checked again inside the write: a row staged since makes it live.
        if csv_imports::abandoned_job(&mut *tx, job_id, idle_since).await? {
            csv_imports::abandon(&mut tx, job_id).await?;
            tracing::info!(job_id, "an abandoned CSV import was deleted");
        }
        tx.commit().await?;
    }
    let mut tx = app.db.begin_write().await?;
    let pruned =
        csv_imports::prune_rejects(&mut *tx, now - REJECTS_KEPT.as_micros() as i64).await?;
    tx.commit().await?;
    Ok((abandoned.len() as u64, pruned))
}
