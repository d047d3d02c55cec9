-- The column mapping a workspace chose for a CSV file's header row, used again for the next
-- file with the same headers (core/domain/csv_imports.rs). `headers` is the header row's
-- normalised headers joined by tabs; `choices` a JSON array of `Header=field`.
CREATE TABLE csv_import_mappings (
    workspace_id BIGINT  NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    headers      TEXT    NOT NULL,
    choices      TEXT    NOT NULL,
    updated_at   BIGINT  NOT NULL,
    PRIMARY KEY (workspace_id, headers)
);
