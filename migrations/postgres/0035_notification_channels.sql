-- Where a workspace hears about its leads (issue 48; core/domain/notifications/): a Slack or
-- Microsoft Teams incoming webhook, or a workspace webhook receiving every event. Messages to
-- a channel go through the callback outbox (one row per message in `callbacks`, marked with
-- its `channel_id`), so they are retried, logged, redeliverable and paused when unhealthy as
-- per-lead callbacks are, and bounded per channel by counting those rows.
CREATE TABLE notification_channels (
    id           BIGSERIAL PRIMARY KEY,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    kind         TEXT    NOT NULL,   -- slack | teams | webhook
    url          TEXT    NOT NULL,
    events       TEXT    NOT NULL,   -- the event names it receives, comma-separated
    time_zone    TEXT    NOT NULL,   -- IANA name
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX notification_channels_workspace ON notification_channels (workspace_id);

ALTER TABLE callbacks ADD COLUMN channel_id BIGINT;
CREATE INDEX callbacks_channel ON callbacks (channel_id, created_at);
