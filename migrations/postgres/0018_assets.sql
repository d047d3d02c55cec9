-- Images pages show (brandings' logos and senders' photos), fetched once through the outbound
-- guard and served from lps's own origin: prospects' browsers never ask a third party.
-- Stored as PNG (resized to fit 512 px); `content_key` is the SHA-256 of the stored bytes, the
-- address's last segment. A failed fetch is kept with its error (content_key NULL) and tried
-- again an hour later.
CREATE TABLE assets (
    source_url   TEXT    PRIMARY KEY,
    content_key  TEXT,
    content_type TEXT,
    body         BYTEA,
    error        TEXT,
    fetched_at   BIGINT  NOT NULL
);
CREATE INDEX assets_content_key ON assets (content_key);
