//! CSV files of leads read for import: the one place that decides what a file's columns mean.
//!
//! Every face that imports a CSV (`lps import`, `POST /leads/import-csv`) reads the file through
//! [`CsvFile`] and maps its columns with [`Mapping`], so a header is recognised the same way
//! everywhere. Recognition ignores case, spaces, underscores and punctuation
//! ([`normalise_header`]) and knows the headers of the exports people have: HubSpot,
//! Salesforce, Apollo, LinkedIn Sales Navigator, lemlist, Pipedrive and Google Contacts (a
//! sample header row of each is in `tests/data/exports/`). A header it does not know becomes a
//! custom variable named from the header.
//!
//! The reader takes UTF-8 (with or without a byte-order mark) and Windows-1252 (chosen when
//! the first 64 KiB are not UTF-8), sniffs `,`, `;` or tab as the delimiter, and refuses what
//! is not a CSV of leads: NUL bytes (a binary file), a line longer than [`MAX_LINE_BYTES`] or
//! more than [`MAX_COLUMNS`] columns. It reads as it goes: memory is bounded by the longest
//! line, never the file.

use std::collections::BTreeMap;
use std::io::{self, Read};

use crate::wire::DEFAULT_KEYS;

/// Most columns a file may have.
pub const MAX_COLUMNS: usize = 1_000;
/// Longest line (bytes between two line breaks, quoted or not) a file may have.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// By default, an import still receiving its file with no row staged for this long was
/// abandoned and is deleted with its staged rows: its uploader killed mid-file (the body
/// deadline cuts a stalled upload far sooner), or a file uploaded in the dashboard whose
/// mapping step was left unanswered (`--import-abandoned-after-seconds`;
/// `domain::csv_imports::sweep`).
pub const ABANDONED_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);
/// How much of the file's start decides its encoding and delimiter.
pub const SNIFF_BYTES: usize = 64 * 1024;

/// A lead field a column can fill: the five default variables and the custom variables every
/// export has (`last_name`, `title`, `phone`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LeadField {
    Email,
    FirstName,
    LastName,
    CompanyName,
    CompanyDomain,
    Title,
    Phone,
    SocialProfileUrl,
}

impl LeadField {
    pub const ALL: [LeadField; 8] = [
        LeadField::Email,
        LeadField::FirstName,
        LeadField::LastName,
        LeadField::CompanyName,
        LeadField::CompanyDomain,
        LeadField::Title,
        LeadField::Phone,
        LeadField::SocialProfileUrl,
    ];

    /// The variable key the field is stored under.
    pub fn key(self) -> &'static str {
        match self {
            LeadField::Email => "email",
            LeadField::FirstName => "first_name",
            LeadField::LastName => "last_name",
            LeadField::CompanyName => "company_name",
            LeadField::CompanyDomain => "company_domain",
            LeadField::Title => "title",
            LeadField::Phone => "phone",
            LeadField::SocialProfileUrl => "social_profile_url",
        }
    }

    fn from_key(key: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|field| field.key() == key)
    }

    /// Normalised headers of the exports people have, each meaning this field.
    fn headers(self) -> &'static [&'static str] {
        match self {
            // "Email Address" (HubSpot), "Work Email", "E-mail 1 - Value" (Google Contacts),
            // "Person - Email" (Pipedrive), "Email" (Salesforce, Apollo, lemlist).
            LeadField::Email => &[
                "email",
                "emailaddress",
                "workemail",
                "businessemail",
                "primaryemail",
                "email1value",
                "personemail",
                "emailwork",
                "personemailwork",
            ],
            LeadField::FirstName => &[
                "firstname",
                "givenname",
                "personfirstname",
                "contactfirstname",
            ],
            LeadField::LastName => &[
                "lastname",
                "familyname",
                "surname",
                "personlastname",
                "contactlastname",
            ],
            // "Company" (HubSpot, Apollo, Sales Navigator), "Account Name" (Salesforce),
            // "Organization 1 - Name" (Google Contacts), "Person - Organization" (Pipedrive).
            LeadField::CompanyName => &[
                "company",
                "companyname",
                "accountname",
                "organization",
                "organisation",
                "organizationname",
                "organization1name",
                "personorganization",
                "organizationname1",
                "currentcompany",
                "employer",
            ],
            LeadField::CompanyDomain => &[
                "website",
                "websiteurl",
                "companydomain",
                "companydomainname",
                "domain",
                "companywebsite",
                "organizationwebsite",
                "accountwebsite",
                "website1value",
            ],
            LeadField::Title => &[
                "title",
                "jobtitle",
                "position",
                "currenttitle",
                "organizationtitle",
                "organization1title",
                "persontitle",
                "personjobtitle",
            ],
            LeadField::Phone => &[
                "phone",
                "phonenumber",
                "mobile",
                "mobilephone",
                "workphone",
                "workdirectphone",
                "directphone",
                "corporatephone",
                "phone1value",
                "personphone",
                "personphonework",
                "phonework",
            ],
            LeadField::SocialProfileUrl => &[
                "linkedin",
                "linkedinurl",
                "linkedinprofile",
                "linkedinprofileurl",
                "personlinkedinurl",
                "profileurl",
                "socialprofileurl",
                "linkedinpublicurl",
            ],
        }
    }

    /// Words in a header that make it look like this field when it was not mapped to it.
    fn hints(self) -> &'static [&'static str] {
        match self {
            LeadField::Email => &["mail"],
            LeadField::FirstName => &["first", "given"],
            LeadField::LastName => &["last", "family"],
            LeadField::CompanyName => &["company", "organi", "account", "employer"],
            LeadField::CompanyDomain => &["domain", "website", "site", "url"],
            LeadField::Title => &["title", "position", "role"],
            LeadField::Phone => &["phone", "mobile", "tel"],
            LeadField::SocialProfileUrl => &["linkedin", "profile", "social"],
        }
    }
}

/// Where a column's values go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Field(LeadField),
    /// A custom variable of this key.
    Custom(String),
    Ignored,
}

impl Target {
    /// The variable key the column's values are stored under, if any.
    pub fn key(&self) -> Option<&str> {
        match self {
            Target::Field(field) => Some(field.key()),
            Target::Custom(key) => Some(key),
            Target::Ignored => None,
        }
    }

    /// How the target is written in a mapping (`email`, `custom:industry`, `ignore`).
    pub fn spelled(&self) -> String {
        match self {
            Target::Field(field) => field.key().to_owned(),
            Target::Custom(key) => format!("custom:{key}"),
            Target::Ignored => "ignore".to_owned(),
        }
    }

    /// A target as written in a mapping: a field's key, `ignore`, or `custom:KEY` (a bare
    /// key that is not a field is a custom variable too).
    pub fn parse(spelled: &str) -> Result<Self, String> {
        let spelled = spelled.trim();
        if matches!(spelled, "ignore" | "ignored" | "") {
            return Ok(Target::Ignored);
        }
        if let Some(field) = LeadField::from_key(spelled) {
            return Ok(Target::Field(field));
        }
        let key = spelled.strip_prefix("custom:").unwrap_or(spelled);
        match custom_key(key) {
            Some(key) => Ok(Target::Custom(key)),
            None => Err(format!(
                "'{spelled}' is not a field, `ignore` or `custom:NAME`."
            )),
        }
    }
}

/// A header without case, spaces, underscores or punctuation: `"Work E-mail"` is `workemail`.
pub fn normalise_header(header: &str) -> String {
    header
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// What a column with this header is, recognised: a lead field, else a custom variable named
/// from the header, else (a header of punctuation only, or none) ignored.
pub fn recognise(header: &str) -> (Target, bool) {
    let normalised = normalise_header(header);
    // The columns lps adds to a file of rejected rows: the fixed file imports as it is.
    if matches!(normalised.as_str(), "rejectedline" | "rejectedreason") {
        return (Target::Ignored, true);
    }
    if let Some(field) = LeadField::ALL
        .into_iter()
        .find(|field| field.headers().contains(&normalised.as_str()))
    {
        return (Target::Field(field), true);
    }
    match custom_key(header) {
        Some(key) => (Target::Custom(key), false),
        None => (Target::Ignored, false),
    }
}

/// A custom variable's key from a header: lower case, words joined by `_`, at most 100
/// characters; none when nothing is left.
pub fn custom_key(header: &str) -> Option<String> {
    let mut key = String::new();
    for c in header.trim().chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            key.push(c);
        } else if !key.is_empty() && !key.ends_with('_') {
            key.push('_');
        }
    }
    let key: String = key.trim_end_matches('_').chars().take(100).collect();
    (!key.is_empty()).then_some(key)
}

/// One column: its header and where its values go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub header: String,
    pub target: Target,
    /// Whether the target came from recognising the header (not chosen, not a fallback).
    pub recognised: bool,
}

/// Every column of a file and where its values go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub columns: Vec<Column>,
}

impl Mapping {
    /// The mapping recognised from the header row alone.
    pub fn recognise(headers: &[String]) -> Self {
        let mut taken = Vec::new();
        let columns = headers
            .iter()
            .map(|header| {
                let (mut target, mut recognised) = recognise(header);
                // A second column of the same field ("Email", then "Work Email") stays a
                // custom variable: the first is what the lead is matched by.
                if let Target::Field(field) = target {
                    if taken.contains(&field) {
                        target = custom_key(header).map_or(Target::Ignored, Target::Custom);
                        recognised = false;
                    } else {
                        taken.push(field);
                    }
                }
                Column {
                    header: header.clone(),
                    target,
                    recognised,
                }
            })
            .collect();
        Mapping { columns }
    }

    /// The recognised mapping with these choices applied: header (as written, or normalised)
    /// to target. A header the file does not have is an error.
    pub fn with_choices(mut self, choices: &[(String, Target)]) -> Result<Self, String> {
        for (header, target) in choices {
            let wanted = normalise_header(header);
            let index = self
                .columns
                .iter()
                .position(|c| c.header == *header)
                .or_else(|| {
                    self.columns
                        .iter()
                        .position(|c| normalise_header(&c.header) == wanted)
                })
                .ok_or_else(|| format!("The file has no column '{header}'."))?;
            if let Target::Field(field) = target {
                // A field has one column: the one chosen now.
                for (other, c) in self.columns.iter_mut().enumerate() {
                    if other != index && c.target == Target::Field(*field) {
                        c.target = Target::Ignored;
                        c.recognised = false;
                    }
                }
            }
            let column = &mut self.columns[index];
            column.target = target.clone();
            column.recognised = false;
        }
        Ok(self)
    }

    /// The headers in order, a key for remembering a chosen mapping per set of headers.
    pub fn headers(&self) -> Vec<&str> {
        self.columns.iter().map(|c| c.header.as_str()).collect()
    }

    /// A row's values under their keys (empty ones left out), or why the row is not a lead.
    pub fn values(&self, row: &[String]) -> Result<BTreeMap<String, String>, String> {
        if row.len() != self.columns.len() {
            return Err(format!(
                "The row has {} fields; the header has {}.",
                row.len(),
                self.columns.len()
            ));
        }
        let mut values = BTreeMap::new();
        for (column, value) in self.columns.iter().zip(row) {
            if let Some(key) = column.target.key()
                && !value.trim().is_empty()
            {
                values
                    .entry(key.to_owned())
                    .or_insert_with(|| value.clone());
            }
        }
        if DEFAULT_KEYS.iter().any(|key| values.contains_key(*key)) {
            return Ok(values);
        }
        Err(self.missing_reason(row))
    }

    /// Why a row names no lead, with the column that would have named it when there is one.
    fn missing_reason(&self, row: &[String]) -> String {
        for key in DEFAULT_KEYS {
            let Some(field) = LeadField::from_key(key) else {
                continue;
            };
            if self
                .columns
                .iter()
                .any(|c| c.target == Target::Field(field))
            {
                continue;
            }
            let lookalike = self.columns.iter().zip(row).find(|(c, value)| {
                !value.trim().is_empty()
                    && !matches!(c.target, Target::Field(_))
                    && field
                        .hints()
                        .iter()
                        .any(|hint| normalise_header(&c.header).contains(hint))
            });
            if let Some((column, _)) = lookalike {
                return format!(
                    "no column was mapped to {key}; '{}' looks like one",
                    column.header
                );
            }
        }
        format!(
            "the row has none of {}, which a lead needs one of",
            DEFAULT_KEYS.join(", ")
        )
    }
}

/// A `--map`/`mapping` entry, `Header=field`.
pub fn parse_choice(entry: &str) -> Result<(String, Target), String> {
    let (header, target) = entry
        .rsplit_once('=')
        .ok_or_else(|| format!("'{entry}' is not `Header=field`."))?;
    Ok((header.trim().to_owned(), Target::parse(target)?))
}

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

#[cfg(test)]
mod tests;
