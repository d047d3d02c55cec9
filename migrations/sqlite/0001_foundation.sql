-- Accounts, people, workspaces, API keys and custom variables.
-- Timestamps are microseconds since the Unix epoch, UTC.

CREATE TABLE accounts (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    name              TEXT    NOT NULL,
    plan              TEXT    NOT NULL,
    credits_remaining INTEGER NOT NULL DEFAULT 0,
    renews_at         INTEGER NOT NULL,
    created_at        INTEGER NOT NULL
);

CREATE TABLE users (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id INTEGER NOT NULL REFERENCES accounts (id),
    name       TEXT    NOT NULL,
    email      TEXT    NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX users_account ON users (account_id);

CREATE TABLE workspaces (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id   INTEGER NOT NULL REFERENCES accounts (id),
    name         TEXT    NOT NULL,
    slug         TEXT    NOT NULL UNIQUE,
    credit_limit INTEGER,
    credits_used INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL
);
CREATE INDEX workspaces_account ON workspaces (account_id);

CREATE TABLE api_tokens (
    id           TEXT    PRIMARY KEY,
    account_id   INTEGER NOT NULL REFERENCES accounts (id),
    workspace_id INTEGER REFERENCES workspaces (id),
    created_by   INTEGER NOT NULL REFERENCES users (id),
    name         TEXT    NOT NULL,
    token_hash   TEXT    NOT NULL UNIQUE,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER
);
CREATE INDEX api_tokens_account ON api_tokens (account_id);

CREATE TABLE variables (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id INTEGER NOT NULL REFERENCES workspaces (id),
    key          TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    UNIQUE (workspace_id, key)
);
