//! `LeadsService`'s messages to and from core's values: a search's fields validated, a lead's
//! summary and export, the flags a job keeps.

use tonic::Status;

use crate::domain::jobs::JobOptions;
use crate::domain::lead::{self, LeadPayload, SentLead};
use crate::domain::lead_lists::{self, LeadFilter, LeadOrder, Search};
use crate::domain::leads::{ENGAGEMENT_VALUES, LeadView};
use crate::error::FieldViolation;
use crate::proto::{self};
use crate::services::json_of;
use crate::time;
use crate::validate::{Field, Validated, limit, optional_text, required, required_list};

pub(super) fn engagement_values(values: Vec<String>) -> Field<Vec<String>> {
    match values
        .iter()
        .find(|v| !ENGAGEMENT_VALUES.contains(&v.as_str()))
    {
        Some(bad) => Err(FieldViolation::new(
            "engagement",
            format!(
                "The selected engagement {bad:?} is invalid; allowed: {}.",
                ENGAGEMENT_VALUES.join(", ")
            ),
        )),
        None => Ok(values),
    }
}

pub(super) fn options(flags: Option<proto::LeadFlags>, from: Option<String>) -> JobOptions {
    let proto::LeadFlags {
        send_email,
        is_generate_ai_analysis,
        is_generate_person_analysis,
        is_scrape_person_posts,
        is_scrape_company_posts,
        enrich_data,
        generate_ai_variables,
        trigger_audience_summary,
    } = flags.unwrap_or_default();
    JobOptions {
        from,
        campaign_ids: Vec::new(),
        send_email,
        is_generate_ai_analysis,
        is_generate_person_analysis,
        is_scrape_person_posts,
        is_scrape_company_posts,
        enrich_data,
        generate_ai_variables,
        trigger_audience_summary,
        csv: None,
    }
}

/// A lead of a list, read from its protobuf value as [`LeadPayload::read`] reads JSON (the
/// same rules, without making JSON of thousands of leads first).
pub(super) fn payload(input: proto::LeadInput) -> LeadPayload {
    use prost_types::value::Kind;
    let Some(Kind::StructValue(mut item)) = input.lead.and_then(|lead| lead.kind) else {
        return LeadPayload::of_sent(SentLead::<Vec<_>>::NotAnObject);
    };
    let values = match item.fields.remove("values") {
        Some(prost_types::Value {
            kind: Some(Kind::StructValue(values)),
        }) => values.fields,
        None => Default::default(),
        // Anything else as its JSON says (a null, or a number JSON cannot write, is no values).
        Some(other) => match json_of(other) {
            serde_json::Value::Null => Default::default(),
            _ => return LeadPayload::of_sent(SentLead::<Vec<_>>::ValuesNotAnObject),
        },
    };
    // Each value as its JSON (a move for text, the usual value; made only for one value).
    let values = values
        .into_iter()
        .map(|(key, value)| (key, lead::sent_json(json_of(value))));
    LeadPayload::of_sent(SentLead::Lead {
        values,
        lead_id: item
            .fields
            .remove("lead_id")
            .map(json_of)
            .as_ref()
            .and_then(lead::integer),
        service_page_url: match item
            .fields
            .remove("service_page_url")
            .and_then(|url| url.kind)
        {
            Some(Kind::StringValue(url)) => Some(url),
            _ => None,
        },
    })
}

/// A mapping's columns as sent.
pub fn summary(lead: LeadView) -> proto::LeadSummary {
    let LeadView {
        id,
        service_page_url,
        name,
        first_name: _,
        email,
        company_name,
        company_domain,
        social_profile_url: _,
        custom: _,
        created_at,
        score,
        last_activity_at,
        pages,
    } = lead;
    proto::LeadSummary {
        lead_id: id,
        service_page_url,
        name,
        email,
        company_name,
        company_domain,
        created_at: Some(time::to_proto(created_at)),
        score,
        last_activity_at: last_activity_at.map(time::to_proto),
        pages: pages
            .into_iter()
            .map(|page| proto::LeadPage {
                campaign_id: page.campaign_id,
                campaign_name: page.campaign_name,
                url: page.url,
                created_at: Some(time::to_proto(page.created_at)),
            })
            .collect(),
    }
}

/// A lead of an export: as listed, with every variable.
pub(super) fn exported(lead: LeadView) -> proto::ExportedLead {
    let variables = lead.variables().into_iter().collect();
    proto::ExportedLead {
        lead: Some(summary(lead)),
        variables,
    }
}

/// What an export streams: a batch of leads per message.
pub type ExportStream = std::pin::Pin<
    Box<dyn tokio_stream::Stream<Item = Result<proto::ExportLeadsResponse, Status>> + Send>,
>;

/// The sorts a search may ask for, by name.
const SORTS: [(&str, LeadOrder); 3] = [
    ("created", LeadOrder::Created),
    ("score", LeadOrder::Score),
    ("last_activity", LeadOrder::LastActivity),
];

/// A search request read into what it asks for, every bad field reported at once.
pub(super) fn search_of(
    request: proto::SearchLeadsRequest,
    earlier: &impl crate::validate::Earlier,
) -> Result<Search, Status> {
    let proto::SearchLeadsRequest {
        workspace_id,
        search,
        campaign_ids,
        audience_ids,
        engagement,
        limit: page_size,
        offset,
        sort,
        last_activity_from,
        last_activity_to,
        hot_only,
        after,
        lead_ids,
    } = request;
    let names: Vec<&str> = SORTS.iter().map(|(name, _)| *name).collect();
    let order = crate::validate::one_of("sort", sort, &names).map(|sort| {
        SORTS
            .iter()
            .find(|(name, _)| Some(*name) == sort.as_deref())
            .map_or(LeadOrder::Created, |(_, order)| *order)
    });
    let after = match after {
        None => Ok(None),
        Some(text) => lead_lists::read_cursor(&text).map(Some).ok_or_else(|| {
            FieldViolation::new(
                "after",
                "The after field must be a next_cursor an earlier page gave.",
            )
        }),
    };
    // A cursor continues the order it was made in, whatever `sort` says.
    let order = match &after {
        Ok(Some(after)) => Ok(after.order()),
        _ => order,
    };
    let lead_ids = if lead_ids.len() > 1_000 {
        Err(FieldViolation::new(
            "lead_ids",
            "The lead ids field must not have more than 1000 items.",
        ))
    } else {
        Ok(lead_ids)
    };
    let (workspace_id, text, engagement, page_size, offset, order, after, lead_ids) = (
        required("workspace_id", workspace_id),
        optional_text("search", search, 255),
        engagement_values(engagement),
        limit("limit", page_size, 1, 100, 25),
        limit("offset", offset, 0, 1_000_000, 0),
        order,
        after,
        lead_ids,
    )
        .validated(earlier)?;
    let micros = |at: Option<prost_types::Timestamp>| at.map(|at| time::from_proto_micros(&at));
    Ok(Search {
        filter: LeadFilter {
            workspace_id,
            text,
            campaign_ids,
            audience_ids,
            engagement,
            min_score_base: None,
            active_from: micros(last_activity_from),
            active_to: micros(last_activity_to),
            lead_ids,
        },
        hot_only,
        order,
        after,
        limit: page_size,
        offset,
    })
}

/// `lead_ids`: 1 to `max` ids.
pub(super) fn lead_id_list(ids: &[i64], max: usize) -> crate::validate::Field<Vec<i64>> {
    let ids = required_list("lead_ids", ids.to_vec())?;
    if ids.len() > max {
        return Err(FieldViolation::new(
            "lead_ids",
            format!("The lead ids field must not have more than {max} items."),
        ));
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use prost_types::value::Kind;

    fn value(kind: Kind) -> prost_types::Value {
        prost_types::Value { kind: Some(kind) }
    }

    /// Any protobuf value: every kind, numbers whole and not, beyond 2^53, infinite and NaN,
    /// numeric text; nested in lists and objects whose keys are often a lead's own.
    fn any_value() -> impl Strategy<Value = prost_types::Value> {
        let number = prop_oneof![
            any::<f64>(),
            any::<i32>().prop_map(f64::from),
            Just(9e15),
            Just(f64::INFINITY),
            Just(f64::NAN),
        ];
        let scalar = prop_oneof![
            Just(prost_types::Value { kind: None }),
            Just(value(Kind::NullValue(0))),
            any::<bool>().prop_map(|b| value(Kind::BoolValue(b))),
            number.prop_map(|n| value(Kind::NumberValue(n))),
            prop_oneof![
                any::<String>(),
                " ?-?[0-9]{1,20} ?",
                "https://[a-z]{1,5}\\.example/p/c/[a-z]{3}"
            ]
            .prop_map(|s| value(Kind::StringValue(s))),
        ];
        let key = prop_oneof![
            Just("values".to_owned()),
            Just("lead_id".to_owned()),
            Just("service_page_url".to_owned()),
            Just("email".to_owned()),
            "[a-z]{1,3}",
        ];
        scalar.prop_recursive(3, 24, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4)
                    .prop_map(|values| value(Kind::ListValue(prost_types::ListValue { values }))),
                prop::collection::btree_map(key.clone(), inner, 0..6)
                    .prop_map(|fields| value(Kind::StructValue(prost_types::Struct { fields }))),
            ]
        })
    }

    proptest! {
        /// Read straight from protobuf, a lead is what reading its JSON made of it, whatever was
        /// sent, including the message of a lead that cannot be read.
        #[test]
        fn a_lead_is_read_from_protobuf_as_from_its_json(lead in any_value()) {
            let read = payload(proto::LeadInput { lead: Some(lead.clone()) });
            prop_assert_eq!(read, LeadPayload::read(json_of(lead)));
        }
    }

    #[test]
    fn a_lead_without_a_value_is_not_an_object() {
        assert_eq!(
            payload(proto::LeadInput { lead: None }),
            LeadPayload::read(serde_json::Value::Null)
        );
    }
}
