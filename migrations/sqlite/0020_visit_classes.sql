-- Every beacon is classified (issue 26): `person` (counted), `unconfirmed` (shown, no human
-- evidence yet; counted once its view is confirmed), `automated`, `scanner_network`, with the
-- reason. `is_bot` stays "not counted" (1 for every class but `person`), so what reads counted
-- events is unchanged. `view_id` ties a page load's beacons to its view.
ALTER TABLE page_events ADD COLUMN class TEXT NOT NULL DEFAULT 'person';
ALTER TABLE page_events ADD COLUMN reason TEXT;
ALTER TABLE page_events ADD COLUMN view_id TEXT;
UPDATE page_events SET class = 'automated', reason = 'automation (recorded before classes)'
    WHERE is_bot = 1;
CREATE INDEX page_events_view ON page_events (view_id);
CREATE INDEX page_events_created ON page_events (created_at);

-- Views per campaign by class, kept as they are recorded and confirmed (so analytics' filtered
-- visits need no scan and survive the pruning of old events).
CREATE TABLE campaign_view_classes (
    campaign_id INTEGER NOT NULL,
    class       TEXT    NOT NULL,
    views       INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (campaign_id, class)
);
INSERT INTO campaign_view_classes (campaign_id, class, views)
    SELECT campaign_id, class, COUNT(*) FROM page_events WHERE kind = 'view'
    GROUP BY campaign_id, class;

-- The engagement score (issue 26), kept as its value at a fixed epoch so one column orders
-- leads by today's score: score_base = sum of weight x 2^((t - epoch) / half-life); today's
-- score is score_base x 2^(-(now - epoch) / half-life). hot_at: when the lead first crossed
-- the workspace's threshold (lead.hot was sent then).
ALTER TABLE leads ADD COLUMN score_base REAL NOT NULL DEFAULT 0;
ALTER TABLE leads ADD COLUMN hot_at INTEGER;
CREATE INDEX leads_score ON leads (workspace_id, score_base);

-- Leads erased (POST /leads/delete): who erased how many and what went, with no personal data
-- (lead ids are lps's own numbers; the counts say what was removed).
CREATE TABLE erasures (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id INTEGER NOT NULL,
    lead_ids     TEXT    NOT NULL,  -- JSON array of the erased leads' ids
    erased_by    TEXT    NOT NULL,  -- the user id and credential kind that asked
    removed      TEXT    NOT NULL,  -- JSON object: rows removed per kind
    erased_at    INTEGER NOT NULL
);
CREATE INDEX erasures_workspace ON erasures (workspace_id, id);
CREATE INDEX page_events_campaign_visitor ON page_events (campaign_id, visitor);
