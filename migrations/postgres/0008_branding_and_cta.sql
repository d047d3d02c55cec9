-- Where a campaign's call to action leads (a calendar link, say), and what a branding carries so
-- pages look like the sender's own. All optional: designs fall back gracefully.
ALTER TABLE campaigns ADD COLUMN cta_url TEXT;
ALTER TABLE brandings ADD COLUMN company_name TEXT;
ALTER TABLE brandings ADD COLUMN logo_url TEXT;
ALTER TABLE brandings ADD COLUMN primary_color TEXT;
ALTER TABLE brandings ADD COLUMN website TEXT;
ALTER TABLE brandings ADD COLUMN sender_name TEXT;
ALTER TABLE brandings ADD COLUMN sender_title TEXT;
ALTER TABLE brandings ADD COLUMN sender_photo_url TEXT;
