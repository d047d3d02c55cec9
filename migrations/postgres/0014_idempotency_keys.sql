-- Idempotent retries (`Idempotency-Key`): the first answer for a key, per credential, kept for
-- 24 hours. `status` is NULL while the first request is being carried out (until
-- `locked_until`, after which a retry may take the key over: its process may have died).
CREATE TABLE idempotency_keys (
    credential_id TEXT    NOT NULL,
    key           TEXT    NOT NULL,
    request_hash  TEXT    NOT NULL,
    status        BIGINT,
    content_type  TEXT,
    body          BYTEA,
    created_at    BIGINT NOT NULL,
    locked_until  BIGINT NOT NULL,
    PRIMARY KEY (credential_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
