-- lps terminating TLS itself (issue 49; core/domain/certificates.rs): one certificate per name
-- (the public URL's host, every verified domain), ordered by ACME and shared by every process.
-- A row exists for each name wanted; `chain_pem` is NULL until its first certificate. The
-- name is ordered (again) at `next_order_at`: at once when new, 30 days (or a third of its
-- lifetime) before `not_after` once issued, with backoff after a failure. One process at a
-- time orders a name: the one whose lease (`lease_until`) is current. A name no longer served
-- (its domain deleted or lapsed) is kept `unwanted_since` then, certificate, backoff and all, so
-- that a domain deleted and added again is not ordered anew (kept 90 days). `ordered_at`: the
-- last order's start, for the deployment's budget of orders an hour.
CREATE TABLE certificates (
    hostname      TEXT PRIMARY KEY,
    chain_pem     TEXT,               -- the leaf first, then its issuers
    key_pem       TEXT,               -- its private key (PKCS#8): as secret as the database
    not_after     INTEGER,
    issued_at     INTEGER,
    attempts      INTEGER NOT NULL DEFAULT 0,
    last_error    TEXT,
    next_order_at INTEGER NOT NULL,
    lease_until   INTEGER,
    ordered_at    INTEGER,
    unwanted_since INTEGER,
    updated_at    INTEGER NOT NULL
);
CREATE INDEX certificates_due ON certificates (next_order_at) WHERE unwanted_since IS NULL;
CREATE INDEX certificates_ordered ON certificates (ordered_at);

-- The answers an ACME server's validation asks for while a name is ordered, for whichever
-- process it reaches: `http-01` under the challenge's token (the key authorization),
-- `tls-alpn-01` under the hostname (a self-signed certificate and its key, PEM).
CREATE TABLE acme_challenges (
    kind       TEXT NOT NULL,         -- http-01 | tls-alpn-01
    name       TEXT NOT NULL,         -- the token (http-01) or the hostname (tls-alpn-01)
    hostname   TEXT NOT NULL,
    response   TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (kind, name)
);

-- The ACME account lps orders with, one per directory, made on the first order.
CREATE TABLE acme_accounts (
    directory   TEXT PRIMARY KEY,
    credentials TEXT NOT NULL,        -- instant-acme's AccountCredentials (JSON: holds the key)
    created_at  INTEGER NOT NULL
);
