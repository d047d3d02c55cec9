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
//! summary (imported: created and updated, failed) and a CSV of the rejected rows with their reasons.
//! The file is read as it is sent, a few batches in memory at a time, and read again for the
//! rejected rows: its rows are never held, whatever its size.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use lps::csv_import::{self, CsvFile, Mapping};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::announce;

mod api;
mod jobs;

use api::Api;
use jobs::follow_all;

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
    let mut created = 0u64;
    let mut jobs: Vec<String> = Vec::with_capacity(outcomes.len());
    for (outcome, first) in outcomes.into_iter().zip(batch_starts) {
        for (index, message) in outcome.failed {
            failed.insert(first + index as u64, message);
        }
        created += outcome.created;
        jobs.push(outcome.job);
    }
    let imported = mapped - failed.len() as u64;
    let updated = imported.saturating_sub(created);
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
                "created": created,
                "updated": updated,
                "failed": rejected_rows,
                "rejects_file": (rejected_rows > 0).then(|| rejects_path.display().to_string()),
                "job_ids": job_ids,
            })
            .to_string(),
        );
    } else {
        let mut line = format!(
            "Imported {imported} rows: {created} new leads, {updated} updated; {rejected_rows} failed"
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
