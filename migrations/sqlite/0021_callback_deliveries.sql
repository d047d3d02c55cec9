-- Standard Webhooks and the delivery log (issue 28).
--
-- A rotated callback secret keeps signing, beside the new one, until previous_secret_until.
ALTER TABLE workspaces ADD COLUMN previous_callback_secret TEXT;
ALTER TABLE workspaces ADD COLUMN previous_secret_until INTEGER;

-- Each callback's last attempt, for the delivery log: the receiver's status code (NULL when no
-- answer came), how long it took, when; when it was delivered; how often it was redelivered.
ALTER TABLE callbacks ADD COLUMN last_status_code INTEGER;
ALTER TABLE callbacks ADD COLUMN last_latency_ms INTEGER;
ALTER TABLE callbacks ADD COLUMN last_attempt_at INTEGER;
ALTER TABLE callbacks ADD COLUMN delivered_at INTEGER;
ALTER TABLE callbacks ADD COLUMN redeliveries INTEGER NOT NULL DEFAULT 0;
CREATE INDEX callbacks_workspace ON callbacks (workspace_id, id);

-- The health of each receiving host of a workspace: consecutive failed attempts; past a
-- threshold the endpoint is unhealthy and paused (its callbacks wait, none is dropped) until
-- paused_until, each pause longer than the last; one success resumes it.
CREATE TABLE callback_endpoints (
    workspace_id         INTEGER NOT NULL,
    destination          TEXT NOT NULL,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    pauses               INTEGER NOT NULL DEFAULT 0,
    unhealthy_since      INTEGER,
    paused_until         INTEGER,
    last_error           TEXT,
    last_failure_at      INTEGER,
    resumed_at           INTEGER,
    PRIMARY KEY (workspace_id, destination)
);
