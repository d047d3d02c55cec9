-- A workspace's own domains for its pages (issue 49; core/domain/domains.rs): `go.example.com`
-- added by an owner, proven theirs by a DNS TXT record `_lps-challenge.<hostname>` holding
-- `token`, and pointed at lps (CNAME to the public URL's host, or the same A/AAAA addresses).
-- `status`: pending (not yet proven; checked again at `next_check_at`, with backoff), verified
-- (served; re-checked daily), lapsed (its records were gone past the grace period; no longer
-- served, checked again as a pending one). A hostname is added by any number of workspaces but
-- verified by one: the first to verify it wins (the partial unique index).
CREATE TABLE domains (
    id            BIGSERIAL PRIMARY KEY,
    workspace_id  BIGINT  NOT NULL REFERENCES workspaces (id),
    hostname      TEXT    NOT NULL,   -- lower case, ASCII (punycode), no trailing dot
    token         TEXT    NOT NULL,
    status        TEXT    NOT NULL,   -- pending | verified | lapsed
    reason        TEXT,               -- why the last check did not pass
    attempts      INTEGER NOT NULL DEFAULT 0,
    next_check_at BIGINT,            -- NULL: no check due (a lapsed one's retries given up)
    checked_at    BIGINT,
    verified_at   BIGINT,
    missing_since BIGINT,            -- a verified domain whose records are gone, since
    created_at    BIGINT  NOT NULL,
    updated_at    BIGINT  NOT NULL
);
CREATE UNIQUE INDEX domains_workspace_hostname ON domains (workspace_id, hostname);
CREATE UNIQUE INDEX domains_verified_hostname ON domains (hostname) WHERE status = 'verified';
CREATE INDEX domains_due ON domains (next_check_at) WHERE next_check_at IS NOT NULL;

-- The domain a campaign's pages are handed out on (NULL: the deployment's --public-url).
ALTER TABLE campaigns ADD COLUMN domain_id BIGINT REFERENCES domains (id);
