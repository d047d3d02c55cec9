-- What lead pages' tracking scripts report. Every beacon is kept (bots marked, never counted);
-- what counts is summed into page_engagement and campaign_visitors as it arrives, so reading
-- analytics never scans the raw events.
CREATE TABLE page_events (
    id           BIGSERIAL PRIMARY KEY,
    workspace_id BIGINT  NOT NULL,
    campaign_id  BIGINT  NOT NULL,
    lead_id      BIGINT  NOT NULL,
    kind         TEXT    NOT NULL,  -- view | click | scroll | time
    -- `c:` + the first-party cookie id, or `h:` + a hash of address and browser under the day's salt.
    visitor      TEXT    NOT NULL,
    is_bot       BIGINT  NOT NULL,  -- 0/1
    seconds      BIGINT  NOT NULL DEFAULT 0,  -- time: engaged seconds
    target       TEXT,              -- click: the link or button
    created_at   BIGINT  NOT NULL
);
CREATE INDEX page_events_lead ON page_events (lead_id, id);

-- Counted engagement of one page (a lead in a campaign).
CREATE TABLE page_engagement (
    campaign_id        BIGINT  NOT NULL,
    lead_id            BIGINT  NOT NULL,
    workspace_id       BIGINT  NOT NULL,
    views              BIGINT  NOT NULL DEFAULT 0,
    first_viewed_at    BIGINT,
    last_viewed_at     BIGINT,
    clicks             BIGINT  NOT NULL DEFAULT 0,
    scrolled_to_bottom BIGINT  NOT NULL DEFAULT 0,  -- 0/1
    engaged_seconds    BIGINT  NOT NULL DEFAULT 0,
    PRIMARY KEY (campaign_id, lead_id)
);
CREATE INDEX page_engagement_lead ON page_engagement (lead_id);

-- Each campaign's unique visitors (counted beacons only), and whether they clicked.
CREATE TABLE campaign_visitors (
    campaign_id   BIGINT  NOT NULL,
    visitor       TEXT    NOT NULL,
    clicked       BIGINT  NOT NULL DEFAULT 0,  -- 0/1
    first_seen_at BIGINT  NOT NULL,
    PRIMARY KEY (campaign_id, visitor)
);

-- The salt of each day's visitor hashes (for browsers that refuse cookies); days older than
-- yesterday are deleted, after which their hashes can no longer be linked to an address.
CREATE TABLE visitor_salts (
    day  TEXT PRIMARY KEY,
    salt TEXT NOT NULL
);
