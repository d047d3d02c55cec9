//! Brandings: what a workspace's pages show of the sender (company, logo, colour, website,
//! the person who sends). The same rules for the API, the dashboard and `lps admin branding`.

use std::collections::HashMap;

use crate::error::FieldViolation;
use crate::principal::Principal;
use crate::store::brandings::{self, BrandingLook, BrandingRow};
use crate::store::{Db, assets, designs};
use crate::{Error, Result};

/// Longest name or text value of a branding.
const MAX_TEXT: usize = 255;

/// What changes of a branding: each `Some` replaces the value (an empty text removes it).
#[derive(Debug, Default)]
pub struct BrandingChange {
    pub name: Option<String>,
    pub make_default: bool,
    pub look: LookChange,
}

/// Each `Some` replaces that value of the look (an empty text removes it).
#[derive(Debug, Default)]
pub struct LookChange {
    pub company_name: Option<String>,
    pub logo_url: Option<String>,
    pub primary_color: Option<String>,
    pub website: Option<String>,
    pub sender_name: Option<String>,
    pub sender_title: Option<String>,
    pub sender_photo_url: Option<String>,
}

impl LookChange {
    /// `look` with these changes, trimmed (blank removes).
    fn applied_to(self, mut look: BrandingLook) -> BrandingLook {
        let set = |field: &mut Option<String>, value: Option<String>| {
            if let Some(value) = value {
                *field = Some(value.trim().to_owned()).filter(|v| !v.is_empty());
            }
        };
        set(&mut look.company_name, self.company_name);
        set(&mut look.logo_url, self.logo_url);
        set(&mut look.primary_color, self.primary_color);
        set(&mut look.website, self.website);
        set(&mut look.sender_name, self.sender_name);
        set(&mut look.sender_title, self.sender_title);
        set(&mut look.sender_photo_url, self.sender_photo_url);
        look
    }
}

/// A new branding of a workspace the principal reaches.
pub async fn create(
    db: &Db,
    principal: &Principal,
    workspace_id: i64,
    name: &str,
    is_default: bool,
    look: LookChange,
) -> Result<BrandingRow> {
    let workspace = principal.reach(db, workspace_id).await?;
    let id = insert(db, workspace.id, name, is_default, look).await?;
    brandings::get(db.pool(), id)
        .await?
        .ok_or(Error::NotFound("Branding not found"))
}

/// Changes a branding of the workspace ("Branding not found" for any other).
pub async fn update(
    db: &Db,
    principal: &Principal,
    workspace_id: i64,
    branding_id: i64,
    change: BrandingChange,
) -> Result<BrandingRow> {
    let workspace = principal.reach(db, workspace_id).await?;
    let row = brandings::get(db.pool(), branding_id)
        .await?
        .filter(|row| row.workspace_id == workspace.id)
        .ok_or(Error::NotFound("Branding not found"))?;
    apply(db, row, change).await
}

/// Stores a new branding once its values pass the rules (no principal: the operator's
/// command uses it too); with `is_default` it becomes the workspace's only default.
pub(crate) async fn insert(
    db: &Db,
    workspace_id: i64,
    name: &str,
    is_default: bool,
    look: LookChange,
) -> Result<i64> {
    let name = name.trim();
    let look = look.applied_to(BrandingLook::default());
    let mut violations = name_violations(name);
    violations.extend(look_violations(&look));
    if !violations.is_empty() {
        return Err(Error::Invalid(violations));
    }
    let mut tx = db.begin_write().await?;
    let id = brandings::insert(
        &mut *tx,
        workspace_id,
        name,
        is_default,
        &look,
        crate::time::now(),
    )
    .await?;
    if is_default {
        brandings::make_default(&mut *tx, workspace_id, id).await?;
    }
    tx.commit().await?;
    Ok(id)
}

/// Applies a change to a stored branding; pages of its campaigns show it at once, in every
/// process. Returns it as stored.
pub(crate) async fn apply(
    db: &Db,
    mut row: BrandingRow,
    change: BrandingChange,
) -> Result<BrandingRow> {
    let mut violations = Vec::new();
    // A name cannot be removed: a blank one leaves it as it is.
    if let Some(name) = change
        .name
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
    {
        violations.extend(name_violations(&name));
        row.name = name;
    }
    row.look = change.look.applied_to(row.look);
    violations.extend(look_violations(&row.look));
    if !violations.is_empty() {
        return Err(Error::Invalid(violations));
    }
    let mut tx = db.begin_write().await?;
    brandings::update(&mut *tx, row.id, &row.name, &row.look).await?;
    designs::bump_versions(&mut *tx, designs::Affected::Branding(row.id)).await?;
    if change.make_default {
        brandings::make_default(&mut *tx, row.workspace_id, row.id).await?;
        row.is_default = 1;
    }
    // Running servers drop the pages they keep (on SQLite, they notice within a second).
    crate::store::notify(
        &mut tx,
        db.dialect(),
        crate::domain::page_changes::CHANNEL,
        "*",
    )
    .await?;
    tx.commit().await?;
    Ok(row)
}

/// The addresses of the images a branding shows (its logo, its sender's photo).
pub fn image_urls(row: &BrandingRow) -> impl Iterator<Item = &str> {
    [&row.look.logo_url, &row.look.sender_photo_url]
        .into_iter()
        .filter_map(|url| url.as_deref())
}

/// Why each image these brandings show could not be kept, by address, as of its last try
/// (`jobs::assets`); an image kept or not tried yet is not in the answer.
pub async fn image_failures(db: &Db, rows: &[&BrandingRow]) -> Result<HashMap<String, String>> {
    let urls: Vec<&str> = rows.iter().flat_map(|row| image_urls(row)).collect();
    Ok(assets::failures(db.pool(), &urls).await?)
}

fn name_violations(name: &str) -> Vec<FieldViolation> {
    text_violation("name", Some(name), true)
        .into_iter()
        .collect()
}

fn text_violation(field: &str, value: Option<&str>, required: bool) -> Option<FieldViolation> {
    let label = field.replace('_', " ");
    match value {
        None | Some("") if required => Some(FieldViolation::required(field)),
        Some(v) if v.chars().count() > MAX_TEXT => Some(FieldViolation::new(
            field,
            format!("The {label} field must not be greater than {MAX_TEXT} characters."),
        )),
        Some(v) if v.chars().any(char::is_control) => Some(FieldViolation::new(
            field,
            format!("The {label} field must not contain control characters."),
        )),
        _ => None,
    }
}

/// Addresses pages could not use (not http(s)) and colours that are not hex.
pub(crate) fn look_violations(look: &BrandingLook) -> Vec<FieldViolation> {
    let mut violations = Vec::new();
    for (field, value) in [
        ("company_name", &look.company_name),
        ("sender_name", &look.sender_name),
        ("sender_title", &look.sender_title),
    ] {
        violations.extend(text_violation(field, value.as_deref(), false));
    }
    for (field, url) in [
        ("logo_url", &look.logo_url),
        ("website", &look.website),
        ("sender_photo_url", &look.sender_photo_url),
    ] {
        if let Some(url) = url {
            let ok = url.len() <= 2_000
                && url::Url::parse(url)
                    .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
            if !ok {
                violations.push(FieldViolation::new(
                    field,
                    format!(
                        "The {} field must be an http(s) address.",
                        field.replace('_', " ")
                    ),
                ));
            }
        }
    }
    if let Some(color) = &look.primary_color
        && crate::render::safe_color(color).is_empty()
    {
        violations.push(FieldViolation::new(
            "primary_color",
            "The primary color field must be a hex colour such as #0f766e.",
        ));
    }
    violations
}
