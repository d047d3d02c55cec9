-- Standard Webhooks and the delivery log (issue 28).
--
-- A rotated callback secret keeps signing, beside the new one, until previous_secret_until.
ALTER TABLE workspaces ADD COLUMN previous_callback_secret TEXT;
ALTER TABLE workspaces ADD COLUMN previous_secret_until BIGINT;

-- Each callback's last attempt, for the delivery log: the receiver's status code (NULL when no
-- answer came), how long it took, when; when it was delivered; how often it was redelivered.
ALTER TABLE callbacks ADD COLUMN last_status_code BIGINT;
ALTER TABLE callbacks ADD COLUMN last_latency_ms BIGINT;
ALTER TABLE callbacks ADD COLUMN last_attempt_at BIGINT;
ALTER TABLE callbacks ADD COLUMN delivered_at BIGINT;
ALTER TABLE callbacks ADD COLUMN redeliveries BIGINT NOT NULL DEFAULT 0;
CREATE INDEX callbacks_workspace ON callbacks (workspace_id, id);

-- The health of each receiving host of a workspace: consecutive failed attempts; past a
-- threshold the endpoint is unhealthy and paused (its callbacks wait, none is dropped) until
-- paused_until, each pause longer than the last; one success resumes it.
CREATE TABLE callback_endpoints (
    workspace_id         BIGINT NOT NULL,
    destination          TEXT NOT NULL,
    consecutive_failures BIGINT NOT NULL DEFAULT 0,
    pauses               BIGINT NOT NULL DEFAULT 0,
    unhealthy_since      BIGINT,
    paused_until         BIGINT,
    last_error           TEXT,
    last_failure_at      BIGINT,
    resumed_at           BIGINT,
    PRIMARY KEY (workspace_id, destination)
);
