//! `classify`'s unit tests.

use std::sync::Arc;

use super::*;
use crate::domain::engagement::known_pages::KnownPages;
use crate::domain::visit_class::VisitCounts;

const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
const SECOND: Micros = 1_000_000;

struct World {
    pages: KnownPages,
    networks: ScannerNetworks,
    budget: BeaconBudget,
    loads: PageLoads,
}

impl World {
    fn new() -> Self {
        let page = PageIds {
            campaign_slug: "spring".into(),
            lead_slug: "ada".into(),
            campaign_id: 7,
            lead_id: 11,
            workspace_id: 3,
        };
        let mut pages = KnownPages::default();
        pages.insert(Arc::new(page));
        Self {
            pages,
            networks: ScannerNetworks::open(None).expect("no file to read"),
            budget: BeaconBudget::default(),
            loads: PageLoads::new(Some("a test secret")),
        }
    }

    fn load(&self) -> String {
        self.loads.mint("spring", "ada")
    }

    /// A batch of `beacons`, each for its page in this world.
    fn batch(&self, beacons: Vec<Beacon>) -> Batch {
        let pages = beacons
            .iter()
            .map(|b| self.pages.get(&b.campaign_slug, &b.lead_slug).cloned())
            .collect();
        Batch::new(beacons, pages, "salt", true)
    }

    fn classify<'a>(
        &'a self,
        batch: &'a Batch,
        views: HashMap<String, ViewState>,
    ) -> Classified<'a> {
        let judges = Judges {
            scanner_networks: &self.networks,
            budget: &self.budget,
            page_loads: &self.loads,
        };
        classify(batch, views, &judges)
    }
}

fn beacon(kind: BeaconKind, view_id: Option<&str>, at: Micros) -> Beacon {
    Beacon {
        campaign_slug: "spring".into(),
        lead_slug: "ada".into(),
        kind,
        visitor_id: Some("0123456789abcdef0123456789abcdef".into()),
        ip_address: "203.0.113.9".into(),
        user_agent: FIREFOX.into(),
        webdriver: false,
        seconds: 0,
        target: None,
        occurred_at: at,
        view_id: view_id.map(str::to_owned),
        interaction: String::new(),
        visible_seconds: 0,
        gpc: false,
        workspace_id: None,
    }
}

fn classes(out: &Classified<'_>) -> Vec<(&'static str, String)> {
    out.events
        .iter()
        .map(|e| (e.class, e.reason.clone()))
        .collect()
}

fn views_of(out: &Classified<'_>, class: VisitClass) -> i64 {
    out.tally.classes.get(&7).map_or(0, |counts| counts[class])
}

#[test]
fn a_view_with_an_interaction_is_a_person_s_and_counted() {
    let world = World::new();
    let load = world.load();
    let mut view = beacon(BeaconKind::View, Some(&load), 10 * SECOND);
    view.interaction = "pointer".into();
    let batch = world.batch(vec![view]);
    let out = world.classify(&batch, HashMap::new());
    assert_eq!(
        classes(&out),
        [("person", "an interaction (pointer)".to_owned())]
    );
    assert_eq!(out.recorded.stored[VisitClass::Person], 1);
    assert_eq!(views_of(&out, VisitClass::Person), 1);
    let (_, delta) = &out.tally.deltas[&(7, 11)];
    assert_eq!(delta.views, 1);
    assert_eq!(out.tally.feed.len(), 1, "announced");
}

#[test]
fn a_view_without_evidence_waits_and_a_later_beacon_of_its_load_confirms_it() {
    let world = World::new();
    let load = world.load();
    let mut time = beacon(BeaconKind::Time, Some(&load), 15 * SECOND);
    time.seconds = 5;
    time.visible_seconds = 5;
    let batch = world.batch(vec![
        beacon(BeaconKind::View, Some(&load), 10 * SECOND),
        beacon(BeaconKind::Scroll, Some(&load), 11 * SECOND),
        time,
    ]);
    let out = world.classify(&batch, HashMap::new());
    assert_eq!(
        classes(&out),
        [
            ("person", "confirmed by visible for 5 s".to_owned()),
            ("person", "part of a person's view".to_owned()),
            ("person", "part of a person's view".to_owned()),
        ]
    );
    assert_eq!(out.recorded.stored[VisitClass::Person], 3);
    assert_eq!(out.recorded.stored[VisitClass::Unconfirmed], 0);
    assert_eq!(views_of(&out, VisitClass::Unconfirmed), 0);
    assert_eq!(views_of(&out, VisitClass::Person), 1);
    let (_, delta) = &out.tally.deltas[&(7, 11)];
    assert_eq!((delta.views, delta.engaged_seconds), (1, 5));
    assert!(delta.scrolled_to_bottom);
    assert!(
        out.confirmed.is_empty(),
        "nothing stored earlier to confirm"
    );
}

#[test]
fn a_view_never_confirmed_stays_unconfirmed_and_adds_nothing() {
    let world = World::new();
    let load = world.load();
    let batch = world.batch(vec![
        beacon(BeaconKind::View, Some(&load), 10 * SECOND),
        beacon(BeaconKind::Scroll, Some(&load), 11 * SECOND),
    ]);
    let out = world.classify(&batch, HashMap::new());
    assert_eq!(out.recorded.stored[VisitClass::Unconfirmed], 2);
    assert_eq!(views_of(&out, VisitClass::Unconfirmed), 1);
    assert!(out.tally.deltas.is_empty() && out.tally.feed.is_empty());
}

#[test]
fn a_view_lps_never_served_and_a_second_view_of_a_load_are_automation() {
    let world = World::new();
    let load = world.load();
    let mut first = beacon(BeaconKind::View, Some(&load), 10 * SECOND);
    first.interaction = "key".into();
    let forged = "00112233445566778899aabbccddeeff0011223344556677";
    let batch = world.batch(vec![
        first.clone(),
        first,
        beacon(BeaconKind::View, Some(forged), 10 * SECOND),
        beacon(BeaconKind::View, None, 10 * SECOND),
    ]);
    let out = world.classify(&batch, HashMap::new());
    let got = classes(&out);
    assert_eq!(got[0].0, "person");
    assert_eq!(
        got[1],
        ("automated", "a second view in one page load".into())
    );
    assert!(got[2].1.contains("never fetched"), "{got:?}");
    assert!(got[3].1.contains("without a page load id"), "{got:?}");
    assert_eq!(out.recorded.stored[VisitClass::Automated], 3);
    assert_eq!(views_of(&out, VisitClass::Automated), 3);
}

#[test]
fn beacons_of_a_load_lps_never_served_are_automation_and_keep_no_load_id() {
    let world = World::new();
    let forged = "00112233445566778899aabbccddeeff0011223344556677";
    let served = world.load();
    let mut click = beacon(BeaconKind::Click, Some(forged), 11 * SECOND);
    click.interaction = "pointer".into();
    // A load lps served, but for another page, is as good as made up here.
    let mut elsewhere = beacon(BeaconKind::View, Some(&served), 10 * SECOND);
    elsewhere.lead_slug = "grace".into();
    let mut world = world;
    let mut grace = PageIds::clone(world.pages.get("spring", "ada").unwrap());
    grace.lead_slug = "grace".into();
    grace.lead_id = 12;
    world.pages.insert(Arc::new(grace));
    let batch = world.batch(vec![
        beacon(BeaconKind::View, Some(forged), 10 * SECOND),
        click,
        elsewhere,
        beacon(BeaconKind::Click, Some(&served), 12 * SECOND),
    ]);
    let out = world.classify(&batch, HashMap::new());
    let never_fetched = "no page load lps served has this id: the page was never fetched";
    assert_eq!(
        classes(&out),
        [
            ("automated", never_fetched.to_owned()),
            ("automated", never_fetched.to_owned()),
            ("automated", never_fetched.to_owned()),
            // Served for this page, with no view shown: waits, as before.
            (
                "unconfirmed",
                "no shown view of this page load was recorded".to_owned()
            ),
        ]
    );
    let kept: Vec<Option<&str>> = out.events.iter().map(|e| e.view_id).collect();
    assert_eq!(kept, [None, None, None, Some(served.as_str())]);
    assert!(out.tally.deltas.is_empty() && out.tally.feed.is_empty());
}

#[test]
fn automation_is_kept_with_its_reason_and_never_counted() {
    let world = World::new();
    let load = world.load();
    let mut view = beacon(BeaconKind::View, Some(&load), 10 * SECOND);
    view.webdriver = true;
    view.interaction = "pointer".into();
    let mut click = beacon(BeaconKind::Click, Some(&load), 11 * SECOND);
    click.webdriver = true;
    let batch = world.batch(vec![view, click]);
    let out = world.classify(&batch, HashMap::new());
    assert_eq!(out.recorded.stored[VisitClass::Automated], 2);
    assert!(
        classes(&out)
            .iter()
            .all(|(c, r)| *c == "automated" && r.contains("webdriver"))
    );
    assert!(out.tally.deltas.is_empty() && out.tally.visitors.is_empty());
}

#[test]
fn a_beacon_for_no_known_page_is_dropped() {
    let world = World::new();
    let mut stranger = beacon(BeaconKind::View, None, 10 * SECOND);
    stranger.lead_slug = "nobody".into();
    let batch = world.batch(vec![stranger]);
    let out = world.classify(&batch, HashMap::new());
    assert_eq!(out.recorded.dropped, 1);
    assert!(out.events.is_empty());
    assert_eq!(out.recorded.stored, VisitCounts::default());
}

#[test]
fn a_view_stored_unconfirmed_earlier_is_confirmed_by_this_batch() {
    let world = World::new();
    let load = world.load();
    let views = HashMap::from([(
        load.clone(),
        ViewState::stored(VisitClass::Unconfirmed, (7, 11), 10 * SECOND),
    )]);
    let mut click = beacon(BeaconKind::Click, Some(&load), 12 * SECOND);
    click.target = Some("Book a call".into());
    let batch = world.batch(vec![click]);
    let out = world.classify(&batch, views);
    assert_eq!(
        classes(&out),
        [("person", "part of a person's view".into())]
    );
    assert_eq!(out.confirmed.len(), 1);
    assert_eq!(out.confirmed[0].view_id, load);
    assert_eq!(out.confirmed[0].reason, "confirmed by a click");
    assert_eq!(views_of(&out, VisitClass::Unconfirmed), -1);
    assert_eq!(views_of(&out, VisitClass::Person), 1);
    let (_, delta) = &out.tally.deltas[&(7, 11)];
    assert_eq!(delta.clicks, 1);
}

#[test]
fn beacons_after_a_view_not_counted_take_its_class() {
    let world = World::new();
    let load = world.load();
    let views = HashMap::from([(
        load.clone(),
        ViewState::stored(VisitClass::ScannerNetwork, (7, 11), 10 * SECOND),
    )]);
    let batch = world.batch(vec![beacon(BeaconKind::Click, Some(&load), 12 * SECOND)]);
    let out = world.classify(&batch, views);
    assert_eq!(
        classes(&out),
        [("scanner_network", "part of a view not counted".into())]
    );
    assert!(out.tally.deltas.is_empty());
}
