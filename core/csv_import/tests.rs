//! Recognition of each export family's headers, sniffing and the reader's refusals.

use std::collections::BTreeMap;

use super::*;

/// The sample export's header row, recognised: each column's target as spelled.
fn recognised(name: &str) -> BTreeMap<String, String> {
    let path = format!(
        "{}/tests/data/exports/{name}.csv",
        env!("CARGO_MANIFEST_DIR")
    );
    let file = CsvFile::open(std::fs::File::open(path).unwrap()).unwrap();
    Mapping::recognise(&file.headers)
        .columns
        .into_iter()
        .map(|c| (c.header, c.target.spelled()))
        .collect()
}

fn assert_fields(name: &str, expected: &[(&str, &str)]) {
    let mapping = recognised(name);
    for (header, target) in expected {
        assert_eq!(
            mapping.get(*header).map(String::as_str),
            Some(*target),
            "{name}: {header}"
        );
    }
}

#[test]
fn hubspot_headers_are_recognised() {
    assert_fields(
        "hubspot",
        &[
            ("First Name", "first_name"),
            ("Last Name", "last_name"),
            ("Email Address", "email"),
            ("Phone Number", "phone"),
            ("Company Name", "company_name"),
            ("Job Title", "title"),
            ("Website URL", "company_domain"),
            ("Lifecycle Stage", "custom:lifecycle_stage"),
        ],
    );
}

#[test]
fn salesforce_headers_are_recognised() {
    assert_fields(
        "salesforce",
        &[
            ("Account Name", "company_name"),
            ("Email", "email"),
            ("Title", "title"),
            ("Website", "company_domain"),
        ],
    );
}

#[test]
fn apollo_headers_are_recognised() {
    assert_fields(
        "apollo",
        &[
            ("Company", "company_name"),
            ("Person Linkedin Url", "social_profile_url"),
            ("Work Direct Phone", "phone"),
            ("Corporate Phone", "custom:corporate_phone"),
            ("Email", "email"),
        ],
    );
}

#[test]
fn sales_navigator_headers_are_recognised() {
    assert_fields(
        "linkedin_sales_navigator",
        &[
            ("Work Email", "email"),
            ("Company Domain", "company_domain"),
            ("LinkedIn Profile", "social_profile_url"),
            ("Job Title", "title"),
        ],
    );
}

#[test]
fn lemlist_headers_are_recognised() {
    assert_fields(
        "lemlist",
        &[
            ("email", "email"),
            ("firstName", "first_name"),
            ("companyDomain", "company_domain"),
            ("linkedinUrl", "social_profile_url"),
            ("icebreaker", "custom:icebreaker"),
        ],
    );
}

#[test]
fn pipedrive_headers_are_recognised() {
    assert_fields(
        "pipedrive",
        &[
            ("Person - Email - Work", "email"),
            ("Person - Organization", "company_name"),
            ("Organization - Website", "company_domain"),
            ("Person - Job title", "title"),
            ("Person - Name", "custom:person_name"),
        ],
    );
}

#[test]
fn google_contacts_headers_are_recognised() {
    assert_fields(
        "google_contacts",
        &[
            ("E-mail 1 - Value", "email"),
            ("Organization Name", "company_name"),
            ("Organization Title", "title"),
            ("Phone 1 - Value", "phone"),
            ("Website 1 - Value", "company_domain"),
        ],
    );
}

#[test]
fn case_spaces_underscores_and_punctuation_are_ignored() {
    for header in [
        "EMAIL_ADDRESS",
        "e-mail address",
        " Email.Address ",
        "emailAddress",
    ] {
        assert_eq!(
            recognise(header).0,
            Target::Field(LeadField::Email),
            "{header}"
        );
    }
}

#[test]
fn a_second_column_of_a_field_becomes_a_custom_variable() {
    let mapping = Mapping::recognise(&["Email".into(), "Work Email".into()]);
    assert_eq!(mapping.columns[0].target, Target::Field(LeadField::Email));
    assert_eq!(
        mapping.columns[1].target,
        Target::Custom("work_email".into())
    );
}

#[test]
fn a_choice_overrides_recognition_and_frees_the_field() {
    let mapping = Mapping::recognise(&["Email".into(), "E-mail address (work)".into()])
        .with_choices(&[parse_choice("E-mail address (work)=email").unwrap()])
        .unwrap();
    assert_eq!(mapping.columns[0].target, Target::Ignored);
    assert_eq!(mapping.columns[1].target, Target::Field(LeadField::Email));
    assert!(
        Mapping::recognise(&["Email".into()])
            .with_choices(&[parse_choice("Nope=email").unwrap()])
            .is_err()
    );
}

#[test]
fn a_row_without_what_a_lead_needs_names_the_column_that_would_give_it() {
    let mapping = Mapping::recognise(&["Note".into(), "E-mail address".into()])
        .with_choices(&[parse_choice("E-mail address=ignore").unwrap()])
        .unwrap();
    let reason = mapping
        .values(&["hello".into(), "ada@example.com".into()])
        .unwrap_err();
    assert_eq!(
        reason,
        "no column was mapped to email; 'E-mail address' looks like one"
    );
}

#[test]
fn delimiters_are_sniffed() {
    assert_eq!(sniff_delimiter(b"a,b,c\n1,2,3"), b',');
    assert_eq!(sniff_delimiter(b"a;b;c\n1;2;3"), b';');
    assert_eq!(sniff_delimiter(b"a\tb\tc\n"), b'\t');
    assert_eq!(sniff_delimiter(b"\"a;b\",c,d\n"), b',');
    assert_eq!(sniff_delimiter(b"email\n"), b',');
}

#[test]
fn windows_1252_and_a_bom_are_read() {
    let file = CsvFile::open(&b"Vorname;Firma\nJos\xe9;Caf\xe9\n"[..]).unwrap();
    assert_eq!(file.encoding, Encoding::Windows1252);
    assert_eq!(file.delimiter, b';');
    let mut file = file;
    assert_eq!(file.next_row().unwrap().unwrap().fields, ["José", "Café"]);

    let mut file =
        CsvFile::open("\u{feff}Email\tName\n\"a@b.co\"\t\"two\nlines\"\n".as_bytes()).unwrap();
    assert_eq!(file.encoding, Encoding::Utf8);
    assert_eq!(file.headers, ["Email", "Name"]);
    let row = file.next_row().unwrap().unwrap();
    assert_eq!(row.fields, ["a@b.co", "two\nlines"]);
    assert_eq!(row.line, 2);
    assert_eq!(file.next_row().unwrap(), None);
}

#[test]
fn what_is_not_a_csv_is_refused() {
    assert_eq!(
        CsvFile::open(&b"\x89PNG\r\n\x1a\n\0\0"[..]).err(),
        Some(NotCsv::Binary)
    );
    assert_eq!(CsvFile::open(&b""[..]).err(), Some(NotCsv::Empty));
    let long = vec![b'a'; MAX_LINE_BYTES + 10];
    assert_eq!(CsvFile::open(&long[..]).err(), Some(NotCsv::LineTooLong));
    let wide = (0..10_000)
        .map(|i| format!("c{i}"))
        .collect::<Vec<_>>()
        .join(",");
    assert_eq!(
        CsvFile::open(wide.as_bytes()).err(),
        Some(NotCsv::TooManyColumns(10_000))
    );
}

#[test]
fn the_columns_of_a_file_of_rejected_rows_are_left_out() {
    let headers: Vec<String> = ["Email", "rejected_line", "Rejected Reason"]
        .map(String::from)
        .to_vec();
    let mapping = Mapping::recognise(&headers);
    let targets: Vec<Target> = mapping.columns.iter().map(|c| c.target.clone()).collect();
    assert_eq!(
        targets,
        vec![
            Target::Field(LeadField::Email),
            Target::Ignored,
            Target::Ignored
        ]
    );
}
