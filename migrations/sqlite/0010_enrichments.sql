-- Enrichment of leads: one row per (job, lead), with the types to run for it in order.
-- pending -> running (leased) -> done | failed. Written in the transaction that spends its
-- credits; what a failed type cost is given back in the transaction that ends the row.
CREATE TABLE enrichments (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id       TEXT    NOT NULL REFERENCES jobs (id),
    workspace_id INTEGER NOT NULL REFERENCES workspaces (id),
    lead_id      INTEGER NOT NULL REFERENCES leads (id),
    types        TEXT    NOT NULL,    -- comma-separated enrichment types, in the order they run
    status       TEXT    NOT NULL,
    credits      INTEGER NOT NULL,    -- what the row cost when it was queued
    attempts     INTEGER NOT NULL DEFAULT 0,
    lease_until  INTEGER,             -- while running: when another process may take it over
    error        TEXT,                -- why types failed, one sentence per type
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX enrichments_status ON enrichments (status, id);
CREATE INDEX enrichments_job ON enrichments (job_id, status);
CREATE INDEX enrichments_lead ON enrichments (lead_id, status);
