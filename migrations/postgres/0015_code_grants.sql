-- The grant an authorization code was exchanged for: a code used again revokes it
-- (RFC 6749 4.1.2).
ALTER TABLE oauth_codes ADD COLUMN grant_id TEXT;
