-- A lead's beacons (for its timeline, an export and an erasure) are found through two tables
-- instead of an index of `page_events` on `lead_id`.
--
-- Each stored beacon landed on a random page of that index (beacons arrive in no order of
-- lead), and the batch's commit wrote every such page whole: most of the cost of storing a
-- beacon (benches/README.md). Now a trigger appends the beacon's (id, lead) to
-- `page_event_leads_new`, in the order of ids, so a batch fills a page or two; every
-- `MERGE_AT` beacons (core/domain/engagement/record.rs) its pairs move, sorted by lead, into
-- `page_event_leads`, whose pages each merge then visits once in order. A lead's beacons are
-- those both tables name (`event_ids_of`, core/store/engagement.rs): the merged ones by key,
-- the few since the last merge by reading that small table whole.
CREATE TABLE page_event_leads (
    lead_id  INTEGER NOT NULL,
    event_id INTEGER NOT NULL,
    PRIMARY KEY (lead_id, event_id)
) WITHOUT ROWID;

CREATE TABLE page_event_leads_new (
    event_id INTEGER PRIMARY KEY,
    lead_id  INTEGER NOT NULL
);

INSERT INTO page_event_leads (lead_id, event_id) SELECT lead_id, id FROM page_events;
DROP INDEX page_events_lead;

CREATE TRIGGER page_events_found_by_lead AFTER INSERT ON page_events
BEGIN
    INSERT INTO page_event_leads_new (event_id, lead_id) VALUES (NEW.id, NEW.lead_id);
END;

-- An erased or expired beacon leaves neither table naming it.
CREATE TRIGGER page_events_forgotten_by_lead AFTER DELETE ON page_events
BEGIN
    DELETE FROM page_event_leads WHERE lead_id = OLD.lead_id AND event_id = OLD.id;
    DELETE FROM page_event_leads_new WHERE event_id = OLD.id;
END;
