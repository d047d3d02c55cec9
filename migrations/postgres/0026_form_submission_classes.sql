-- Form submissions are classed as page views are (issue 46): `person` (counted in the score,
-- "engaged", the form_submitted filter and lead.hot), `automated` or `scanner_network` (kept
-- and listed with the reason, never counted). Submissions stored before are taken as people's,
-- as they were counted then.
ALTER TABLE form_submissions ADD COLUMN class TEXT NOT NULL DEFAULT 'person';
ALTER TABLE form_submissions ADD COLUMN reason TEXT;
