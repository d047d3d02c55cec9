//! A CSV file uploaded to lps, streamed to core as it arrives (`POST /leads/import-csv` and
//! the dashboard's import): the body's frames are handed to core's reader
//! (`lps::csv_import`: encoding, delimiter, what is not a CSV) on a blocking thread, which
//! sends the rows to the job in batches of up to 5,000 rows or about 2 MiB
//! (`AddCsvImportRows`). Memory is bounded by a few body frames and one batch of rows, whatever
//! the file's size; a file over the limit, too
//! slow or cut short stops the reading, and the job is abandoned (nothing stored). A file
//! whose request announces more than the limit is refused before any of it is read.

use std::io::{self, Read};

use axum::body::Bytes;
use futures_util::{Stream, StreamExt};
use lps::csv_import::{CsvFile, NotCsv, Row};
use lps::proto;

use crate::core_client::Core;

/// The largest CSV file accepted; beyond it, 413 and nothing stored.
pub const CSV_LIMIT_BYTES: usize = 50 * 1024 * 1024;
/// Rows sent to core per call, at most (core's `MAX_ROWS_PER_CALL`): fewer calls, fewer round
/// trips while the file is staged.
const ROWS_PER_CALL: usize = lps::csv_import::MAX_ROWS_PER_CALL;
/// Bytes of fields sent to core per call, about: a batch of long rows is sent sooner, so a
/// batch in memory stays small whatever the rows' length.
const BYTES_PER_CALL: usize = 2 * 1024 * 1024;
/// Body frames waiting to be read (each at most hyper's frame size).
const FRAMES_BUFFERED: usize = 8;
/// Bytes past the limit read and dropped before a too-large file is answered, so that the
/// answer reaches the client: a server that closes a connection with unread bytes sends a
/// reset, and a client still writing may then lose the answer (a browser shows "connection
/// reset" instead of the page saying why). A file far over the limit is still cut off.
const DRAINED_PAST_LIMIT: usize = 8 * 1024 * 1024;

/// Whether a request announces (`Content-Length`) more than a file over the limit and
/// `allowance` bytes around it (a form's other fields): such a file is refused before a byte
/// of it is read or a job is made.
pub fn announced_too_large(headers: &http::HeaderMap, allowance: usize) -> bool {
    headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok())
        .is_some_and(|length| length > (CSV_LIMIT_BYTES + allowance) as u64)
}

/// Reads and drops a body refused for its size (up to the limit and [`DRAINED_PAST_LIMIT`]
/// past it, within the body's deadline), so that the refusal reaches the client.
pub async fn drop_body(body: axum::body::Body) {
    let stream = body.into_data_stream();
    drain(std::pin::pin!(stream), CSV_LIMIT_BYTES + DRAINED_PAST_LIMIT).await;
}

/// Who an upload's calls to core act for (a REST caller, a dashboard session): the request
/// each call is made of.
pub trait Acting {
    fn core(&self) -> &Core;
    fn request<T>(&self, message: T) -> tonic::Request<T>;
}

/// How the body arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fed {
    Whole,
    TooLarge,
    TooSlow,
    /// The client went away, or the reader stopped listening.
    Cut,
}

/// The body's frames as a reader for a blocking thread, and the task feeding it (which
/// answers how the body arrived): at most [`CSV_LIMIT_BYTES`] are fed.
pub fn receive<S, E>(body: S) -> (Frames, tokio::task::JoinHandle<Fed>)
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    let (frames, received) = tokio::sync::mpsc::channel(FRAMES_BUFFERED);
    (Frames::new(received), tokio::spawn(feed(body, frames)))
}

async fn feed<S, E>(body: S, frames: tokio::sync::mpsc::Sender<io::Result<Bytes>>) -> Fed
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    let mut stream = std::pin::pin!(body);
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
            // The reader stopped (the file is not a CSV, or core refused it): the rest is read
            // and dropped, up to the limit, so that the answer saying why reaches the client
            // rather than a reset.
            if fed.is_none() {
                drain(
                    stream,
                    (CSV_LIMIT_BYTES + DRAINED_PAST_LIMIT).saturating_sub(total),
                )
                .await;
            }
            return fed.unwrap_or(Fed::Cut);
        }
        if let Some(fed) = fed {
            if fed == Fed::TooLarge {
                drain(stream, DRAINED_PAST_LIMIT).await;
            }
            return fed;
        }
    }
    Fed::Whole
}

/// Reads and drops the rest of a body, at most about `most` bytes of it.
async fn drain<S, E>(mut stream: std::pin::Pin<&mut S>, most: usize)
where
    S: Stream<Item = Result<Bytes, E>>,
{
    let mut dropped = 0usize;
    while dropped <= most {
        match stream.next().await {
            Some(Ok(bytes)) => dropped += bytes.len(),
            Some(Err(_)) | None => return,
        }
    }
}

/// The body's frames as a reader, on a blocking thread.
pub struct Frames {
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

/// Why the rows of a file did not all reach its job.
pub enum Unsent {
    /// The file turned out not to be a CSV part way.
    NotCsv(NotCsv),
    /// Core refused or could not be reached.
    Core(tonic::Status),
}

/// Sends every row of the file to the job, a batch at a time (on a blocking thread); answers
/// how many. When not all could be sent, the job is abandoned (deleted, nothing stored)
/// before answering why.
pub fn send_rows(
    handle: &tokio::runtime::Handle,
    acting: &impl Acting,
    job_id: &str,
    file: &mut CsvFile<Frames>,
) -> Result<u64, Unsent> {
    let sent = send_all(handle, acting, job_id, file);
    if sent.is_err() {
        let abandon = acting.request(proto::FinishCsvImportRequest {
            job_id: job_id.to_owned(),
            abandon: true,
            mapping: Vec::new(),
        });
        if let Err(status) = handle.block_on(acting.core().leads().finish_csv_import(abandon)) {
            tracing::error!(%status, job_id, "an abandoned CSV import was not deleted");
        }
    }
    sent
}

fn send_all(
    handle: &tokio::runtime::Handle,
    acting: &impl Acting,
    job_id: &str,
    file: &mut CsvFile<Frames>,
) -> Result<u64, Unsent> {
    let mut batch: Vec<Row> = Vec::with_capacity(ROWS_PER_CALL);
    let mut batch_bytes = 0;
    let mut sent = 0;
    loop {
        let row = file.next_row().map_err(Unsent::NotCsv)?;
        let done = row.is_none();
        if let Some(row) = row {
            batch_bytes += row.fields.iter().map(String::len).sum::<usize>();
            batch.push(row);
        }
        let full = batch.len() == ROWS_PER_CALL || batch_bytes >= BYTES_PER_CALL;
        if full || (done && !batch.is_empty()) {
            sent += batch.len() as u64;
            batch_bytes = 0;
            let rows = batch
                .drain(..)
                .map(|Row { line, fields }| proto::CsvRow { line, fields })
                .collect();
            let request = acting.request(proto::AddCsvImportRowsRequest {
                job_id: job_id.to_owned(),
                rows,
            });
            handle
                .block_on(acting.core().leads().add_csv_import_rows(request))
                .map_err(Unsent::Core)?;
        }
        if done {
            return Ok(sent);
        }
    }
}
