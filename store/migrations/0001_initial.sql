-- 0001: the initial schema.
--
-- Runs unchanged on SQLite and PostgreSQL: text IDs, BIGINT/INTEGER numbers,
-- TIMESTAMPTZ times (PostgreSQL's type; on SQLite a declared name under
-- which the store writes fixed-width UTC text), CHECKs that both evaluate
-- alike, and partial and expression indexes, which both support. Times are
-- always written by the store, never defaulted by the database, so both
-- backends hold the same values.

CREATE TABLE accounts (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE projects (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    name       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    UNIQUE (account_id, name)
);

-- OIDC subjects allowed to consent to OAuth grants for a project.
CREATE TABLE project_members (
    project_id TEXT NOT NULL REFERENCES projects (id),
    subject    TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (project_id, subject)
);
CREATE INDEX project_members_subject ON project_members (subject);

CREATE TABLE github_repositories (
    id                     TEXT PRIMARY KEY,
    project_id             TEXT NOT NULL REFERENCES projects (id),
    owner                  TEXT NOT NULL,
    name                   TEXT NOT NULL,
    github_installation_id BIGINT NOT NULL CHECK (github_installation_id > 0),
    created_at             TIMESTAMPTZ NOT NULL,
    revoked_at             TIMESTAMPTZ,
    -- The target of document_sources' composite foreign key.
    UNIQUE (project_id, id)
);
-- GitHub owner and repository names are ASCII and case-insensitive; lower()
-- folds ASCII identically on both backends.
CREATE UNIQUE INDEX github_repositories_active_name
    ON github_repositories (project_id, lower(owner), lower(name))
    WHERE revoked_at IS NULL;

CREATE TABLE document_sources (
    id             TEXT PRIMARY KEY,
    project_id     TEXT NOT NULL REFERENCES projects (id),
    repository_id  TEXT NOT NULL,
    role           TEXT NOT NULL CHECK (role <> ''),
    path           TEXT NOT NULL CHECK (path <> ''),
    commit_sha     TEXT CHECK (length(commit_sha) = 40 AND lower(commit_sha) = commit_sha),
    tracking_ref   TEXT CHECK (tracking_ref <> ''),
    fragment_limit INTEGER NOT NULL DEFAULT 65536 CHECK (fragment_limit BETWEEN 1 AND 65536),
    created_at     TIMESTAMPTZ NOT NULL,
    revoked_at     TIMESTAMPTZ,
    CONSTRAINT document_sources_pinned_xor_tracking
        CHECK ((commit_sha IS NULL) <> (tracking_ref IS NULL)),
    -- A source reads a repository of its own project, never another's.
    CONSTRAINT document_sources_same_project_repository
        FOREIGN KEY (project_id, repository_id) REFERENCES github_repositories (project_id, id)
);
CREATE INDEX document_sources_project_role ON document_sources (project_id, role);
CREATE UNIQUE INDEX document_sources_active_unique
    ON document_sources (project_id, repository_id, role, path,
                         coalesce(commit_sha, ''), coalesce(tracking_ref, ''))
    WHERE revoked_at IS NULL;

-- RFC 7591 registrations. redirect_uris is a JSON array of strings. Clients
-- are public (PKCE), so there is no secret.
CREATE TABLE oauth_clients (
    client_id     TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    redirect_uris TEXT NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL
);

-- client_id has no foreign key: a client may also be identified by a
-- metadata document URL that was never registered here.
CREATE TABLE oauth_grants (
    id         TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects (id),
    subject    TEXT NOT NULL,
    client_id  TEXT NOT NULL,
    -- Space-separated sorted set of scope tokens.
    scopes     TEXT NOT NULL CHECK (scopes <> ''),
    created_at TIMESTAMPTZ NOT NULL,
    revoked_at TIMESTAMPTZ
);
CREATE INDEX oauth_grants_project_subject ON oauth_grants (project_id, subject);

-- Access and refresh tokens, by the SHA-256 (hex) of their secret only.
-- family_id groups a refresh token, its rotations and the access tokens
-- issued with them, so that reuse of a rotated refresh token revokes all.
CREATE TABLE oauth_tokens (
    token_hash TEXT PRIMARY KEY CHECK (length(token_hash) = 64),
    grant_id   TEXT NOT NULL REFERENCES oauth_grants (id),
    kind       TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
    family_id  TEXT,
    expires_at TIMESTAMPTZ NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    revoked_at TIMESTAMPTZ,
    used_at    TIMESTAMPTZ,
    CHECK (kind = 'access' OR family_id IS NOT NULL),
    CHECK (kind = 'refresh' OR used_at IS NULL)
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);
CREATE INDEX oauth_tokens_family ON oauth_tokens (family_id);
CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at);

-- Legacy static project tokens: hashed, project-bound, memory/task only.
CREATE TABLE legacy_project_tokens (
    token_hash  TEXT PRIMARY KEY CHECK (length(token_hash) = 64),
    id          TEXT NOT NULL UNIQUE,
    project_id  TEXT NOT NULL REFERENCES projects (id),
    permissions TEXT NOT NULL CHECK (permissions IN ('memory', 'memory task', 'task')),
    created_at  TIMESTAMPTZ NOT NULL,
    revoked_at  TIMESTAMPTZ
);
CREATE INDEX legacy_project_tokens_project ON legacy_project_tokens (project_id);
