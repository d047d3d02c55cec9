//! How a file is read: its encoding and delimiter sniffed, what is not a CSV refused, its
//! header and rows read as it goes.

use std::io::{self, Read};

use super::{MAX_COLUMNS, MAX_LINE_BYTES, SNIFF_BYTES};

/// The text encodings a file may be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Windows1252,
}

/// Why a file is not a CSV of leads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotCsv {
    #[error("The file is empty.")]
    Empty,
    #[error("The file is not text (it has NUL bytes): upload a CSV file.")]
    Binary,
    #[error("The file has a line longer than {MAX_LINE_BYTES} bytes: it is not a CSV of leads.")]
    LineTooLong,
    #[error("The file has {0} columns; at most {MAX_COLUMNS} are accepted.")]
    TooManyColumns(usize),
    #[error("The file has no header row.")]
    NoHeader,
    #[error("The file could not be read as CSV: {0}")]
    Malformed(String),
}

/// The encoding and delimiter of a file, from its first bytes.
pub fn sniff(start: &[u8]) -> Result<(Encoding, u8), NotCsv> {
    if start.is_empty() {
        return Err(NotCsv::Empty);
    }
    if start.contains(&0) {
        return Err(NotCsv::Binary);
    }
    let encoding = if start.starts_with(b"\xEF\xBB\xBF") {
        Encoding::Utf8
    } else {
        match std::str::from_utf8(start) {
            Ok(_) => Encoding::Utf8,
            // Cut in the middle of a character at the sample's end: still UTF-8.
            Err(e) if e.error_len().is_none() => Encoding::Utf8,
            Err(_) => Encoding::Windows1252,
        }
    };
    Ok((encoding, sniff_delimiter(start)))
}

/// `,`, `;` or tab: the one found most often outside quotes on the header line (`,` on a
/// tie, or when none is).
pub fn sniff_delimiter(start: &[u8]) -> u8 {
    let mut counts = [0usize; 3];
    let mut quoted = false;
    for &byte in start {
        match byte {
            b'"' => quoted = !quoted,
            b'\n' if !quoted => break,
            b',' if !quoted => counts[0] += 1,
            b';' if !quoted => counts[1] += 1,
            b'\t' if !quoted => counts[2] += 1,
            _ => {}
        }
    }
    let candidates = [b',', b';', b'\t'];
    let best = (0..3).max_by_key(|&i| (counts[i], 3 - i)).unwrap_or(0);
    candidates[best]
}

/// A reader of a file's bytes as UTF-8: the byte-order mark dropped, Windows-1252 decoded,
/// lines longer than [`MAX_LINE_BYTES`] refused (an `io::Error` wrapping [`NotCsv`]).
struct Decoded<R> {
    inner: R,
    /// Bytes read ahead to sniff, not yet decoded.
    start: Vec<u8>,
    decoder: encoding_rs::Decoder,
    input: Vec<u8>,
    output: Vec<u8>,
    out_at: usize,
    line: usize,
    done: bool,
}

impl<R: Read> Read for Decoded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.out_at == self.output.len() && !self.done {
            self.output.clear();
            self.out_at = 0;
            let input = if self.start.is_empty() {
                self.input.resize(16 * 1024, 0);
                let n = self.inner.read(&mut self.input)?;
                self.input.truncate(n);
                std::mem::take(&mut self.input)
            } else {
                std::mem::take(&mut self.start)
            };
            let last = input.is_empty();
            if input.contains(&0) {
                return Err(io::Error::new(io::ErrorKind::InvalidData, NotCsv::Binary));
            }
            let mut decoded = String::with_capacity(
                self.decoder
                    .max_utf8_buffer_length(input.len())
                    .unwrap_or(input.len() * 3),
            );
            let _ = self.decoder.decode_to_string(&input, &mut decoded, last);
            self.output = decoded.into_bytes();
            self.input = input;
            if last {
                self.done = true;
            }
            for &byte in &self.output {
                self.line = if byte == b'\n' { 0 } else { self.line + 1 };
                if self.line > MAX_LINE_BYTES {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        NotCsv::LineTooLong,
                    ));
                }
            }
        }
        let n = (self.output.len() - self.out_at).min(buf.len());
        buf[..n].copy_from_slice(&self.output[self.out_at..self.out_at + n]);
        self.out_at += n;
        Ok(n)
    }
}

/// A CSV file of leads being read: its header, encoding and delimiter, then its rows.
pub struct CsvFile<R: Read> {
    pub encoding: Encoding,
    pub delimiter: u8,
    pub headers: Vec<String>,
    records: csv::StringRecordsIntoIter<Decoded<R>>,
}

/// One data row: its line in the file (the header is line 1) and its fields.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Row {
    pub line: u64,
    pub fields: Vec<String>,
}

impl<R: Read> CsvFile<R> {
    /// Sniffs the file's start and reads its header row.
    pub fn open(mut inner: R) -> Result<Self, NotCsv> {
        let mut start = Vec::with_capacity(SNIFF_BYTES);
        (&mut inner)
            .take(SNIFF_BYTES as u64)
            .read_to_end(&mut start)
            .map_err(|e| not_csv(&e))?;
        let (encoding, delimiter) = sniff(&start)?;
        if start.starts_with(b"\xEF\xBB\xBF") {
            start.drain(..3);
        }
        let decoder = match encoding {
            Encoding::Utf8 => encoding_rs::UTF_8.new_decoder_without_bom_handling(),
            Encoding::Windows1252 => encoding_rs::WINDOWS_1252.new_decoder_without_bom_handling(),
        };
        let decoded = Decoded {
            inner,
            start,
            decoder,
            input: Vec::new(),
            output: Vec::new(),
            out_at: 0,
            line: 0,
            done: false,
        };
        let mut reader = csv::ReaderBuilder::new()
            .delimiter(delimiter)
            .flexible(true)
            .has_headers(true)
            .from_reader(decoded);
        let headers: Vec<String> = reader
            .headers()
            .map_err(|e| csv_error(&e))?
            .iter()
            .map(|h| h.trim().to_owned())
            .collect();
        if headers.iter().all(String::is_empty) {
            return Err(NotCsv::NoHeader);
        }
        if headers.len() > MAX_COLUMNS {
            return Err(NotCsv::TooManyColumns(headers.len()));
        }
        Ok(CsvFile {
            encoding,
            delimiter,
            headers,
            records: reader.into_records(),
        })
    }

    /// The next row with a value (blank rows are skipped), none at the end.
    pub fn next_row(&mut self) -> Result<Option<Row>, NotCsv> {
        loop {
            let Some(record) = self.records.next() else {
                return Ok(None);
            };
            let record = record.map_err(|e| csv_error(&e))?;
            if record.len() > MAX_COLUMNS {
                return Err(NotCsv::TooManyColumns(record.len()));
            }
            if record.iter().all(|f| f.trim().is_empty()) {
                continue;
            }
            let line = record.position().map_or(0, |p| p.line());
            return Ok(Some(Row {
                line,
                fields: record.iter().map(str::to_owned).collect(),
            }));
        }
    }
}

fn not_csv(error: &io::Error) -> NotCsv {
    match error.get_ref().and_then(|e| e.downcast_ref::<NotCsv>()) {
        Some(reason) => reason.clone(),
        None => NotCsv::Malformed(error.to_string()),
    }
}

fn csv_error(error: &csv::Error) -> NotCsv {
    match error.kind() {
        csv::ErrorKind::Io(e) => not_csv(e),
        _ => NotCsv::Malformed(error.to_string()),
    }
}
