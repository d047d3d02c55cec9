-- A CSV import's rejected rows as they were in the file, with why, so the person who imported
-- them can download, fix and import them again (issue 46; core/domain/csv_imports.rs).
-- Written by the job worker when a row of a CSV job fails; kept 30 days, then pruned with the
-- job's staging (core/domain/retention.rs). `fields` is a JSON array of the row's cells.
CREATE TABLE csv_import_rejects (
    job_id     TEXT    NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    line       BIGINT  NOT NULL,
    fields     TEXT    NOT NULL,
    reason     TEXT    NOT NULL,
    created_at BIGINT  NOT NULL,
    PRIMARY KEY (job_id, line)
);
CREATE INDEX csv_import_rejects_created ON csv_import_rejects (created_at);

-- How many of a job's rows made a new lead (the rest of the stored ones updated a lead).
ALTER TABLE jobs ADD COLUMN created_rows BIGINT NOT NULL DEFAULT 0;
