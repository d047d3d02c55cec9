-- Accounts, people, workspaces, API keys and custom variables.
-- Timestamps are microseconds since the Unix epoch, UTC (the same representation as on SQLite,
-- so one set of queries serves both).

CREATE TABLE accounts (
    id                BIGSERIAL PRIMARY KEY,
    name              TEXT   NOT NULL,
    plan              TEXT   NOT NULL,
    credits_remaining BIGINT NOT NULL DEFAULT 0,
    renews_at         BIGINT NOT NULL,
    created_at        BIGINT NOT NULL
);

CREATE TABLE users (
    id         BIGSERIAL PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    name       TEXT   NOT NULL,
    email      TEXT   NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX users_account ON users (account_id);

CREATE TABLE workspaces (
    id           BIGSERIAL PRIMARY KEY,
    account_id   BIGINT NOT NULL REFERENCES accounts (id),
    name         TEXT   NOT NULL,
    slug         TEXT   NOT NULL UNIQUE,
    credit_limit BIGINT,
    credits_used BIGINT NOT NULL DEFAULT 0,
    created_at   BIGINT NOT NULL
);
CREATE INDEX workspaces_account ON workspaces (account_id);

CREATE TABLE api_tokens (
    id           TEXT   PRIMARY KEY,
    account_id   BIGINT NOT NULL REFERENCES accounts (id),
    workspace_id BIGINT REFERENCES workspaces (id),
    created_by   BIGINT NOT NULL REFERENCES users (id),
    name         TEXT   NOT NULL,
    token_hash   TEXT   NOT NULL UNIQUE,
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT
);
CREATE INDEX api_tokens_account ON api_tokens (account_id);

CREATE TABLE variables (
    id           BIGSERIAL PRIMARY KEY,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    key          TEXT   NOT NULL,
    created_at   BIGINT NOT NULL,
    UNIQUE (workspace_id, key)
);
