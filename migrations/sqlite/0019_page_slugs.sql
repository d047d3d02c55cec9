-- A campaign's pages can move to another public path segment (`page_slug`; NULL: `slug`);
-- the segments they had before are kept so old links redirect to the new address.
ALTER TABLE campaigns ADD COLUMN page_slug TEXT;
CREATE TABLE campaign_old_slugs (
    campaign_id INTEGER NOT NULL REFERENCES campaigns (id),
    slug        TEXT    NOT NULL,
    PRIMARY KEY (campaign_id, slug)
);
CREATE INDEX campaign_old_slugs_slug ON campaign_old_slugs (slug);
