//! Files people open in spreadsheets and email tools: cells that never run as formulas, the
//! leads export's columns (`GET /leads/export-csv` and the dashboard's CSV write the same
//! file from the same core stream, `LeadsService.ExportLeads`), and how a CSV is sent as a
//! download.

use axum::body::Bytes;
use lps::proto;

/// A cell a spreadsheet shows as text: one that would start a formula (`=`, `+`, `-`, `@`,
/// a tab or a carriage return first, as OWASP lists them) gets a leading `'`.
pub fn spreadsheet_safe(text: &str) -> String {
    if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_owned()
    }
}

/// The leads export's first columns; the workspace's custom variables follow, one column
/// each. `last_name` and `title` are the custom variables of those names.
pub const LEAD_COLUMNS: [&str; 13] = [
    "lead_id",
    "email",
    "first_name",
    "last_name",
    "company_name",
    "company_domain",
    "title",
    "campaign_id",
    "campaign",
    "page_url",
    "score",
    "last_activity_at",
    "created_at",
];

/// The leads export as CSV: one row per lead and campaign page (a lead without a page, one
/// row with the page's columns empty), written a batch at a time as core streams it.
#[derive(Default)]
pub struct LeadsCsv {
    /// The custom variables after the fixed columns (none named as one of them); known from
    /// the stream's first message.
    custom: Option<Vec<String>>,
}

impl LeadsCsv {
    /// The CSV of one message of the stream: the header line first, for the first.
    pub fn write(&mut self, batch: proto::ExportLeadsResponse) -> Bytes {
        let mut writer = csv::Writer::from_writer(Vec::new());
        let custom = self.custom.get_or_insert_with(|| {
            let custom: Vec<String> = batch
                .custom_keys
                .into_iter()
                .filter(|key| !LEAD_COLUMNS.contains(&key.as_str()))
                .collect();
            let header = LEAD_COLUMNS
                .iter()
                .map(|column| (*column).to_owned())
                .chain(custom.iter().map(|key| spreadsheet_safe(key)));
            let _ = writer.write_record(header);
            custom
        });
        for exported in batch.leads {
            let lead = exported.lead.unwrap_or_default();
            let value = |key: &str| {
                spreadsheet_safe(exported.variables.get(key).map_or("", String::as_str))
            };
            let fixed = [
                lead.lead_id.to_string(),
                value("email"),
                value("first_name"),
                value("last_name"),
                value("company_name"),
                value("company_domain"),
                value("title"),
            ];
            let standing = [
                lead.score.to_string(),
                lead.last_activity_at
                    .as_ref()
                    .map(lps::wire::iso8601)
                    .unwrap_or_default(),
                lead.created_at
                    .as_ref()
                    .map(lps::wire::iso8601)
                    .unwrap_or_default(),
            ];
            let pages: Vec<[String; 3]> = if lead.pages.is_empty() {
                vec![Default::default()]
            } else {
                lead.pages
                    .iter()
                    .map(|page| {
                        [
                            page.campaign_id.to_string(),
                            spreadsheet_safe(&page.campaign_name),
                            spreadsheet_safe(&page.url),
                        ]
                    })
                    .collect()
            };
            for page in pages {
                let row = fixed
                    .iter()
                    .chain(&page)
                    .chain(&standing)
                    .cloned()
                    .chain(custom.iter().map(|key| value(key)));
                let _ = writer.write_record(row);
            }
        }
        Bytes::from(writer.into_inner().unwrap_or_default())
    }
}

/// The columns a file of rejected rows adds after the file's own: a CSV import recognises
/// them and leaves them out, so the fixed file imports as it is.
pub const REJECT_COLUMNS: [&str; 2] = ["rejected_line", "rejected_reason"];

/// A CSV import's rejected rows as a CSV: the file's own columns, then the row's line and
/// why it was rejected, written a batch at a time as core streams them.
#[derive(Default)]
pub struct RejectsCsv {
    header_written: bool,
}

impl RejectsCsv {
    /// The CSV of one message of the stream: the header line first, for the first.
    pub fn write(&mut self, batch: proto::ExportCsvImportRejectsResponse) -> Bytes {
        let mut writer = csv::Writer::from_writer(Vec::new());
        if !self.header_written {
            self.header_written = true;
            let header = batch
                .headers
                .iter()
                .map(|header| spreadsheet_safe(header))
                .chain(REJECT_COLUMNS.iter().map(|column| (*column).to_owned()));
            let _ = writer.write_record(header);
        }
        for row in batch.rows {
            let record = row
                .fields
                .iter()
                .map(|field| spreadsheet_safe(field))
                .chain([row.line.to_string(), spreadsheet_safe(&row.reason)]);
            let _ = writer.write_record(record);
        }
        Bytes::from(writer.into_inner().unwrap_or_default())
    }
}

/// A CSV file as a download named `filename` (never cached: it holds leads' data).
pub fn csv_attachment(filename: &str, body: axum::body::Body) -> axum::response::Response {
    use axum::response::IntoResponse;
    use http::header;
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{filename}\""),
            ),
            (header::CACHE_CONTROL, "no-store".to_owned()),
        ],
        body,
    )
        .into_response()
}

/// A core stream written as CSV a batch at a time as it arrives; a failure midway cuts the
/// body short (the client sees a failed download, never a silently short file) and is logged
/// as `what` stopping.
pub fn csv_stream<T, W>(
    stream: tonic::Streaming<T>,
    what: &'static str,
    mut write: W,
) -> axum::body::Body
where
    T: Send + 'static,
    W: FnMut(T) -> Bytes + Send + 'static,
{
    use tokio_stream::StreamExt;
    axum::body::Body::from_stream(stream.map(move |batch| match batch {
        Ok(batch) => Ok(write(batch)),
        Err(status) => {
            tracing::warn!(%status, "{what} stopped");
            Err(std::io::Error::other("core stopped answering"))
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejected_rows_keep_their_cells_then_say_their_line_and_why() {
        let mut csv = RejectsCsv::default();
        let first = csv.write(proto::ExportCsvImportRejectsResponse {
            headers: vec!["Email".into(), "First Name".into()],
            rows: vec![proto::CsvReject {
                line: 3,
                fields: vec!["not-an-email".into(), "=Ada".into()],
                reason: "The email is not valid.".into(),
            }],
        });
        assert_eq!(
            String::from_utf8(first.to_vec()).unwrap(),
            "Email,First Name,rejected_line,rejected_reason\n\
             not-an-email,'=Ada,3,The email is not valid.\n"
        );
        let next = csv.write(proto::ExportCsvImportRejectsResponse {
            headers: Vec::new(),
            rows: vec![proto::CsvReject {
                line: 9,
                fields: vec![String::new(), "Bo".into()],
                reason: "x".into(),
            }],
        });
        assert_eq!(String::from_utf8(next.to_vec()).unwrap(), ",Bo,9,x\n");
    }

    #[test]
    fn cells_that_would_run_as_formulas_are_text() {
        assert_eq!(spreadsheet_safe("=HYPERLINK(\"x\")"), "'=HYPERLINK(\"x\")");
        assert_eq!(spreadsheet_safe("+1"), "'+1");
        assert_eq!(spreadsheet_safe("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(spreadsheet_safe("Ada"), "Ada");
    }

    #[test]
    fn a_lead_is_one_row_per_page_with_its_custom_variables_after_the_fixed_columns() {
        let lead =
            |id: i64, pages: Vec<proto::LeadPage>, values: &[(&str, &str)]| proto::ExportedLead {
                lead: Some(proto::LeadSummary {
                    lead_id: id,
                    score: 9.5,
                    pages,
                    ..Default::default()
                }),
                variables: values
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            };
        let page = |campaign_id: i64, name: &str| proto::LeadPage {
            campaign_id,
            campaign_name: name.to_owned(),
            url: format!("https://p.example/p/{campaign_id}/abc"),
            ..Default::default()
        };
        let mut csv = LeadsCsv::default();
        let first = csv.write(proto::ExportLeadsResponse {
            custom_keys: vec!["title".into(), "plan".into(), "score".into()],
            leads: vec![lead(
                7,
                vec![page(1, "Spring"), page(2, "=Autumn")],
                &[
                    ("first_name", "-2+3"),
                    ("company_name", "Acme, \"Inc\""),
                    ("plan", "gold"),
                ],
            )],
        });
        let text = String::from_utf8(first.to_vec()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "lead_id,email,first_name,last_name,company_name,company_domain,title,campaign_id,\
             campaign,page_url,score,last_activity_at,created_at,plan"
        );
        assert_eq!(
            lines[1],
            "7,,'-2+3,,\"Acme, \"\"Inc\"\"\",,,1,Spring,https://p.example/p/1/abc,9.5,,,gold"
        );
        assert!(lines[2].starts_with("7,,'-2+3,,") && lines[2].contains(",2,'=Autumn,"));
        assert_eq!(lines.len(), 3);
        // Later batches: rows only; a lead without a page is one row with its page empty.
        let second = csv.write(proto::ExportLeadsResponse {
            custom_keys: Vec::new(),
            leads: vec![lead(8, Vec::new(), &[("email", "b@example.com")])],
        });
        assert_eq!(
            String::from_utf8(second.to_vec()).unwrap(),
            "8,b@example.com,,,,,,,,,9.5,,,\n"
        );
    }
}
