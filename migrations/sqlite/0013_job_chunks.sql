-- A job's input staged as one row per chunk of leads (up to 1,000) instead of one row per lead:
-- a thousand-lead request is one insert, and a worker records a chunk's outcomes in one update.
--   payload: JSON array of the chunk's leads, in input order;
--   results: once done, a JSON array aligned with payload, each element the id of the lead the
--            row stored (a number) or why it could not (a string).
CREATE TABLE job_chunks (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id    TEXT    NOT NULL REFERENCES jobs (id),
    first_row INTEGER NOT NULL,   -- input index of the chunk's first lead
    row_count INTEGER NOT NULL,
    payload   TEXT    NOT NULL,
    status    TEXT    NOT NULL,   -- pending | claimed (SQLite, inside the claiming transaction) | done
    results   TEXT,
    UNIQUE (job_id, first_row)
);
CREATE INDEX job_chunks_pending ON job_chunks (status, id);

-- Rows staged by earlier versions become one-lead chunks, outcomes kept.
INSERT INTO job_chunks (job_id, first_row, row_count, payload, status, results)
SELECT job_id, row_index, 1, '[' || payload || ']',
       CASE WHEN status IN ('stored', 'failed') THEN 'done' ELSE 'pending' END,
       CASE status
           WHEN 'stored' THEN json_array(lead_id)
           WHEN 'failed' THEN json_array(error)
       END
FROM job_rows ORDER BY id;

DROP TABLE job_rows;
