-- Email channels and daily digests (issue 48; core/domain/notifications/). An email channel's
-- `url` is a `mailto:` URL naming its teammates (RFC 6068). `secret` keys the one-click
-- unsubscribe links its messages carry (a link names the channel and the address, and its
-- HMAC under this secret proves it was sent to that address). `digest_day` is the local
-- date (in the channel's time zone) whose morning digest was last queued, so each day's
-- digest is queued once, whichever process gets there first.
ALTER TABLE notification_channels ADD COLUMN secret TEXT NOT NULL DEFAULT '';
ALTER TABLE notification_channels ADD COLUMN digest_day TEXT;
