-- Forms visitors submit on lead pages, stored before the visitor is answered.
CREATE TABLE form_submissions (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id INTEGER NOT NULL REFERENCES workspaces (id),
    campaign_id  INTEGER NOT NULL,
    lead_id      INTEGER NOT NULL,
    -- The form's id, else its name, else its position on the page.
    form_id      TEXT    NOT NULL,
    page_url     TEXT    NOT NULL,
    ip_address   TEXT    NOT NULL,
    email        TEXT,
    -- Every other field, as a JSON object of name to value.
    fields       TEXT    NOT NULL,
    created_at   INTEGER NOT NULL
);
CREATE INDEX form_submissions_workspace ON form_submissions (workspace_id, id);
CREATE INDEX form_submissions_lead ON form_submissions (lead_id);
