-- A lead's beacons (for its timeline, an export and an erasure) are found through two tables
-- instead of an index of `page_events` on `lead_id`; see the SQLite migration of the same name
-- for why. The triggers here act once per statement, on the statement's rows as a whole.
CREATE TABLE page_event_leads (
    lead_id  BIGINT NOT NULL,
    event_id BIGINT NOT NULL,
    PRIMARY KEY (lead_id, event_id)
);

CREATE TABLE page_event_leads_new (
    event_id BIGINT PRIMARY KEY,
    lead_id  BIGINT NOT NULL
);

INSERT INTO page_event_leads (lead_id, event_id) SELECT lead_id, id FROM page_events;
DROP INDEX page_events_lead;

CREATE FUNCTION page_events_found_by_lead() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO page_event_leads_new (event_id, lead_id) SELECT id, lead_id FROM inserted;
    RETURN NULL;
END $$;

CREATE TRIGGER page_events_found_by_lead AFTER INSERT ON page_events
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION page_events_found_by_lead();

-- An erased or expired beacon leaves neither table naming it.
CREATE FUNCTION page_events_forgotten_by_lead() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM page_event_leads p USING deleted d
        WHERE p.lead_id = d.lead_id AND p.event_id = d.id;
    DELETE FROM page_event_leads_new n USING deleted d WHERE n.event_id = d.id;
    RETURN NULL;
END $$;

CREATE TRIGGER page_events_forgotten_by_lead AFTER DELETE ON page_events
    REFERENCING OLD TABLE AS deleted
    FOR EACH STATEMENT EXECUTE FUNCTION page_events_forgotten_by_lead();
