-- Campaign designs (a draft and the published snapshot) and page templates.

ALTER TABLE campaigns ADD COLUMN draft_html TEXT;
ALTER TABLE campaigns ADD COLUMN draft_css TEXT;
ALTER TABLE campaigns ADD COLUMN design_updated_at INTEGER;
-- The published snapshot; visitors see it while is_live is 1.
ALTER TABLE campaigns ADD COLUMN live_html TEXT;
ALTER TABLE campaigns ADD COLUMN live_css TEXT;
ALTER TABLE campaigns ADD COLUMN published_at INTEGER;
ALTER TABLE campaigns ADD COLUMN is_live INTEGER NOT NULL DEFAULT 0;
-- Bumped by every publish: compiled designs are cached per version.
ALTER TABLE campaigns ADD COLUMN live_version INTEGER NOT NULL DEFAULT 0;

CREATE TABLE templates (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    -- NULL for premade templates, available to everyone.
    workspace_id INTEGER REFERENCES workspaces (id),
    -- The directory name of a premade template under templates/premade.
    premade_key  TEXT UNIQUE,
    name         TEXT    NOT NULL,
    description  TEXT,
    html         TEXT    NOT NULL,
    css          TEXT    NOT NULL,
    created_at   INTEGER NOT NULL
);
CREATE INDEX templates_workspace ON templates (workspace_id);
