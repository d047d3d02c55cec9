//! A workspace's brandings in the dashboard (`/dashboard/brandings`, owners and members):
//! created from the settings page, edited on their own form; a logo or sender photo that could
//! not be fetched is said on the page, with why, and a new save fetches it again.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use lps::proto;
use serde::Serialize;

use super::Form_;
use crate::core_client::Core;
use crate::dashboard::{
    Notice, SCREENS, Settings, SignedForm, SignedIn, gone, number, redirect_with, screen,
    settings_address, text, unavailable,
};

/// The branding fields of a form, as core reads them (each given field replaces the value).
fn look_of(form: &Form_) -> proto::BrandingFields {
    let field = |key: &str| form.get(key).map(|v| v.trim().to_owned());
    proto::BrandingFields {
        company_name: field("company_name"),
        logo_url: field("logo_url"),
        primary_color: field("primary_color"),
        website: field("website"),
        sender_name: field("sender_name"),
        sender_title: field("sender_title"),
        sender_photo_url: field("sender_photo_url"),
    }
}

pub async fn create_branding(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    SignedForm(session, form): SignedForm,
) -> Response {
    let workspace_id = number(&form, "workspace_id");
    let outcome = core
        .campaigns()
        .create_branding(session.request(proto::CreateBrandingRequest {
            workspace_id,
            name: text(&form, "name"),
            is_default: Some(form.get("is_default").is_some_and(|v| v == "on")),
            look: Some(look_of(&form)),
        }))
        .await;
    match outcome {
        Ok(branding) => {
            let branding = branding.into_inner();
            redirect_with(
                &settings,
                &branding_address(branding.branding_id, workspace_id),
                &saved_notice(
                    "The branding was created: add its company, logo, colour and sender.",
                    &image_problems(&branding),
                ),
            )
        }
        Err(status) => redirect_with(
            &settings,
            &settings_address(workspace_id),
            &Notice::alert(status.message()),
        ),
    }
}

/// A branding's form.
fn branding_address(branding_id: i64, workspace_id: Option<i64>) -> String {
    format!(
        "/dashboard/brandings/{branding_id}?workspace_id={}",
        workspace_id.unwrap_or_default()
    )
}

#[derive(Serialize)]
struct BrandingView {
    workspace_id: i64,
    csrf: String,
    id: i64,
    name: String,
    default: bool,
    fields: Vec<BrandingField>,
    error: Option<String>,
}

#[derive(Serialize)]
struct BrandingField {
    name: &'static str,
    label: &'static str,
    kind: &'static str,
    value: String,
    /// Why the image at this address could not be fetched (images only).
    problem: Option<String>,
}

/// Why a branding's images could not be fetched, as core answered: (logo, sender's photo).
type ImageProblems = (Option<String>, Option<String>);

fn image_problems(branding: &proto::Branding) -> ImageProblems {
    (
        branding.logo_error.clone(),
        branding.sender_photo_error.clone(),
    )
}

/// The notice after saving a branding: saved, and why an image could not be fetched if one
/// could not (pages show their fallback meanwhile; saving again tries again).
fn saved_notice(done: &str, (logo, photo): &ImageProblems) -> Notice {
    let problems: Vec<String> = [("logo", logo), ("sender's photo", photo)]
        .into_iter()
        .filter_map(|(what, why)| {
            why.as_ref()
                .map(|why| format!("the {what} could not be fetched ({why})"))
        })
        .collect();
    if problems.is_empty() {
        return Notice::news(done);
    }
    Notice::alert(&format!(
        "{done} But {}. Until it is, pages show the company's name instead of a logo and no photo. Fix the address, or save again to try again.",
        problems.join(", and ")
    ))
}

fn branding_fields(
    look: &proto::BrandingFields,
    (logo, photo): ImageProblems,
) -> Vec<BrandingField> {
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    vec![
        BrandingField {
            name: "company_name",
            label: "Company name",
            kind: "text",
            value: text(&look.company_name),
            problem: None,
        },
        BrandingField {
            name: "logo_url",
            label: "Logo (an https address of the image)",
            kind: "url",
            value: text(&look.logo_url),
            problem: logo,
        },
        BrandingField {
            name: "primary_color",
            label: "Brand colour (hex, e.g. #0f766e)",
            kind: "text",
            value: text(&look.primary_color),
            problem: None,
        },
        BrandingField {
            name: "website",
            label: "Website",
            kind: "url",
            value: text(&look.website),
            problem: None,
        },
        BrandingField {
            name: "sender_name",
            label: "Sender's name (who the pages come from)",
            kind: "text",
            value: text(&look.sender_name),
            problem: None,
        },
        BrandingField {
            name: "sender_title",
            label: "Sender's title",
            kind: "text",
            value: text(&look.sender_title),
            problem: None,
        },
        BrandingField {
            name: "sender_photo_url",
            label: "Sender's photo (an https address)",
            kind: "url",
            value: text(&look.sender_photo_url),
            problem: photo,
        },
    ]
}

/// A branding's form.
pub async fn branding_form(
    State(core): State<Core>,
    SignedIn(session, person): SignedIn,
    headers: HeaderMap,
    Path(branding_id): Path<String>,
    Query(query): Query<Form_>,
) -> Response {
    let wanted: Option<i64> = branding_id.parse().ok();
    let mut candidates: Vec<i64> = person.workspaces.iter().map(|w| w.id).collect();
    if let Some(named) = number(&query, "workspace_id").filter(|id| candidates.contains(id)) {
        candidates.retain(|id| *id != named);
        candidates.insert(0, named);
    }
    for workspace_id in candidates {
        let brandings = match core
            .campaigns()
            .list_brandings(session.request(proto::ListBrandingsRequest {
                workspace_id: Some(workspace_id),
            }))
            .await
        {
            Ok(reply) => reply.into_inner().brandings,
            Err(status) => return unavailable(&status),
        };
        if let Some(b) = brandings
            .into_iter()
            .find(|b| Some(b.branding_id) == wanted)
        {
            let problems = image_problems(&b);
            let look = proto::BrandingFields {
                company_name: b.company_name,
                logo_url: b.logo_url,
                primary_color: b.primary_color,
                website: b.website,
                sender_name: b.sender_name,
                sender_title: b.sender_title,
                sender_photo_url: b.sender_photo_url,
            };
            let view = BrandingView {
                workspace_id,
                csrf: person.csrf_token.clone(),
                id: b.branding_id,
                name: b.name.clone(),
                default: b.is_default,
                fields: branding_fields(&look, problems),
                error: None,
            };
            return screen(
                &headers,
                &format!("Branding \u{201c}{}\u{201d}", b.name),
                "branding.html",
                view,
            );
        }
    }
    gone("No branding of yours has this address.")
}

/// Saves a branding; values that break the rules are shown again with what is wrong.
pub async fn update_branding(
    State(core): State<Core>,
    axum::Extension(settings): Settings,
    Path(branding_id): Path<String>,
    SignedForm(session, form): SignedForm,
) -> Response {
    let workspace_id = number(&form, "workspace_id");
    let look = look_of(&form);
    let outcome = core
        .campaigns()
        .update_branding(session.request(proto::UpdateBrandingRequest {
            workspace_id,
            branding_id: branding_id.parse().ok(),
            name: form.get("name").cloned(),
            is_default: Some(form.get("is_default").is_some_and(|v| v == "on")),
            look: Some(look.clone()),
        }))
        .await;
    match outcome {
        Ok(saved) => {
            let saved = saved.into_inner();
            let problems = image_problems(&saved);
            let notice = saved_notice(
                "The branding was saved; its pages show the change at once.",
                &problems,
            );
            // An image that could not be fetched: back to the form, which says so beside it.
            let back = if notice.alert {
                branding_address(saved.branding_id, workspace_id)
            } else {
                settings_address(workspace_id)
            };
            redirect_with(&settings, &back, &notice)
        }
        Err(status) if status.code() == tonic::Code::InvalidArgument => {
            let view = BrandingView {
                workspace_id: workspace_id.unwrap_or_default(),
                csrf: form.get("csrf_token").cloned().unwrap_or_default(),
                id: branding_id.parse().unwrap_or_default(),
                name: form.get("name").cloned().unwrap_or_default(),
                default: form.get("is_default").is_some_and(|v| v == "on"),
                fields: branding_fields(&look, (None, None)),
                error: Some(status.message().to_owned()),
            };
            SCREENS.page(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Branding",
                "branding.html",
                view,
            )
        }
        Err(status) => redirect_with(
            &settings,
            &settings_address(workspace_id),
            &Notice::alert(status.message()),
        ),
    }
}
