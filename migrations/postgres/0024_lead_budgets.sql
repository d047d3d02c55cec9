-- What a lead's engagement may gain in one clock hour from everyone together (score::LeadBudget):
-- the hour (microseconds since the epoch / 3,600,000,000) these figures are of, the score's
-- weight added and the engaged seconds counted in it. A new hour starts them over.
ALTER TABLE leads ADD COLUMN budget_hour BIGINT NOT NULL DEFAULT 0;
ALTER TABLE leads ADD COLUMN budget_score DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE leads ADD COLUMN budget_seconds BIGINT NOT NULL DEFAULT 0;
