-- What lead pages' tracking scripts report. Every beacon is kept (bots marked, never counted);
-- what counts is summed into page_engagement and campaign_visitors as it arrives, so reading
-- analytics never scans the raw events.
CREATE TABLE page_events (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id INTEGER NOT NULL,
    campaign_id  INTEGER NOT NULL,
    lead_id      INTEGER NOT NULL,
    kind         TEXT    NOT NULL,  -- view | click | scroll | time
    -- `c:` + the first-party cookie id, or `h:` + a hash of address and browser under the day's salt.
    visitor      TEXT    NOT NULL,
    is_bot       INTEGER NOT NULL,  -- 0/1
    seconds      INTEGER NOT NULL DEFAULT 0,  -- time: engaged seconds
    target       TEXT,              -- click: the link or button
    created_at   INTEGER NOT NULL
);
CREATE INDEX page_events_lead ON page_events (lead_id, id);

-- Counted engagement of one page (a lead in a campaign).
CREATE TABLE page_engagement (
    campaign_id        INTEGER NOT NULL,
    lead_id            INTEGER NOT NULL,
    workspace_id       INTEGER NOT NULL,
    views              INTEGER NOT NULL DEFAULT 0,
    first_viewed_at    INTEGER,
    last_viewed_at     INTEGER,
    clicks             INTEGER NOT NULL DEFAULT 0,
    scrolled_to_bottom INTEGER NOT NULL DEFAULT 0,  -- 0/1
    engaged_seconds    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (campaign_id, lead_id)
);
CREATE INDEX page_engagement_lead ON page_engagement (lead_id);

-- Each campaign's unique visitors (counted beacons only), and whether they clicked.
CREATE TABLE campaign_visitors (
    campaign_id   INTEGER NOT NULL,
    visitor       TEXT    NOT NULL,
    clicked       INTEGER NOT NULL DEFAULT 0,  -- 0/1
    first_seen_at INTEGER NOT NULL,
    PRIMARY KEY (campaign_id, visitor)
);

-- The salt of each day's visitor hashes (for browsers that refuse cookies); days older than
-- yesterday are deleted, after which their hashes can no longer be linked to an address.
CREATE TABLE visitor_salts (
    day  TEXT PRIMARY KEY,
    salt TEXT NOT NULL
);
