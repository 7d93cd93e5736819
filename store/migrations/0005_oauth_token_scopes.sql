-- A refresh may narrow the scopes of the access token it issues (RFC 6749
-- §6): such a token carries its own scopes, a non-empty subset of its
-- grant's (space-separated sorted set). NULL, as for every token before this
-- migration, means the grant's scopes.
ALTER TABLE oauth_tokens ADD COLUMN scopes TEXT;
