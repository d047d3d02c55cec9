-- People log in (argon2id password hashes; server-side sessions), and apps act on one
-- workspace through OAuth 2.1: registered clients, one-time codes, grants (a person's approval
-- of a client for a workspace) and the grants' tokens. Every secret is stored as its SHA-256.
ALTER TABLE users ADD COLUMN password_hash TEXT;
CREATE INDEX users_email ON users (email);

CREATE TABLE sessions (
    token_hash TEXT    PRIMARY KEY,
    user_id    INTEGER NOT NULL REFERENCES users (id),
    csrf_token TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);

CREATE TABLE oauth_clients (
    id            TEXT    PRIMARY KEY,   -- random for registered clients, the URL for metadata documents
    name          TEXT    NOT NULL,
    redirect_uris TEXT    NOT NULL,      -- JSON array
    created_at    INTEGER NOT NULL
);

CREATE TABLE oauth_codes (
    code_hash      TEXT    PRIMARY KEY,
    client_id      TEXT    NOT NULL,
    user_id        INTEGER NOT NULL REFERENCES users (id),
    workspace_id   INTEGER NOT NULL REFERENCES workspaces (id),
    redirect_uri   TEXT    NOT NULL,
    code_challenge TEXT    NOT NULL,
    resource       TEXT,
    expires_at     INTEGER NOT NULL,
    used_at        INTEGER
);

CREATE TABLE oauth_grants (
    id           TEXT    PRIMARY KEY,
    client_id    TEXT    NOT NULL,
    client_name  TEXT    NOT NULL,
    user_id      INTEGER NOT NULL REFERENCES users (id),
    account_id   INTEGER NOT NULL REFERENCES accounts (id),
    workspace_id INTEGER NOT NULL REFERENCES workspaces (id),
    resource     TEXT,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at   INTEGER
);
CREATE INDEX oauth_grants_user ON oauth_grants (user_id);

CREATE TABLE oauth_tokens (
    token_hash TEXT    PRIMARY KEY,
    grant_id   TEXT    NOT NULL REFERENCES oauth_grants (id),
    kind       TEXT    NOT NULL,   -- access | refresh
    expires_at INTEGER NOT NULL,
    used_at    INTEGER             -- a refresh token is used once (rotated)
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);
