//! `lps import FILE`: loads a CSV of leads through the public API, as an integration would (the
//! same validation and rate limits). The file is read by core's reader and its columns mapped
//! by core's recognition (`lps::csv_import`, as `POST /leads/import-csv` and the dashboard do):
//! `--map 'Header=field'` overrides a column, `--dry-run` prints the mapping and the first rows
//! as they would be stored and sends nothing. Each later row is a lead. Rows go in batches (of
//! `--batch` rows or about 8 MiB of values) to `POST /leads/import-to-workspace` (into
//! `--campaign`'s pages and `--audience` when given), each batch with an `Idempotency-Key` made from the file's content and the batch's place in
//! it, so an interrupted import run again with the same file makes no second job (and, the
//! leads being matched by email, no duplicate). Four batches are sent at once, and each job is
//! followed as soon as it is made (the gRPC `WatchJob` stream with `--grpc`, else the job's
//! Server-Sent Events, `GET /leads/get-status/stream`), moving a progress bar; at the end a
//! summary (imported, duplicates, failed) and a CSV of the rejected rows with their reasons.
//! The file is read as it is sent, a few batches in memory at a time, and read again for the
//! rejected rows: its rows are never held, whatever its size.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use lps::csv_import::{self, CsvFile, Mapping};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::announce;
use crate::operations;

#[derive(Args)]
pub struct ImportArgs {
    /// The CSV file: a header row, then one lead per row (UTF-8 with or without a BOM, or
    /// Windows-1252; `,`, `;` or tab; quoted fields may hold line breaks).
    file: PathBuf,
    /// A column's field over the recognised one, `Header=field` (`email`, `first_name`,
    /// `last_name`, `company_name`, `company_domain`, `title`, `phone`, `social_profile_url`,
    /// `custom:NAME` or `ignore`); repeatable.
    #[arg(long = "map", value_name = "HEADER=FIELD")]
    map: Vec<String>,
    /// Print the mapping and the first rows as they would be stored; send nothing.
    #[arg(long)]
    dry_run: bool,
    /// Where lps serves HTTP, e.g. `http://127.0.0.1:8080`.
    #[arg(
        long,
        env = "LPS_URL",
        required_unless_present = "dry_run",
        default_value = ""
    )]
    url: String,
    /// An API key of the workspace.
    #[arg(
        long,
        env = "LPS_API_KEY",
        required_unless_present = "dry_run",
        default_value = ""
    )]
    key: String,
    #[arg(long, required_unless_present = "dry_run", default_value_t = 0)]
    workspace: i64,
    /// A campaign whose pages the leads get.
    #[arg(long)]
    campaign: Option<i64>,
    /// An audience the leads join.
    #[arg(long)]
    audience: Option<i64>,
    /// Leads per request (a batch is also sent once it holds about 8 MiB of values).
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(1..=25_000))]
    batch: u64,
    /// Core's gRPC address, to follow jobs by `WatchJob` instead of polling.
    #[arg(long, env = "LPS_GRPC_URL")]
    grpc: Option<String>,
    /// Where rejected rows are written (default: FILE with `.rejects.csv`).
    #[arg(long)]
    rejects: Option<PathBuf>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    json: bool,
}

/// Rows `--dry-run` shows.
const PREVIEW_ROWS: usize = 5;
/// Batches being sent at once, and jobs followed at once.
const BATCHES_IN_FLIGHT: usize = 4;
/// About the most bytes of values in one batch: well under the API's 16 MiB body limit
/// whatever the rows' length.
const BATCH_BYTES: usize = 8 * 1024 * 1024;

pub async fn run(args: ImportArgs) -> anyhow::Result<()> {
    let open = || {
        std::fs::File::open(&args.file).with_context(|| format!("reading {}", args.file.display()))
    };
    let mut file = CsvFile::open(std::io::BufReader::new(open()?))
        .map_err(|reason| anyhow::anyhow!("{}: {reason}", args.file.display()))?;
    let choices = args
        .map
        .iter()
        .map(|entry| csv_import::parse_choice(entry))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|message| anyhow::anyhow!("--map: {message}"))?;
    let mapping = Mapping::recognise(&file.headers)
        .with_choices(&choices)
        .map_err(|message| anyhow::anyhow!("--map: {message}"))?;
    if args.dry_run {
        return dry_run(&mut file, &mapping);
    }
    let header = file.headers.clone();
    let api = Api::new(&args.url, &args.key)?;

    // Keys that tie each batch to this file, mapping and target: a rerun replays instead of
    // redoing.
    let fingerprint = {
        let mut hash = Sha256::new();
        std::io::copy(&mut open()?, &mut hash)?;
        hash.update(format!("{:?}", mapping.columns));
        hash.update(format!(
            "{}:{:?}:{:?}:{}",
            args.workspace, args.campaign, args.audience, args.batch
        ));
        hex::encode(&hash.finalize()[..12])
    };

    // The file is read as it is sent, a few batches in memory at a time; the rows are never
    // held. Each job is followed, and what it made of its rows gathered, as soon as it is
    // made, while later batches are still being sent.
    let progress = ProgressBar::new(0);
    progress.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} leads stored {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let (made, jobs_made) = tokio::sync::mpsc::unbounded_channel();
    let follower = tokio::spawn(follow_all(
        api.clone(),
        args.grpc.clone(),
        jobs_made,
        progress.clone(),
    ));
    let mut sending: VecDeque<tokio::task::JoinHandle<anyhow::Result<String>>> = VecDeque::new();
    let (mut mapped, mut unmapped) = (0u64, 0u64);
    let mut batches = 0usize;
    // Each batch's first row's place among the rows sent (batches close on bytes as well).
    let mut batch_starts: Vec<u64> = Vec::new();
    let mut batch: Vec<LeadValues> = Vec::with_capacity(args.batch as usize);
    let mut batch_bytes = 0usize;
    loop {
        let row = file.next_row()?;
        let done = row.is_none();
        if let Some(row) = row {
            match mapping.values(&row.fields) {
                Ok(values) => {
                    mapped += 1;
                    batch_bytes += values
                        .iter()
                        .map(|(k, v)| k.len() + v.len() + 8)
                        .sum::<usize>();
                    batch.push(LeadValues { values });
                }
                Err(_) => unmapped += 1,
            }
        }
        let full = batch.len() as u64 == args.batch || batch_bytes >= BATCH_BYTES;
        if full || (done && !batch.is_empty()) {
            batch_bytes = 0;
            batch_starts.push(mapped - batch.len() as u64);
            progress.set_length(mapped);
            // Written once, sent as it is on every attempt.
            let body = serde_json::to_vec(&Batch {
                workspace_id: args.workspace,
                leads: std::mem::take(&mut batch),
                from: "lps import",
                campaign_ids: args.campaign.map(|campaign| [campaign]),
                audience_id: args.audience,
            })?;
            let key = format!("lps-import-{fingerprint}-{batches}");
            batches += 1;
            progress.set_message(format!("(sending batch {batches})"));
            let api = api.clone();
            sending.push_back(tokio::spawn(async move {
                let answer: Value = api
                    .post("/leads/import-to-workspace", &key, body.into())
                    .await?;
                answer["job_id"]
                    .as_str()
                    .map(str::to_owned)
                    .with_context(|| format!("no job_id in {answer}"))
            }));
            if sending.len() == BATCHES_IN_FLIGHT
                && let Some(oldest) = sending.pop_front()
            {
                let _ = made.send(oldest.await??);
            }
        }
        if done {
            break;
        }
    }
    for sent in sending {
        let _ = made.send(sent.await??);
    }
    drop(made);
    let total_rows = mapped + unmapped;
    progress.set_message("(waiting for the jobs)");
    let outcomes = follower.await??;
    progress.finish_and_clear();

    // What each job made of its rows: the failed ones by their place among the rows sent.
    let mut failed: HashMap<u64, String> = HashMap::new();
    let mut leads_seen: HashSet<i64> = HashSet::new();
    let mut jobs: Vec<String> = Vec::with_capacity(outcomes.len());
    for (outcome, first) in outcomes.into_iter().zip(batch_starts) {
        for (index, message) in outcome.failed {
            failed.insert(first + index as u64, message);
        }
        leads_seen.extend(outcome.leads);
        jobs.push(outcome.job);
    }
    let imported = mapped - failed.len() as u64;
    let duplicates = imported.saturating_sub(leads_seen.len() as u64);
    let rejected_rows = unmapped + failed.len() as u64;
    let rejects_path = args
        .rejects
        .clone()
        .unwrap_or_else(|| rejects_path_for(&args.file));
    if rejected_rows > 0 {
        // The file read again, each rejected row written as it is met.
        let mut again = CsvFile::open(std::io::BufReader::new(open()?))
            .map_err(|reason| anyhow::anyhow!("{}: {reason}", args.file.display()))?;
        write_rejects(&rejects_path, &header, &mut again, &mapping, &failed)?;
    }
    let job_ids: Vec<&str> = jobs.iter().map(String::as_str).collect();
    if args.json {
        announce(
            &json!({
                "rows": total_rows,
                "imported": imported,
                "leads": leads_seen.len(),
                "duplicates": duplicates,
                "failed": rejected_rows,
                "rejects_file": (rejected_rows > 0).then(|| rejects_path.display().to_string()),
                "job_ids": job_ids,
            })
            .to_string(),
        );
    } else {
        let mut line = format!(
            "Imported {imported} rows into {} leads ({duplicates} duplicates); {} failed",
            leads_seen.len(),
            rejected_rows
        );
        if rejected_rows > 0 {
            line.push_str(&format!(": see {}", rejects_path.display()));
        }
        announce(&line);
    }
    Ok(())
}

/// Prints where each column goes and the first rows as they would be stored.
fn dry_run<R: std::io::Read>(file: &mut CsvFile<R>, mapping: &Mapping) -> anyhow::Result<()> {
    let mut out = String::from("Column -> field\n");
    for column in &mapping.columns {
        let how = if column.recognised {
            "recognised"
        } else {
            "not recognised"
        };
        out.push_str(&format!(
            "  {} -> {} ({how})\n",
            column.header,
            column.target.spelled()
        ));
    }
    out.push_str("First rows as they would be stored:\n");
    for _ in 0..PREVIEW_ROWS {
        let Some(row) = file.next_row()? else { break };
        match mapping.values(&row.fields) {
            Ok(values) => out.push_str(&format!("  line {}: {}\n", row.line, json!(values))),
            Err(reason) => out.push_str(&format!("  line {}: rejected: {reason}\n", row.line)),
        }
    }
    announce(out.trim_end());
    Ok(())
}

fn rejects_path_for(file: &Path) -> PathBuf {
    let stem = file
        .file_stem()
        .map_or_else(|| "import".into(), |s| s.to_string_lossy().into_owned());
    file.with_file_name(format!("{stem}.rejects.csv"))
}

/// The rejected rows, read again from the file: their line, the reason, then their fields
/// under the file's header. A row is rejected here when it is not a lead, or when its job
/// failed it (`failed`, by the row's place among the rows that were sent).
fn write_rejects<R: std::io::Read>(
    path: &Path,
    header: &[String],
    file: &mut CsvFile<R>,
    mapping: &Mapping,
    failed: &HashMap<u64, String>,
) -> anyhow::Result<()> {
    let mut writer = csv::WriterBuilder::new()
        .flexible(true)
        .from_path(path)
        .with_context(|| format!("writing {}", path.display()))?;
    let mut first = vec!["line".to_owned(), "reason".to_owned()];
    first.extend(header.iter().cloned());
    writer.write_record(&first)?;
    let mut sent = 0u64;
    while let Some(csv_import::Row { line, fields }) = file.next_row()? {
        let reason = match mapping.values(&fields) {
            Ok(_) => {
                let at = sent;
                sent += 1;
                match failed.get(&at) {
                    Some(reason) => reason.clone(),
                    None => continue,
                }
            }
            Err(reason) => reason,
        };
        let mut record = vec![line.to_string(), reason];
        record.extend(fields);
        writer.write_record(&record)?;
    }
    writer.flush()?;
    Ok(())
}

/// The API as this command uses it: JSON in and out, retries that are safe.
#[derive(Clone)]
struct Api {
    client: reqwest::Client,
    base: String,
    key: String,
}

/// Attempts per request before giving up (rate limits and network errors).
const ATTEMPTS: u32 = 8;
/// How long a 409 (the same batch still being carried out) is waited out.
const IN_FLIGHT_PATIENCE: Duration = Duration::from_secs(75);

impl Api {
    fn new(url: &str, key: &str) -> anyhow::Result<Self> {
        let url = url.trim_end_matches('/');
        let base = if url.ends_with(operations::BASE_PATH) {
            url.to_owned()
        } else {
            format!("{url}{}", operations::BASE_PATH)
        };
        Ok(Self {
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(120))
                .build()?,
            base,
            key: key.to_owned(),
        })
    }

    async fn get<T: serde::de::DeserializeOwned>(&self, path: &str) -> anyhow::Result<T> {
        self.send(|| self.client.get(format!("{}{path}", self.base)))
            .await
    }

    /// Reads the job's events (`GET /leads/get-status/stream`) until it ends, moving `advance`
    /// by each; answers the last status, or none if the stream was cut short (the job is then
    /// followed otherwise).
    async fn events(
        &self,
        job: &str,
        advance: &mut impl FnMut(u64),
    ) -> anyhow::Result<Option<Value>> {
        let mut answer = self
            .client
            .get(format!(
                "{}/leads/get-status/stream?job_id={job}",
                self.base
            ))
            .bearer_auth(&self.key)
            .timeout(Duration::from_secs(24 * 3600))
            .send()
            .await?
            .error_for_status()?;
        let mut pending: Vec<u8> = Vec::new();
        while let Some(chunk) = answer.chunk().await? {
            pending.extend_from_slice(&chunk);
            // Each event ends with a blank line; its `data:` line is the status object.
            while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = pending.drain(..end + 2).collect();
                let text = String::from_utf8_lossy(&event);
                for data in text.lines().filter_map(|line| line.strip_prefix("data:")) {
                    let status: Value = serde_json::from_str(data.trim())?;
                    advance(status["processed_rows"].as_u64().unwrap_or(0));
                    if ended(&status) {
                        return Ok(Some(status));
                    }
                }
            }
        }
        Ok(None)
    }

    /// A POST with an idempotency key: retried as it is, it is carried out once.
    async fn post<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        idempotency_key: &str,
        body: axum::body::Bytes,
    ) -> anyhow::Result<T> {
        self.send(|| {
            self.client
                .post(format!("{}{path}", self.base))
                .header("Idempotency-Key", idempotency_key)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone())
        })
        .await
    }

    /// Sends until answered: a 429 waits `Retry-After`, a 409 (the same key still in flight)
    /// and network errors back off; any other error is the answer. A 409 is waited out for as
    /// long as the server holds a key whose request never finished (its lock, 60 s).
    async fn send<T: serde::de::DeserializeOwned>(
        &self,
        request: impl Fn() -> reqwest::RequestBuilder,
    ) -> anyhow::Result<T> {
        let mut backoff = Duration::from_millis(250);
        let in_flight_until = std::time::Instant::now() + IN_FLIGHT_PATIENCE;
        let mut attempt = 1;
        loop {
            match request().bearer_auth(&self.key).send().await {
                Ok(answer) if answer.status().is_success() => {
                    return answer.json().await.context("reading the answer");
                }
                // Not a failed attempt: the first request with this key is still being carried out.
                Ok(answer)
                    if answer.status() == reqwest::StatusCode::CONFLICT
                        && std::time::Instant::now() < in_flight_until =>
                {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
                Ok(answer)
                    if matches!(answer.status().as_u16(), 429 | 503) && attempt < ATTEMPTS =>
                {
                    let wait = answer
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse::<u64>().ok())
                        .map_or(backoff, Duration::from_secs);
                    tokio::time::sleep(wait).await;
                }
                Ok(answer) => {
                    let status = answer.status();
                    let text = answer.text().await.unwrap_or_default();
                    bail!("the API answered {status}: {text}");
                }
                Err(err) if attempt < ATTEMPTS => {
                    tracing::warn!(error = %err, "request failed; retrying");
                    tokio::time::sleep(backoff).await;
                }
                Err(err) => return Err(err).context("the API could not be reached"),
            }
            attempt += 1;
            backoff = (backoff * 2).min(Duration::from_secs(10));
        }
    }
}

/// A batch as `POST /leads/import-to-workspace` takes it.
#[derive(serde::Serialize)]
struct Batch {
    workspace_id: i64,
    leads: Vec<LeadValues>,
    from: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    campaign_ids: Option<[i64; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    audience_id: Option<i64>,
}

#[derive(serde::Serialize)]
struct LeadValues {
    values: std::collections::BTreeMap<String, String>,
}

/// Of a lead `GET /leads/get-leads` lists, what the summary counts.
#[derive(serde::Deserialize)]
struct MadeLead {
    lead_id: i64,
}

/// What a job made of its batch.
struct Outcome {
    job: String,
    /// The failed rows: (index in the batch, why).
    failed: Vec<(usize, String)>,
    /// The leads its rows were stored as.
    leads: Vec<i64>,
}

/// Follows the jobs as they are made, four at a time, each until it ends (moving the bar by
/// the rows stored), then reads what it made of its rows; answers in the order they were made.
async fn follow_all(
    api: Api,
    grpc: Option<String>,
    mut made: tokio::sync::mpsc::UnboundedReceiver<String>,
    progress: ProgressBar,
) -> anyhow::Result<Vec<Outcome>> {
    let stored = Arc::new(AtomicU64::new(0));
    let mut outcomes = Vec::new();
    let mut following: VecDeque<tokio::task::JoinHandle<anyhow::Result<Outcome>>> = VecDeque::new();
    while let Some(job) = made.recv().await {
        let (api, grpc, stored, progress) =
            (api.clone(), grpc.clone(), stored.clone(), progress.clone());
        following.push_back(tokio::spawn(async move {
            // Each job adds what it stored since it last said.
            let mut counted = 0u64;
            let advance = move |processed: u64| {
                if processed > counted {
                    let added = processed - counted;
                    let total = stored.fetch_add(added, Ordering::Relaxed) + added;
                    progress.set_position(total);
                    counted = processed;
                }
            };
            let last = follow(&api, grpc.as_deref(), &job, advance).await?;
            outcome(&api, job, last).await
        }));
        if following.len() == BATCHES_IN_FLIGHT
            && let Some(oldest) = following.pop_front()
        {
            outcomes.push(oldest.await??);
        }
    }
    for followed in following {
        outcomes.push(followed.await??);
    }
    Ok(outcomes)
}

/// What an ended job made of its rows (its last status, when it was read following it).
async fn outcome(api: &Api, job: String, last: Option<Value>) -> anyhow::Result<Outcome> {
    let status: Value = match last {
        Some(status) => status,
        None => api.get(&format!("/leads/get-status?job_id={job}")).await?,
    };
    let mut failed = Vec::new();
    for error in status["errors"].as_array().into_iter().flatten() {
        if let (Some(index), Some(message)) = (error["index"].as_u64(), error["message"].as_str()) {
            failed.push((index as usize, message.to_owned()));
        }
    }
    let failed_rows = status["failed_rows"].as_u64().unwrap_or(0);
    if failed_rows > failed.len() as u64 {
        bail!("job {job}: more failed rows than the status lists ({failed_rows})");
    }
    let processed = status["processed_rows"].as_u64().unwrap_or(0);
    // A job whose every row failed made no lead (its leads would be a 503 "NO_LEADS").
    let leads = if processed > failed_rows {
        let made: Vec<MadeLead> = api.get(&format!("/leads/get-leads?job_id={job}")).await?;
        made.into_iter().map(|lead| lead.lead_id).collect()
    } else {
        Vec::new()
    };
    Ok(Outcome { job, failed, leads })
}

/// Follows one job until it ends: its gRPC stream (`--grpc`), else its Server-Sent Events
/// (`GET /leads/get-status/stream`, one request however long it runs), else polling
/// `GET /leads/get-status`. Answers its last status as `GET /leads/get-status` does, when it
/// was read that way.
async fn follow(
    api: &Api,
    grpc: Option<&str>,
    job: &str,
    mut advance: impl FnMut(u64),
) -> anyhow::Result<Option<Value>> {
    if let Some(url) = grpc
        && let Ok(mut stream) = watch(url, &api.key, job).await
    {
        while let Ok(Some(status)) = stream.message().await {
            advance(status.processed_rows.max(0) as u64);
        }
        return Ok(None);
    }
    if let Ok(Some(last)) = api.events(job, &mut advance).await {
        return Ok(Some(last));
    }
    loop {
        let status: Value = api.get(&format!("/leads/get-status?job_id={job}")).await?;
        advance(status["processed_rows"].as_u64().unwrap_or(0));
        if ended(&status) {
            return Ok(Some(status));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Whether a job's status is its last.
fn ended(status: &Value) -> bool {
    matches!(status["status"].as_str(), Some("completed" | "failed"))
}

/// `JobsService.WatchJob` for the job, with the key.
async fn watch(
    url: &str,
    key: &str,
    job: &str,
) -> anyhow::Result<tonic::Streaming<lps::proto::JobStatus>> {
    let channel = tonic::transport::Endpoint::from_shared(url.to_owned())?
        .connect_timeout(Duration::from_secs(3))
        .connect()
        .await?;
    let mut request = tonic::Request::new(lps::proto::WatchJobRequest {
        job_id: Some(job.to_owned()),
    });
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {key}").parse()?);
    let mut client = lps::proto::jobs_service_client::JobsServiceClient::new(channel);
    Ok(client.watch_job(request).await?.into_inner())
}
