-- The receiving host of each callback, so that due callbacks are taken in turn across
-- workspaces and receivers: one slow or dead receiver with many callbacks pending cannot keep
-- the others' from being picked.
ALTER TABLE callbacks ADD COLUMN destination TEXT NOT NULL DEFAULT '';
