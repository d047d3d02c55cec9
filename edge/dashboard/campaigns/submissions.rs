//! The campaign's form submissions as CSV (`/submissions.csv`).

use std::collections::BTreeSet;

use axum::extract::State;
use axum::response::Response;
use lps::proto;

use crate::core_client::Core;
use crate::dashboard::{CampaignScreen, unavailable};

/// The most submissions one CSV holds (newest first), read from core 100 at a time.
const CSV_SUBMISSIONS: usize = 10_000;

/// The campaign's form submissions as CSV, newest first (at most [`CSV_SUBMISSIONS`]): a
/// column per field any of them answered, every cell safe to open in a spreadsheet.
pub async fn submissions_csv(
    State(core): State<Core>,
    CampaignScreen {
        session,
        workspace_id,
        campaign,
        ..
    }: CampaignScreen,
) -> Response {
    let mut all = Vec::new();
    let mut before_id = None;
    while all.len() < CSV_SUBMISSIONS {
        let page = match core
            .engagement()
            .list_form_submissions(session.request(proto::ListFormSubmissionsRequest {
                workspace_id: Some(workspace_id),
                campaign_id: Some(campaign.id),
                limit: Some(100),
                before_id,
            }))
            .await
        {
            Ok(reply) => reply.into_inner().submissions,
            Err(status) => return unavailable(&status),
        };
        let full = page.len() == 100;
        before_id = page.last().map(|s| s.id);
        all.extend(page);
        if !full {
            break;
        }
    }
    all.truncate(CSV_SUBMISSIONS);
    let body = submissions_table(&all);
    crate::spreadsheet::csv_attachment("form-submissions.csv", body.into())
}

/// The CSV of submissions: fixed columns, then one per field name any of them has.
fn submissions_table(submissions: &[proto::FormSubmission]) -> Vec<u8> {
    let fields: BTreeSet<&String> = submissions.iter().flat_map(|s| s.fields.keys()).collect();
    let mut writer = csv::Writer::from_writer(Vec::new());
    let mut header = vec![
        "submission_id".to_owned(),
        "created_at".to_owned(),
        "lead_id".to_owned(),
        "form_id".to_owned(),
        "email".to_owned(),
        "page_url".to_owned(),
    ];
    header.extend(
        fields
            .iter()
            .map(|f| crate::spreadsheet::spreadsheet_safe(f)),
    );
    let _ = writer.write_record(&header);
    for s in submissions {
        let mut row = vec![
            s.id.to_string(),
            s.created_at
                .as_ref()
                .map(lps::wire::iso8601)
                .unwrap_or_default(),
            s.lead_id.to_string(),
            crate::spreadsheet::spreadsheet_safe(&s.form_id),
            crate::spreadsheet::spreadsheet_safe(s.email.as_deref().unwrap_or_default()),
            crate::spreadsheet::spreadsheet_safe(&s.page_url),
        ];
        row.extend(fields.iter().map(|f| {
            crate::spreadsheet::spreadsheet_safe(s.fields.get(*f).map(String::as_str).unwrap_or(""))
        }));
        let _ = writer.write_record(&row);
    }
    writer.into_inner().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_answered_field_gets_a_column_and_formulas_stay_text() {
        let submission = |id: i64, fields: &[(&str, &str)]| proto::FormSubmission {
            id,
            form_id: "meeting".into(),
            lead_id: 3,
            email: Some("ada@example.com".into()),
            fields: fields
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..Default::default()
        };
        let csv = submissions_table(&[
            submission(2, &[("preferred_time", "=cmd()")]),
            submission(1, &[("company_size", "50")]),
        ]);
        let text = String::from_utf8(csv).unwrap();
        let mut lines = text.lines();
        assert_eq!(
            lines.next().unwrap(),
            "submission_id,created_at,lead_id,form_id,email,page_url,company_size,preferred_time"
        );
        assert_eq!(
            lines.next().unwrap(),
            "2,,3,meeting,ada@example.com,,,'=cmd()"
        );
        assert_eq!(lines.next().unwrap(), "1,,3,meeting,ada@example.com,,50,");
    }
}
