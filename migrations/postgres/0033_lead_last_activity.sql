-- When a person last did something on one of the lead's pages (a counted view, click, scroll,
-- time on the page or a form submission): the leads list shows it, sorts by it and filters a
-- date range on it (issue 46). NULL: never. Kept current where engagement is recorded
-- (domain::engagement::note_activity); existing leads get it from what is kept of their past.
ALTER TABLE leads ADD COLUMN last_activity_at BIGINT;
UPDATE leads SET last_activity_at = GREATEST(
    (SELECT MAX(p.last_viewed_at) FROM page_engagement p WHERE p.lead_id = leads.id),
    (SELECT MAX(e.created_at) FROM page_events e
     WHERE e.lead_id = leads.id AND e.is_bot = 0
       AND (e.kind IN ('view', 'click', 'scroll') OR (e.kind = 'time' AND e.seconds > 0))),
    (SELECT MAX(f.created_at) FROM form_submissions f WHERE f.lead_id = leads.id)
);
CREATE INDEX leads_last_activity ON leads (workspace_id, last_activity_at DESC NULLS LAST, id DESC);
