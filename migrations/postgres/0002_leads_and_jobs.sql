-- Campaigns, brandings, leads, audiences, durable jobs and the callback outbox.

-- The secret that signs this workspace's callbacks (HMAC-SHA256).
ALTER TABLE workspaces ADD COLUMN callback_secret TEXT NOT NULL DEFAULT '';
UPDATE workspaces SET callback_secret = 'whsec_' || replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '');

CREATE TABLE brandings (
    id           BIGSERIAL PRIMARY KEY,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    name         TEXT    NOT NULL,
    is_default   BIGINT NOT NULL DEFAULT 0,  -- 0/1: one representation on both databases
    created_at   BIGINT NOT NULL
);
CREATE INDEX brandings_workspace ON brandings (workspace_id);
INSERT INTO brandings (workspace_id, name, is_default, created_at)
    SELECT id, 'Default branding', 1, created_at FROM workspaces;

CREATE TABLE campaigns (
    id           BIGSERIAL PRIMARY KEY,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    branding_id  BIGINT NOT NULL REFERENCES brandings (id),
    name         TEXT    NOT NULL,
    slug         TEXT    NOT NULL,
    prompt       TEXT,
    created_at   BIGINT NOT NULL,
    UNIQUE (workspace_id, slug)
);

CREATE TABLE leads (
    id                 BIGSERIAL PRIMARY KEY,
    workspace_id       BIGINT NOT NULL REFERENCES workspaces (id),
    -- Unguessable, unique, stable: the lead's part of every page address.
    slug               TEXT    NOT NULL UNIQUE,
    first_name         TEXT,
    email              TEXT,
    email_key          TEXT,  -- lower-cased email: the same person whatever the case
    company_name       TEXT,
    company_domain     TEXT,
    social_profile_url TEXT,
    custom_values      TEXT    NOT NULL DEFAULT '{}',  -- JSON object of custom variables
    source             TEXT,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL
);
CREATE UNIQUE INDEX leads_workspace_email ON leads (workspace_id, email_key)
    WHERE email_key IS NOT NULL;
CREATE UNIQUE INDEX leads_workspace_social ON leads (workspace_id, social_profile_url)
    WHERE social_profile_url IS NOT NULL;
CREATE INDEX leads_workspace_id ON leads (workspace_id, id);

-- A lead's page in a campaign.
CREATE TABLE campaign_leads (
    campaign_id BIGINT NOT NULL REFERENCES campaigns (id),
    lead_id     BIGINT NOT NULL REFERENCES leads (id),
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (campaign_id, lead_id)
);
CREATE INDEX campaign_leads_lead ON campaign_leads (lead_id);

CREATE TABLE audiences (
    id           BIGSERIAL PRIMARY KEY,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    name         TEXT    NOT NULL,
    description  TEXT,
    color        TEXT,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX audiences_workspace ON audiences (workspace_id);

CREATE TABLE audience_leads (
    audience_id BIGINT NOT NULL REFERENCES audiences (id) ON DELETE CASCADE,
    lead_id     BIGINT NOT NULL REFERENCES leads (id),
    PRIMARY KEY (audience_id, lead_id)
);
CREATE INDEX audience_leads_lead ON audience_leads (lead_id);

CREATE TABLE audience_campaigns (
    audience_id BIGINT NOT NULL REFERENCES audiences (id) ON DELETE CASCADE,
    campaign_id BIGINT NOT NULL REFERENCES campaigns (id),
    PRIMARY KEY (audience_id, campaign_id)
);

CREATE TABLE jobs (
    id             TEXT    PRIMARY KEY,
    workspace_id   BIGINT NOT NULL REFERENCES workspaces (id),
    kind           TEXT    NOT NULL,   -- upsert | import
    status         TEXT    NOT NULL,   -- pending | processing | completed | failed
    campaign_id    BIGINT REFERENCES campaigns (id),
    audience_id    BIGINT REFERENCES audiences (id) ON DELETE SET NULL,
    callback_url   TEXT,
    options        TEXT    NOT NULL DEFAULT '{}',  -- JSON: flags and campaign ids as requested
    total_rows     BIGINT NOT NULL,
    processed_rows BIGINT NOT NULL DEFAULT 0,
    failed_rows    BIGINT NOT NULL DEFAULT 0,
    error          TEXT,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);
CREATE INDEX jobs_workspace ON jobs (workspace_id);

-- One row per input lead, written with its job; `pending` until a worker stores it.
CREATE TABLE job_rows (
    id        BIGSERIAL PRIMARY KEY,
    job_id    TEXT    NOT NULL REFERENCES jobs (id),
    row_index BIGINT NOT NULL,
    payload   TEXT    NOT NULL,   -- JSON: the row's values and identifiers
    status    TEXT    NOT NULL,   -- pending | stored | failed
    lead_id   BIGINT,
    error     TEXT,
    UNIQUE (job_id, row_index)
);
CREATE INDEX job_rows_pending ON job_rows (status, id);

-- Callbacks to deliver; a row stays until delivered or given up.
CREATE TABLE callbacks (
    id              BIGSERIAL PRIMARY KEY,
    workspace_id    BIGINT NOT NULL REFERENCES workspaces (id),
    job_id          TEXT    NOT NULL,
    lead_id         BIGINT NOT NULL,
    url             TEXT    NOT NULL,
    payload         TEXT    NOT NULL,
    status          TEXT    NOT NULL,   -- pending | delivered | failed
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    last_error      TEXT,
    created_at      BIGINT NOT NULL
);
CREATE INDEX callbacks_due ON callbacks (status, next_attempt_at);
