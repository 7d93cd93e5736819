-- Registration is open, so clients that never obtained a token are deleted
-- after a while (oauth.unused_client_ttl): first_token_at is set, once, in
-- the transaction that redeems the client's first authorization code.
-- Clients registered before this migration that already hold a grant count
-- as used, so that no working client is purged by the upgrade.
ALTER TABLE oauth_clients ADD COLUMN first_token_at TIMESTAMPTZ;
UPDATE oauth_clients SET first_token_at = created_at
 WHERE client_id IN (SELECT client_id FROM oauth_grants);
CREATE INDEX oauth_clients_unused ON oauth_clients (created_at) WHERE first_token_at IS NULL;

-- The purge removes revoked grants once their tokens are gone.
CREATE INDEX oauth_grants_revoked ON oauth_grants (revoked_at) WHERE revoked_at IS NOT NULL;
CREATE INDEX oauth_authorization_codes_grant ON oauth_authorization_codes (grant_id);
