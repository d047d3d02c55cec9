-- People log in (argon2id password hashes; server-side sessions), and apps act on one
-- workspace through OAuth 2.1: registered clients, one-time codes, grants (a person's approval
-- of a client for a workspace) and the grants' tokens. Every secret is stored as its SHA-256.
ALTER TABLE users ADD COLUMN password_hash TEXT;
CREATE INDEX users_email ON users (email);

CREATE TABLE sessions (
    token_hash TEXT    PRIMARY KEY,
    user_id    BIGINT  NOT NULL REFERENCES users (id),
    csrf_token TEXT    NOT NULL,
    created_at BIGINT  NOT NULL,
    expires_at BIGINT  NOT NULL
);

CREATE TABLE oauth_clients (
    id            TEXT    PRIMARY KEY,   -- random for registered clients, the URL for metadata documents
    name          TEXT    NOT NULL,
    redirect_uris TEXT    NOT NULL,      -- JSON array
    created_at    BIGINT  NOT NULL
);

CREATE TABLE oauth_codes (
    code_hash      TEXT    PRIMARY KEY,
    client_id      TEXT    NOT NULL,
    user_id        BIGINT  NOT NULL REFERENCES users (id),
    workspace_id   BIGINT  NOT NULL REFERENCES workspaces (id),
    redirect_uri   TEXT    NOT NULL,
    code_challenge TEXT    NOT NULL,
    resource       TEXT,
    expires_at     BIGINT  NOT NULL,
    used_at        BIGINT
);

CREATE TABLE oauth_grants (
    id           TEXT    PRIMARY KEY,
    client_id    TEXT    NOT NULL,
    client_name  TEXT    NOT NULL,
    user_id      BIGINT  NOT NULL REFERENCES users (id),
    account_id   BIGINT  NOT NULL REFERENCES accounts (id),
    workspace_id BIGINT  NOT NULL REFERENCES workspaces (id),
    resource     TEXT,
    created_at   BIGINT  NOT NULL,
    last_used_at BIGINT,
    revoked_at   BIGINT
);
CREATE INDEX oauth_grants_user ON oauth_grants (user_id);

CREATE TABLE oauth_tokens (
    token_hash TEXT    PRIMARY KEY,
    grant_id   TEXT    NOT NULL REFERENCES oauth_grants (id),
    kind       TEXT    NOT NULL,   -- access | refresh
    expires_at BIGINT  NOT NULL,
    used_at    BIGINT              -- a refresh token is used once (rotated)
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);
