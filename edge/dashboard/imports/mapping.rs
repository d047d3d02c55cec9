//! The import's mapping step: each column with its first values and where it goes, the first
//! rows as they will be stored, a changed mapping previewed, then the import started (or the
//! upload deleted).

use std::collections::BTreeMap;

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use http::HeaderMap;
use lps::csv_import::LeadField;
use lps::proto;
use serde::Serialize;

use super::not_shown;
use super::progress::progress_page;
use crate::core_client::Core;
use crate::dashboard::{Notice, Settings, SignedIn, forged, plural, redirect_with, screen};

#[derive(Serialize)]
struct ColumnView {
    index: usize,
    header: String,
    /// The first values of the column, as in the file.
    samples: Vec<String>,
    /// What the column may go to: (target as spelled, label), the chosen one marked.
    targets: Vec<TargetChoice>,
    recognised: bool,
}

#[derive(Serialize)]
struct TargetChoice {
    value: String,
    label: String,
    chosen: bool,
}

#[derive(Serialize)]
struct PreviewRow {
    line: u64,
    /// The stored values, in the order of `keys`.
    values: Vec<String>,
    error: Option<String>,
}

#[derive(Serialize)]
struct MappingView {
    csrf: String,
    job_id: String,
    total: String,
    columns: Vec<ColumnView>,
    /// The keys the preview shows, in column order.
    keys: Vec<String>,
    previews: Vec<PreviewRow>,
    /// Whether the page previews a mapping not yet chosen (from the form).
    previewing: bool,
    /// Why the mapping asked for could not be previewed.
    alert: Option<String>,
}

/// `GET /dashboard/leads/import/{job_id}`: the mapping step while the file is staged (a
/// `column_N` per column previews that mapping), else the import's progress and summary.
pub async fn import_page(
    State(core): State<Core>,
    SignedIn(session, person): SignedIn,
    headers: HeaderMap,
    Path(job_id): Path<String>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let get = |mapping: Vec<String>| {
        let request = session.request(proto::GetCsvImportRequest {
            job_id: Some(job_id.clone()),
            mapping,
        });
        let core = core.clone();
        async move { core.leads().get_csv_import(request).await }
    };
    let staged = match get(Vec::new()).await {
        Ok(reply) => reply.into_inner(),
        Err(status) => return not_shown(&status),
    };
    if !staged.receiving {
        return progress_page(&core, &session, &headers, job_id, staged).await;
    }
    let chosen = choices(&staged.columns, &query);
    let previewing = !chosen.is_empty();
    let staged = if previewing {
        match get(chosen).await {
            Ok(reply) => reply.into_inner(),
            // A mapping core refuses (two columns for one field, say): the job's, saying why.
            Err(status) if status.code() == tonic::Code::InvalidArgument => {
                let alert = Some(status.message().to_owned());
                return mapping_page(&person, &headers, job_id, staged, false, alert);
            }
            Err(status) => return not_shown(&status),
        }
    } else {
        staged
    };
    mapping_page(&person, &headers, job_id, staged, previewing, None)
}

fn mapping_page(
    person: &proto::GetSessionResponse,
    headers: &HeaderMap,
    job_id: String,
    staged: proto::GetCsvImportResponse,
    previewing: bool,
    alert: Option<String>,
) -> Response {
    let columns: Vec<ColumnView> = staged
        .columns
        .iter()
        .enumerate()
        .map(|(index, column)| ColumnView {
            index,
            header: column.header.clone(),
            samples: staged
                .rows
                .iter()
                .filter_map(|row| row.fields.get(index))
                .filter(|value| !value.trim().is_empty())
                .take(3)
                .cloned()
                .collect(),
            targets: targets(&column.header, &column.target),
            recognised: column.recognised,
        })
        .collect();
    let mut keys: Vec<String> = Vec::new();
    for column in &staged.columns {
        let key = match column.target.as_str() {
            "ignore" => continue,
            target => target.strip_prefix("custom:").unwrap_or(target).to_owned(),
        };
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let previews = staged
        .previews
        .into_iter()
        .map(|preview| PreviewRow {
            line: preview.line,
            values: keys
                .iter()
                .map(|key| preview.values.get(key).cloned().unwrap_or_default())
                .collect(),
            error: preview.error,
        })
        .collect();
    let view = MappingView {
        csrf: person.csrf_token.clone(),
        job_id,
        total: plural(staged.total_rows, "row", "rows"),
        columns,
        keys,
        previews,
        previewing,
        alert,
    };
    screen(
        headers,
        "Import leads: columns",
        "import_mapping.html",
        view,
    )
}

/// Where a column may go: every lead field, a custom variable named from its header (or the
/// one chosen), or nowhere; `target` marked.
fn targets(header: &str, target: &str) -> Vec<TargetChoice> {
    let mut choices: Vec<(String, String)> = LeadField::ALL
        .iter()
        .map(|field| (field.key().to_owned(), field_label(*field).to_owned()))
        .collect();
    if let Some(key) = lps::csv_import::custom_key(header) {
        choices.push((format!("custom:{key}"), format!("Custom variable “{key}”")));
    }
    if let Some(key) = target.strip_prefix("custom:")
        && !choices.iter().any(|(value, _)| value == target)
    {
        choices.push((target.to_owned(), format!("Custom variable “{key}”")));
    }
    choices.push(("ignore".to_owned(), "Leave out".to_owned()));
    choices
        .into_iter()
        .map(|(value, label)| TargetChoice {
            chosen: value == target,
            value,
            label,
        })
        .collect()
}

fn field_label(field: LeadField) -> &'static str {
    match field {
        LeadField::Email => "Email",
        LeadField::FirstName => "First name",
        LeadField::LastName => "Last name",
        LeadField::CompanyName => "Company name",
        LeadField::CompanyDomain => "Company domain",
        LeadField::Title => "Job title",
        LeadField::Phone => "Phone",
        LeadField::SocialProfileUrl => "LinkedIn or other profile URL",
    }
}

/// The mapping a form chose, `Header=target` per column (`column_N` fields), if it chose one.
fn choices(columns: &[proto::CsvColumn], form: &BTreeMap<String, String>) -> Vec<String> {
    columns
        .iter()
        .enumerate()
        .filter_map(|(index, column)| {
            let target = form.get(&format!("column_{index}"))?;
            Some(format!("{}={target}", column.header))
        })
        .collect()
}

/// `POST /dashboard/leads/import/{job_id}`: the mapping step's answer, with a `column_N` per
/// column: `action` `preview` shows the rows under those columns, `start` queues the import
/// under them, `cancel` deletes the upload.
pub async fn start(
    State(core): State<Core>,
    settings: Settings,
    SignedIn(session, person): SignedIn,
    Path(job_id): Path<String>,
    axum::extract::Form(form): axum::extract::Form<BTreeMap<String, String>>,
) -> Response {
    if let Some(refusal) = forged(&person, &form) {
        return refusal;
    }
    let here = format!("/dashboard/leads/import/{job_id}");
    let staged = match core
        .leads()
        .get_csv_import(session.request(proto::GetCsvImportRequest {
            job_id: Some(job_id.clone()),
            mapping: Vec::new(),
        }))
        .await
    {
        Ok(reply) => reply.into_inner(),
        Err(status) => return not_shown(&status),
    };
    let action = form.get("action").map(String::as_str);
    if action == Some("preview") {
        let mut query = form_urlencoded::Serializer::new(String::new());
        for (name, value) in form.iter().filter(|(name, _)| name.starts_with("column_")) {
            query.append_pair(name, value);
        }
        return Redirect::to(&format!("{here}?{}", query.finish())).into_response();
    }
    let cancel = action == Some("cancel");
    let finish = proto::FinishCsvImportRequest {
        job_id: job_id.clone(),
        abandon: cancel,
        mapping: if cancel {
            Vec::new()
        } else {
            choices(&staged.columns, &form)
        },
    };
    match core
        .leads()
        .finish_csv_import(session.request(finish))
        .await
    {
        Ok(_) if cancel => redirect_with(
            &settings,
            "/dashboard/leads/import",
            &Notice::news("The upload was deleted; nothing was imported."),
        ),
        Ok(_) => Redirect::to(&here).into_response(),
        Err(status) if status.code() == tonic::Code::InvalidArgument => {
            redirect_with(&settings, &here, &Notice::alert(status.message()))
        }
        Err(status) => not_shown(&status),
    }
}
