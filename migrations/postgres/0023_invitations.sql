-- Invitations record who made them (issue 44): removing a person, or making an owner a
-- member, revokes the invitations they made that are still pending (the invited person has not
-- chosen a password yet), and a link is accepted only while its maker is still an owner. NULL
-- for the account's first person, people made by `lps admin`, and invitations made before
-- this migration.
ALTER TABLE users ADD COLUMN invited_by BIGINT REFERENCES users (id);
CREATE INDEX users_invited_by ON users (invited_by);
