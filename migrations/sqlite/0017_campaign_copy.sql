-- A campaign's words (JSON: headline, intro, points, cta_label, signoff, event_when,
-- event_where; only what was written), with the draft and with the published version:
-- changing them is a draft change, published like the design.
ALTER TABLE campaigns ADD COLUMN draft_copy TEXT NOT NULL DEFAULT '{}';
ALTER TABLE campaigns ADD COLUMN live_copy TEXT NOT NULL DEFAULT '{}';
