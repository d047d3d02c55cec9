-- The callback address a lead was last upserted with: later events about the lead (a form
-- submitted on its page) are sent there too. Each callback names its event.
ALTER TABLE leads ADD COLUMN callback_url TEXT;
ALTER TABLE callbacks ADD COLUMN event TEXT NOT NULL DEFAULT 'lead.page_generated';
