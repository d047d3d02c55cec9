//! What a visit is taken for ([`VisitClass`]) and visits counted by class ([`VisitCounts`]): the
//! one place a class is named. Adding a class is adding a variant here; the compiler then names
//! every place that stores, counts, sends or shows one (each matches on the class with no
//! wildcard arm, and [`VisitClass::ALL`] cannot leave a variant out).

use std::ops::{Index, IndexMut};

/// What a view (and every beacon of its page load, or a form submission) is taken for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, strum::EnumCount)]
pub enum VisitClass {
    /// A person's: an interaction, or visible at least
    /// [`CONFIRM_SECONDS`](crate::domain::beacon::CONFIRM_SECONDS). Counted.
    Person,
    /// Shown, without evidence of a person yet; counted once its view is confirmed.
    Unconfirmed,
    /// Automation: a webdriver, a headless or bot browser, a scanner's signature, or past a
    /// per-view budget.
    Automated,
    /// From a configured scanner network (`--scanner-networks`).
    ScannerNetwork,
}

impl VisitClass {
    /// How many classes there are (from the enum itself, by `strum`'s derive).
    pub const COUNT: usize = <Self as strum::EnumCount>::COUNT;

    /// Every class, in declaration order. Its length is the number of variants, so a variant
    /// left out does not compile; the assertion below keeps the order (and so no repeats).
    pub const ALL: [Self; Self::COUNT] = [
        Self::Person,
        Self::Unconfirmed,
        Self::Automated,
        Self::ScannerNetwork,
    ];

    /// The class as storage and the REST API spell it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Person => "person",
            Self::Unconfirmed => "unconfirmed",
            Self::Automated => "automated",
            Self::ScannerNetwork => "scanner_network",
        }
    }

    /// Whether a visit of this class counts as engagement (the others are kept and listed).
    pub const fn counted(self) -> bool {
        match self {
            Self::Person => true,
            Self::Unconfirmed | Self::Automated | Self::ScannerNetwork => false,
        }
    }

    /// The class as storage spells it ([`VisitClass::as_str`]); anything else is an error,
    /// never a guess (a row with an unknown class is a bug or a newer schema).
    pub fn from_stored(class: &str) -> crate::Result<Self> {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == class)
            .ok_or_else(|| {
                crate::Error::Internal(anyhow::anyhow!("unknown visit class {class:?} in storage"))
            })
    }

    /// Its place in [`VisitClass::ALL`] and in [`VisitCounts`].
    const fn position(self) -> usize {
        self as usize
    }
}

// `ALL[i]` is the variant declared i-th: every variant once, and `position` indexes `ALL`.
const _: () = {
    let mut i = 0;
    while i < VisitClass::COUNT {
        assert!(VisitClass::ALL[i].position() == i);
        i += 1;
    }
};

/// A count per class (visits, views or beacons), indexed by the class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VisitCounts([i64; VisitClass::COUNT]);

impl VisitCounts {
    /// Each class with its count, in [`VisitClass::ALL`]'s order.
    pub fn iter(&self) -> impl Iterator<Item = (VisitClass, i64)> + '_ {
        VisitClass::ALL
            .into_iter()
            .map(|class| (class, self[class]))
    }

    /// The sum over the classes that are not counted as engagement.
    pub fn not_counted(&self) -> i64 {
        self.iter()
            .filter(|(class, _)| !class.counted())
            .map(|(_, n)| n)
            .sum()
    }
}

impl Index<VisitClass> for VisitCounts {
    type Output = i64;

    fn index(&self, class: VisitClass) -> &i64 {
        &self.0[class.position()]
    }
}

impl IndexMut<VisitClass> for VisitCounts {
    fn index_mut(&mut self, class: VisitClass) -> &mut i64 {
        &mut self.0[class.position()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Adding a variant breaks the build here until it is listed: the match has no wildcard
    /// arm, and `ALL` (typed by the number of variants) must list it before anything compiles.
    /// Every other place that counts a class matches the same way (`as_str`, `counted`, the
    /// proto conversion in `core/services/visit_classes.rs`, the REST body in
    /// `edge/operations/campaigns.rs`, the dashboard's words in `edge/dashboard/home.rs`).
    #[test]
    fn every_class_is_listed_once_and_named_once() {
        for (i, class) in VisitClass::ALL.into_iter().enumerate() {
            let declared = match class {
                VisitClass::Person => 0,
                VisitClass::Unconfirmed => 1,
                VisitClass::Automated => 2,
                VisitClass::ScannerNetwork => 3,
            };
            assert_eq!(declared, i, "{class:?}");
            assert_eq!(VisitClass::from_stored(class.as_str()).ok(), Some(class));
        }
        let mut names: Vec<&str> = VisitClass::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), VisitClass::COUNT, "names are distinct");
    }

    #[test]
    fn an_unknown_stored_class_is_an_error_not_a_guess() {
        assert!(VisitClass::from_stored("robot").is_err());
        assert!(VisitClass::from_stored("").is_err());
        assert!(VisitClass::from_stored("Person").is_err());
    }

    #[test]
    fn counts_are_indexed_by_class_and_only_a_person_is_counted() {
        let mut counts = VisitCounts::default();
        counts[VisitClass::Automated] += 2;
        counts[VisitClass::Person] += 5;
        counts[VisitClass::Unconfirmed] -= 1;
        assert_eq!(counts[VisitClass::Automated], 2);
        assert_eq!(counts[VisitClass::ScannerNetwork], 0);
        assert_eq!(counts.not_counted(), 1);
        assert_eq!(
            counts.iter().collect::<Vec<_>>(),
            vec![
                (VisitClass::Person, 5),
                (VisitClass::Unconfirmed, -1),
                (VisitClass::Automated, 2),
                (VisitClass::ScannerNetwork, 0),
            ]
        );
    }
}
