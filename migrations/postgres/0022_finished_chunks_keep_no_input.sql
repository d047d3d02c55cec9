-- A finished chunk keeps only its leads' outcomes (results), not their input values: nothing
-- reads a finished chunk's payload, keeping it kept a second copy of every imported lead's
-- values (which erasure then had to find and redact), and rewriting it when a chunk was marked
-- done wrote every chunk's input twice. From now on the worker empties it in the same update.
UPDATE job_chunks SET payload = '[]' WHERE status = 'done';
