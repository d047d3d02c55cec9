-- A workspace's own settings (issue 48; core/domain/workspaces.rs): the score at which its
-- leads are hot (NULL: the server's --hot-score; 0: never) and its IANA time zone (NULL: UTC),
-- the default of its notification channels'. And a person's own time zone (NULL: their
-- browser's), which the app counts their days and shows their times in.
ALTER TABLE workspaces ADD COLUMN hot_score DOUBLE PRECISION;
ALTER TABLE workspaces ADD COLUMN time_zone TEXT;
ALTER TABLE users ADD COLUMN time_zone TEXT;
