-- 0003: the state of the gateway's OAuth authorization server (DESIGN §8)
-- between the browser's visit to /oauth/authorize and the client's token
-- request. Access and refresh tokens stay in oauth_tokens (0001): the
-- authorization server writes them there with the family_id of the
-- authorization that started them, so the documents endpoint keeps resolving
-- them with the same lookup.

-- Authorization codes, by the SHA-256 (hex) of the code only. A code lives at
-- most 60 seconds and is redeemed once: used_at is set in the transaction
-- that stores the tokens, and a second redemption, finding it set, revokes
-- the family request_id started. The PKCE challenge (S256 only) is bound
-- to the code; it is cleared after one verification attempt.
CREATE TABLE oauth_authorization_codes (
    code_hash             TEXT PRIMARY KEY CHECK (length(code_hash) = 64),
    request_id            TEXT NOT NULL CHECK (request_id <> ''),
    grant_id              TEXT NOT NULL REFERENCES oauth_grants (id),
    client_id             TEXT NOT NULL,
    redirect_uri          TEXT NOT NULL,
    -- Space-separated sorted set of the scopes the user consented to.
    scopes                TEXT NOT NULL CHECK (scopes <> ''),
    code_challenge        TEXT,
    code_challenge_method TEXT CHECK (code_challenge_method = 'S256'),
    requested_at          TIMESTAMPTZ NOT NULL,
    expires_at            TIMESTAMPTZ NOT NULL,
    used_at               TIMESTAMPTZ
);
CREATE INDEX oauth_authorization_codes_expires ON oauth_authorization_codes (expires_at);

-- Browser login sessions: from /oauth/authorize through the identity
-- provider's login to the consent answer. The browser holds the session
-- secret in a cookie; only its SHA-256 (hex) is stored. authorize_query is
-- the client's validated authorization request, replayed through the
-- authorization server at consent. The idp_* columns are the gateway's own
-- state, nonce and PKCE verifier towards the identity provider; subject is
-- set once the provider's ID token has been verified.
CREATE TABLE oauth_login_sessions (
    session_hash    TEXT PRIMARY KEY CHECK (length(session_hash) = 64),
    authorize_query TEXT NOT NULL,
    idp_state       TEXT NOT NULL,
    idp_nonce       TEXT NOT NULL,
    idp_verifier    TEXT NOT NULL,
    subject         TEXT,
    created_at      TIMESTAMPTZ NOT NULL,
    expires_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX oauth_login_sessions_expires ON oauth_login_sessions (expires_at);
