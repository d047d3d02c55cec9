-- Teammates: the account's first person is its owner; people invited from the dashboard are
-- members (campaigns, leads and analytics; no keys, apps, teammates or plan) unless invited as
-- owners. A person invited sets their password through a one-time link (password_setups).
ALTER TABLE users ADD COLUMN role TEXT NOT NULL DEFAULT 'owner';

-- The dashboard opens on who engaged recently: a workspace's events by time.
CREATE INDEX page_events_recent ON page_events (workspace_id, created_at);
CREATE INDEX form_submissions_recent ON form_submissions (workspace_id, created_at);
