-- Credits: every spend, refund, grant and renewal is a row; accounts.credits_remaining and
-- workspaces.credits_used are kept equal to its sums in the same transactions.
ALTER TABLE accounts ADD COLUMN credit_allowance BIGINT NOT NULL DEFAULT 0;
UPDATE accounts SET credit_allowance = credits_remaining;
CREATE TABLE credit_ledger (
    id           BIGSERIAL PRIMARY KEY,
    account_id   BIGINT NOT NULL REFERENCES accounts (id),
    workspace_id BIGINT,             -- NULL for grants and renewals of the whole pool
    amount       BIGINT NOT NULL,    -- negative: spent; positive: given back or granted
    reason       TEXT    NOT NULL,    -- design_run | design_run_refund | grant | renewal
    reference    TEXT,                -- the design run (or job) it belongs to
    created_at   BIGINT NOT NULL
);
CREATE INDEX credit_ledger_account ON credit_ledger (account_id, id);

-- AI design runs of a campaign: queued -> running -> success | error | cancelled.
CREATE TABLE design_runs (
    id           TEXT    PRIMARY KEY,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    campaign_id  BIGINT NOT NULL REFERENCES campaigns (id),
    prompt       TEXT    NOT NULL,
    replace_design BIGINT NOT NULL,  -- 0/1
    status       TEXT    NOT NULL,
    error        TEXT,
    credits      BIGINT NOT NULL,    -- what it cost (given back if it does not succeed)
    attempts     BIGINT NOT NULL DEFAULT 0,
    lease_until  BIGINT,             -- while running: when another process may take it over
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX design_runs_status ON design_runs (status, created_at);
