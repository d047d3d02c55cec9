//! What a file's columns mean: the lead fields, each header recognised, a file's mapping and
//! a row's values under it.

use std::collections::BTreeMap;

use crate::wire::DEFAULT_KEYS;

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
