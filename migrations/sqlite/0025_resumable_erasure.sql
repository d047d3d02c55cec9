-- Erasure that survives a kill: every lead erased is remembered by id (no personal data), so
-- erasing it again succeeds and reports it erased instead of "Lead not found"; and a request
-- is kept until every lead it names is erased, so core finishes an interrupted one when it
-- starts again (domain::erasure).
CREATE TABLE erased_leads (
    lead_id      INTEGER PRIMARY KEY,
    workspace_id INTEGER NOT NULL,
    erased_at    INTEGER NOT NULL
);
CREATE TABLE erasure_requests (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id INTEGER NOT NULL,
    lead_ids     TEXT NOT NULL,  -- JSON array of the ids asked for
    erased_by    TEXT NOT NULL,
    requested_at INTEGER NOT NULL
);
-- Whether writes reach storage (a full disk): /readyz writes here while writes have been
-- failing, and says ready again once one succeeds.
CREATE TABLE write_probes (
    id INTEGER PRIMARY KEY,
    at INTEGER NOT NULL
);
