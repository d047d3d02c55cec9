//! Workspaces, their lead variables and their own settings (the hot threshold, the time
//! zone).

use crate::auth::Principal;
use crate::error::FieldViolation;
use crate::store::retry_conflicts;
use crate::store::workspaces::WorkspaceRow;
use crate::store::{Db, brandings, variables, workspaces};
use crate::{App, Error, Result, time};

/// The highest hot threshold a workspace may set (scores of real people stay far below).
pub const MOST_HOT_SCORE: f64 = 1_000.0;

/// A workspace's own settings, as they apply now.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub workspace_id: i64,
    /// The score at which its leads are hot (0: never).
    pub hot_score: f64,
    /// Whether that is the server's `--hot-score` (the workspace set none).
    pub hot_score_is_default: bool,
    /// Its IANA time zone (`UTC` until set).
    pub time_zone: String,
}

impl Settings {
    pub fn of(app: &App, row: &WorkspaceRow) -> Self {
        Self {
            workspace_id: row.id,
            hot_score: hot_threshold_of(app, row.hot_score),
            hot_score_is_default: row.hot_score.is_none(),
            time_zone: row.time_zone.clone().unwrap_or_else(|| "UTC".to_owned()),
        }
    }
}

/// The score at which a workspace's leads are hot: its own, else the server's; 0 never.
pub fn hot_threshold_of(app: &App, own: Option<f64>) -> f64 {
    own.unwrap_or(app.config.hot_score).max(0.0)
}

/// The score at which the workspace's leads are hot now.
pub async fn hot_threshold(
    app: &App,
    conn: &mut sqlx::AnyConnection,
    workspace_id: i64,
) -> Result<f64> {
    let own = workspaces::hot_score(conn, workspace_id).await?;
    Ok(hot_threshold_of(app, own))
}

/// The workspace's settings, for anyone who reaches it.
pub async fn settings(app: &App, principal: &Principal, workspace_id: i64) -> Result<Settings> {
    let workspace = principal.reach(&app.db, workspace_id).await?;
    Ok(Settings::of(app, &workspace))
}

/// Changes what is given of the workspace's settings (owners only): `hot_score` from 0
/// (never) to [`MOST_HOT_SCORE`]; `time_zone` an IANA name, or empty for UTC.
pub async fn update_settings(
    app: &App,
    principal: &Principal,
    workspace_id: i64,
    hot_score: Option<f64>,
    time_zone: Option<String>,
) -> Result<Settings> {
    principal.is_owner()?;
    let workspace = principal.reach(&app.db, workspace_id).await?;
    let mut violations = Vec::new();
    if let Some(score) = hot_score
        && !(score.is_finite() && (0.0..=MOST_HOT_SCORE).contains(&score))
    {
        violations.push(FieldViolation::new(
            "hot_score",
            "The hot score must be a number from 0 (no lead is ever hot) to 1000.",
        ));
    }
    if let Err(violation) = crate::validate::time_zone("time_zone", time_zone.clone()) {
        violations.push(violation);
    }
    if !violations.is_empty() {
        return Err(Error::Invalid(violations));
    }
    let time_zone = match time_zone.map(|z| z.trim().to_owned()) {
        Some(zone) if zone.is_empty() => None,
        Some(zone) => Some(zone),
        None => workspace.time_zone.clone(),
    };
    let hot_score = hot_score.or(workspace.hot_score);
    workspaces::set_settings(app.db.pool(), workspace.id, hot_score, time_zone.as_deref()).await?;
    let row = workspaces::get(app.db.pool(), workspace.id)
        .await?
        .ok_or(Error::WorkspaceForbidden)?;
    Ok(Settings::of(app, &row))
}

/// The five variables every workspace has, with the help text shown for each.
pub const DEFAULT_VARIABLES: [(&str, &str); 5] = [
    ("first_name", "The lead's first name."),
    ("email", "The lead's email address."),
    ("company_name", "The name of the lead's company."),
    (
        "company_domain",
        "The domain of the lead's company website, e.g. example.com.",
    ),
    (
        "social_profile_url",
        "The address of the lead's social network profile.",
    ),
];

/// A variable as listed: default ones carry help text, custom ones do not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    pub key: String,
    pub help_text: Option<&'static str>,
}

/// The default variables followed by the workspace's custom ones, oldest first.
pub async fn list_variables(
    db: &Db,
    principal: &Principal,
    workspace_id: i64,
) -> Result<Vec<Variable>> {
    let workspace = principal.reach(db, workspace_id).await?;
    let custom = variables::list_custom_keys(db.pool(), workspace.id).await?;
    Ok(DEFAULT_VARIABLES
        .iter()
        .map(|(key, help)| Variable {
            key: (*key).to_owned(),
            help_text: Some(help),
        })
        .chain(custom.into_iter().map(|key| Variable {
            key,
            help_text: None,
        }))
        .collect())
}

/// Creates a workspace in an account, with a slug unique across the service, its own callback
/// signing secret and a default branding.
pub async fn create(db: &Db, account_id: i64, name: &str) -> Result<i64> {
    let base = slugify(name);
    let now = time::now();
    retry_conflicts(|| async {
        let mut tx = db.begin_write().await?;
        let taken = workspaces::slugs_like(&mut *tx, &base).await?;
        let slug = first_free_slug(&base, &taken);
        let secret = super::webhook_signature::new_secret();
        let id = workspaces::insert(&mut *tx, account_id, name, &slug, &secret, now).await?;
        brandings::insert(
            &mut *tx,
            id,
            "Default branding",
            true,
            &Default::default(),
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(id)
    })
    .await
}

/// Lower-case ASCII letters and digits joined by single dashes; `workspace` if nothing is left.
pub fn slugify(name: &str) -> String {
    let mut slug = String::with_capacity(name.len());
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    let slug: String = slug.chars().take(60).collect();
    if slug.is_empty() {
        "workspace".to_owned()
    } else {
        slug.trim_end_matches('-').to_owned()
    }
}

/// `base`, or `base-2`, `base-3`, ... whichever is not yet taken.
pub fn first_free_slug(base: &str, taken: &[String]) -> String {
    if !taken.iter().any(|s| s == base) {
        return base.to_owned();
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|candidate| !taken.contains(candidate))
        .expect("an unbounded range always has a free slug")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_lowercase_dashed_ascii() {
        assert_eq!(slugify("Acme Sales — EU 2026!"), "acme-sales-eu-2026");
        assert_eq!(slugify("  --  "), "workspace");
        assert_eq!(slugify("Ünïcode"), "n-code");
    }

    #[test]
    fn taken_slugs_get_the_next_number() {
        let taken = vec!["acme".to_owned(), "acme-2".to_owned()];
        assert_eq!(first_free_slug("acme", &taken), "acme-3");
        assert_eq!(first_free_slug("beta", &taken), "beta");
    }
}
