-- A workspace's own settings (issue 48; core/domain/workspaces.rs): the score at which its
-- leads are hot (NULL: the server's --hot-score; 0: never) and its IANA time zone (NULL: UTC),
-- the default of its notification channels' and its people's days.
ALTER TABLE workspaces ADD COLUMN hot_score DOUBLE PRECISION;
ALTER TABLE workspaces ADD COLUMN time_zone TEXT;
