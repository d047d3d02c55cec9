//! Visit classes and their counts as the API sends them (`lps.v1.VisitClass`, `VisitCount` in
//! `proto/lps/v1/visit_class.proto`).

use crate::domain::visit_class::{VisitClass, VisitCounts};
use crate::proto;

/// The class on the wire.
pub(crate) fn to_proto(class: VisitClass) -> proto::VisitClass {
    match class {
        VisitClass::Person => proto::VisitClass::Person,
        VisitClass::Unconfirmed => proto::VisitClass::Unconfirmed,
        VisitClass::Automated => proto::VisitClass::Automated,
        VisitClass::ScannerNetwork => proto::VisitClass::ScannerNetwork,
    }
}

/// The counts of the classes `keep` accepts, one entry each, in `VisitClass::ALL`'s order.
pub(crate) fn counts(
    counts: &VisitCounts,
    keep: impl Fn(VisitClass, i64) -> bool,
) -> Vec<proto::VisitCount> {
    counts
        .iter()
        .filter(|(class, count)| keep(*class, *count))
        .map(|(class, count)| proto::VisitCount {
            class: to_proto(class).into(),
            count,
        })
        .collect()
}
