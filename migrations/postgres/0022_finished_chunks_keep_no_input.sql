-- A finished chunk keeps its leads' outcomes (results), not their input values. Nothing reads
-- a finished chunk's payload; keeping it held a second copy of every imported lead's values
-- (which erasure then had to find and redact), and marking a chunk done rewrote it. From now on
-- the worker empties it in that same update.
UPDATE job_chunks SET payload = '[]' WHERE status = 'done';
