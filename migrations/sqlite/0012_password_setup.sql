-- One-time links that let a person choose their dashboard password (the first start prints
-- one for the owner). Stored as the SHA-256 of the link's token; used once, for a day.
CREATE TABLE password_setups (
    token_hash TEXT    PRIMARY KEY,
    user_id    INTEGER NOT NULL REFERENCES users (id),
    expires_at INTEGER NOT NULL,
    used_at    INTEGER
);
