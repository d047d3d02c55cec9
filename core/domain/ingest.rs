//! Storing input leads into a workspace: each row is matched to an existing lead (by id, page
//! address, email in any case, or social profile URL; earlier rows of the same batch count
//! too), then updated, or created when it carries an email or a social profile URL. Custom
//! keys become variables; stored leads get their pages and audience. A bad row is reported
//! and never sinks the batch.
//!
//! Used inside a worker's claim transaction and by the immediate (`sync`) import, so the two
//! paths store leads identically. The work is done in a few multi-row statements per batch.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use sqlx::AnyConnection;

use crate::Result;
pub use crate::domain::lead::LeadPayload;
use crate::domain::lead::{self, DEFAULT_KEYS, display_name};
use crate::store::leads::{self, LeadRow, LeadValues};
use crate::store::{audiences, campaigns, variables};
use crate::time::Micros;

/// Where stored leads go.
#[derive(Debug, Clone, Default)]
pub struct Target {
    pub workspace_id: i64,
    /// Campaigns whose pages the leads get.
    pub campaign_ids: Vec<i64>,
    pub audience_id: Option<i64>,
    /// The `from` of the request.
    pub source: Option<String>,
}

/// A stored lead as callers report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLead {
    pub id: i64,
    pub slug: String,
    pub name: String,
    pub email: Option<String>,
    pub company_name: Option<String>,
    /// True when this row created the lead, false when it updated one.
    pub created: bool,
}

/// What became of one input row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Stored(StoredLead),
    Failed(String),
}

/// A lead being worked on in this batch.
struct Working {
    id: Option<i64>,
    slug: String,
    values: Values,
    dirty: bool,
    created_here: bool,
}

/// A lead's values in a form that merges easily.
#[derive(Debug, Clone, Default)]
struct Values {
    defaults: BTreeMap<&'static str, String>,
    custom: BTreeMap<String, String>,
}

impl Values {
    fn of_row(row: &LeadRow) -> Self {
        let mut defaults = BTreeMap::new();
        for (key, value) in [
            ("first_name", &row.first_name),
            ("email", &row.email),
            ("company_name", &row.company_name),
            ("company_domain", &row.company_domain),
            ("social_profile_url", &row.social_profile_url),
        ] {
            if let Some(value) = value {
                defaults.insert(key, value.clone());
            }
        }
        let custom = serde_json::from_str(&row.custom_values).unwrap_or_default();
        Self { defaults, custom }
    }

    /// Overwrites with every value the row gives; true if anything changed.
    fn merge(&mut self, other: &Values) -> bool {
        let mut changed = false;
        for (key, value) in &other.defaults {
            changed |= self.defaults.insert(key, value.clone()).as_ref() != Some(value);
        }
        for (key, value) in &other.custom {
            changed |= self.custom.insert(key.clone(), value.clone()).as_ref() != Some(value);
        }
        changed
    }

    fn email_key(&self) -> Option<String> {
        self.defaults.get("email").map(|e| e.to_lowercase())
    }

    fn social(&self) -> Option<String> {
        self.defaults.get("social_profile_url").cloned()
    }

    fn to_store(&self) -> LeadValues {
        let get = |key| self.defaults.get(key).cloned();
        LeadValues {
            first_name: get("first_name"),
            email: get("email"),
            company_name: get("company_name"),
            company_domain: get("company_domain"),
            social_profile_url: get("social_profile_url"),
            custom_values: serde_json::to_string(&self.custom).unwrap_or_else(|_| "{}".into()),
        }
    }

    fn name(&self) -> String {
        display_name(
            self.defaults.get("first_name").map(String::as_str),
            self.custom.get("last_name").map(String::as_str),
        )
    }
}

/// A row checked and normalised: what to look the lead up by and what to write.
struct Prepared {
    values: Values,
    slug: Option<String>,
}

/// Checks and normalises one row, or says what is wrong with it.
fn prepare(payload: &LeadPayload) -> Result<Prepared, String> {
    if let Some(reason) = &payload.invalid {
        return Err(reason.clone());
    }
    let mut values = Values::default();
    for (key, value) in &payload.values {
        let key = key.trim();
        let value = lead::normalise_value(key, value)?;
        if value.is_empty() {
            continue;
        }
        match DEFAULT_KEYS.iter().find(|default| **default == key) {
            Some(default) => {
                values.defaults.insert(default, value);
            }
            None => {
                lead::check_key(key)?;
                values.custom.insert(key.to_owned(), value);
            }
        }
    }
    let slug = payload
        .service_page_url
        .as_deref()
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .map(|url| {
            url.split(['?', '#'])
                .next()
                .unwrap_or_default()
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_owned()
        });
    Ok(Prepared { values, slug })
}

/// Stores `rows` into the target, in the caller's transaction; one outcome per row, in order.
/// In steps: the batch's possible matches fetched at once, every row resolved against them
/// (and against the rows before it), the new and changed leads written, then their variables,
/// pages and audience.
pub async fn store(
    conn: &mut AnyConnection,
    target: &Target,
    rows: &[LeadPayload],
    now: Micros,
) -> Result<Vec<Outcome>> {
    let prepared: Vec<Result<Prepared, String>> = rows.iter().map(prepare).collect();
    let mut batch = Batch::fetch(conn, target.workspace_id, rows, &prepared).await?;
    let resolved: Vec<Resolution> = rows
        .iter()
        .zip(prepared)
        .map(|(row, prepared)| batch.resolve(row.lead_id, prepared?))
        .collect();
    batch.write(conn, target, now).await?;
    batch.attach(conn, target, &resolved, now).await?;
    Ok(batch.outcomes(resolved))
}

/// What one row resolved to: a lead of the batch (by index) and whether the row created it,
/// or why the row was refused.
type Resolution = std::result::Result<(usize, bool), String>;

/// The leads a batch works on: those its rows could match, then those its rows create, with
/// the indexes rows are matched by.
#[derive(Default)]
struct Batch {
    leads: Vec<Working>,
    by_id: HashMap<i64, usize>,
    by_slug: HashMap<String, usize>,
    by_email: HashMap<String, usize>,
    by_social: HashMap<String, usize>,
}

impl Batch {
    /// Every existing lead the rows could match, fetched at once.
    async fn fetch(
        conn: &mut AnyConnection,
        workspace_id: i64,
        rows: &[LeadPayload],
        prepared: &[Result<Prepared, String>],
    ) -> Result<Self> {
        let mut ids = BTreeSet::new();
        let mut slugs = BTreeSet::new();
        let mut emails = BTreeSet::new();
        let mut socials = BTreeSet::new();
        for (row, prepared) in rows.iter().zip(prepared) {
            let Ok(prepared) = prepared else { continue };
            ids.extend(row.lead_id);
            slugs.extend(prepared.slug.clone());
            emails.extend(prepared.values.email_key());
            socials.extend(prepared.values.social());
        }
        let existing = leads::find_matches(
            &mut *conn,
            workspace_id,
            &ids.into_iter().collect::<Vec<_>>(),
            &slugs.into_iter().collect::<Vec<_>>(),
            &emails.into_iter().collect::<Vec<_>>(),
            &socials.into_iter().collect::<Vec<_>>(),
        )
        .await?;
        let mut batch = Self::default();
        for row in existing {
            let index = batch.leads.len();
            batch.by_id.insert(row.id, index);
            batch.by_slug.insert(row.slug.clone(), index);
            let values = Values::of_row(&row);
            if let Some(email) = values.email_key() {
                batch.by_email.insert(email, index);
            }
            if let Some(social) = values.social() {
                batch.by_social.insert(social, index);
            }
            batch.leads.push(Working {
                id: Some(row.id),
                slug: row.slug,
                values,
                dirty: false,
                created_here: false,
            });
        }
        Ok(batch)
    }

    /// Matches one row: by id or page address when given (which must exist), else by email,
    /// then social profile URL; updates the match or creates a lead. A row may not take an
    /// email or profile URL another lead has.
    fn resolve(&mut self, lead_id: Option<i64>, prepared: Prepared) -> Resolution {
        let email = prepared.values.email_key();
        let social = prepared.values.social();
        let found = if let Some(id) = lead_id {
            Some(*self.by_id.get(&id).ok_or("Lead not found")?)
        } else if let Some(slug) = &prepared.slug {
            Some(*self.by_slug.get(slug).ok_or("Lead not found")?)
        } else {
            email
                .as_ref()
                .and_then(|e| self.by_email.get(e))
                .or_else(|| social.as_ref().and_then(|s| self.by_social.get(s)))
                .copied()
        };
        let Some(index) = found else {
            if email.is_none() && social.is_none() {
                return Err("A new lead needs an email or a social_profile_url.".into());
            }
            let index = self.leads.len();
            self.index(index, email, social);
            self.leads.push(Working {
                id: None,
                slug: crate::random::lead_slug(),
                values: prepared.values,
                dirty: false,
                created_here: true,
            });
            return Ok((index, true));
        };
        let taken = |key: &Option<String>, by: &HashMap<String, usize>| {
            key.as_ref()
                .and_then(|k| by.get(k))
                .is_some_and(|i| *i != index)
        };
        if taken(&email, &self.by_email) {
            return Err("Another lead in this workspace already has this email address.".into());
        }
        if taken(&social, &self.by_social) {
            return Err(
                "Another lead in this workspace already has this social profile url.".into(),
            );
        }
        let lead = &mut self.leads[index];
        // A new email or profile URL replaces the lead's old one in the indexes.
        if let (Some(_), Some(old)) = (&email, lead.values.email_key()) {
            self.by_email.remove(&old);
        }
        if let (Some(_), Some(old)) = (&social, lead.values.social()) {
            self.by_social.remove(&old);
        }
        lead.dirty |= lead.values.merge(&prepared.values);
        self.index(index, email, social);
        Ok((index, false))
    }

    fn index(&mut self, index: usize, email: Option<String>, social: Option<String>) {
        if let Some(email) = email {
            self.by_email.insert(email, index);
        }
        if let Some(social) = social {
            self.by_social.insert(social, index);
        }
    }

    /// New leads in multi-row inserts, then updates of the existing ones that changed.
    async fn write(
        &mut self,
        conn: &mut AnyConnection,
        target: &Target,
        now: Micros,
    ) -> Result<()> {
        let new: Vec<usize> = (0..self.leads.len())
            .filter(|i| self.leads[*i].id.is_none())
            .collect();
        for chunk in new.chunks(400) {
            let values: Vec<(String, LeadValues)> = chunk
                .iter()
                .map(|i| {
                    (
                        self.leads[*i].slug.clone(),
                        self.leads[*i].values.to_store(),
                    )
                })
                .collect();
            let inserted = leads::insert_many(
                &mut *conn,
                target.workspace_id,
                &values,
                target.source.as_deref(),
                now,
            )
            .await?;
            let ids: HashMap<String, i64> =
                inserted.into_iter().map(|(id, slug)| (slug, id)).collect();
            for i in chunk {
                self.leads[*i].id = ids.get(&self.leads[*i].slug).copied();
            }
        }
        for lead in self
            .leads
            .iter()
            .filter(|lead| lead.dirty && !lead.created_here)
        {
            if let Some(id) = lead.id {
                leads::update(&mut *conn, id, &lead.values.to_store(), now).await?;
            }
        }
        Ok(())
    }

    /// The stored leads' custom keys become variables of the workspace; the leads get pages in
    /// the target campaigns and those linked to the target audience, and join the audience.
    async fn attach(
        &self,
        conn: &mut AnyConnection,
        target: &Target,
        resolved: &[Resolution],
        now: Micros,
    ) -> Result<()> {
        let stored = || resolved.iter().flatten().map(|(i, _)| &self.leads[*i]);
        let keys: BTreeSet<&str> = stored()
            .flat_map(|lead| lead.values.custom.keys().map(String::as_str))
            .collect();
        variables::ensure_keys(
            &mut *conn,
            target.workspace_id,
            &keys.into_iter().collect::<Vec<_>>(),
            now,
        )
        .await?;
        let stored_ids: Vec<i64> = {
            let mut seen = BTreeSet::new();
            stored()
                .filter_map(|lead| lead.id)
                .filter(|id| seen.insert(*id))
                .collect()
        };
        let mut campaign_ids: BTreeSet<i64> = target.campaign_ids.iter().copied().collect();
        if let Some(audience_id) = target.audience_id {
            campaign_ids.extend(audiences::linked_campaigns(&mut *conn, audience_id).await?);
            audiences::add_members(&mut *conn, audience_id, &stored_ids).await?;
        }
        let pairs: Vec<(i64, i64)> = campaign_ids
            .iter()
            .flat_map(|campaign| stored_ids.iter().map(move |lead| (*campaign, *lead)))
            .collect();
        campaigns::attach_leads(&mut *conn, &pairs, now).await?;
        Ok(())
    }

    /// Each row's outcome, as callers report it.
    fn outcomes(&self, resolved: Vec<Resolution>) -> Vec<Outcome> {
        resolved
            .into_iter()
            .map(|resolution| match resolution {
                Err(reason) => Outcome::Failed(reason),
                Ok((index, created)) => {
                    let lead = &self.leads[index];
                    Outcome::Stored(StoredLead {
                        id: lead.id.unwrap_or_default(),
                        slug: lead.slug.clone(),
                        name: lead.values.name(),
                        email: lead.values.defaults.get("email").cloned(),
                        company_name: lead.values.defaults.get("company_name").cloned(),
                        created,
                    })
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(values: &[(&str, &str)]) -> LeadPayload {
        LeadPayload {
            values: values
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..LeadPayload::default()
        }
    }

    #[test]
    fn defaults_are_normalised_and_the_rest_is_custom() {
        let prepared = prepare(&payload(&[
            ("email", " Ada@Example.com "),
            ("social_profile_url", "social.example/in/ada/"),
            ("company_domain", "https://Example.com/about"),
            ("favourite_colour", "green"),
            ("empty", "  "),
        ]))
        .unwrap();
        assert_eq!(
            prepared.values.email_key().as_deref(),
            Some("ada@example.com")
        );
        assert_eq!(
            prepared.values.social().as_deref(),
            Some("https://social.example/in/ada")
        );
        assert_eq!(prepared.values.defaults["company_domain"], "example.com");
        assert_eq!(prepared.values.custom.len(), 1);
    }

    #[test]
    fn malformed_emails_are_refused() {
        for email in [
            "ada",
            "ada@",
            "@example.com",
            "ada@example",
            "a da@example.com",
        ] {
            assert!(prepare(&payload(&[("email", email)])).is_err(), "{email}");
        }
    }

    #[test]
    fn page_addresses_yield_the_lead_slug() {
        let row = LeadPayload {
            service_page_url: Some("http://h/p/spring/abc123/?utm=x".into()),
            ..LeadPayload::default()
        };
        assert_eq!(prepare(&row).unwrap().slug.as_deref(), Some("abc123"));
    }

    #[test]
    fn rows_of_one_batch_match_each_other_and_never_take_anothers_email() {
        let mut batch = Batch::default();
        let row = |values: &[(&str, &str)]| prepare(&payload(values)).unwrap();
        let first = batch.resolve(None, row(&[("email", "ada@example.com")]));
        assert_eq!(first, Ok((0, true)));
        // The same person again, in another case: the lead the first row created, updated.
        let again = batch.resolve(
            None,
            row(&[("email", "ADA@example.com"), ("first_name", "Ada")]),
        );
        assert_eq!(again, Ok((0, false)));
        assert_eq!(batch.leads[0].values.defaults["first_name"], "Ada");
        let grace = batch.resolve(None, row(&[("email", "grace@example.com")]));
        assert_eq!(grace, Ok((1, true)));
        // Ada's email with Grace's profile URL: matched to Ada by email, refused for the URL.
        batch
            .resolve(
                None,
                row(&[
                    ("email", "grace@example.com"),
                    ("social_profile_url", "https://s.example/g"),
                ]),
            )
            .unwrap();
        let steal = batch.resolve(
            None,
            row(&[
                ("social_profile_url", "https://s.example/g"),
                ("email", "ada@example.com"),
            ]),
        );
        assert!(
            steal
                .unwrap_err()
                .contains("already has this social profile url")
        );
        assert_eq!(batch.leads[0].values.social(), None);
        assert_eq!(
            batch.resolve(Some(99), row(&[("first_name", "X")])),
            Err("Lead not found".to_owned())
        );
        assert!(
            batch
                .resolve(None, row(&[("first_name", "Nobody")]))
                .unwrap_err()
                .contains("needs an email")
        );
    }
}
