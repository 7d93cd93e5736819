-- 0002: the instruction catalog (DESIGN §7, seed 002 "Catalog dispatch").
--
-- Account-scoped instruction sources read GitHub repositories linked to the
-- account (not to a project: they are independent of the task project's
-- repositories), the account's core and per-mode configuration names one of
-- them each, catalog profiles name the sources of their role layers, and a
-- dispatched workflow freezes the commit, SHA-256 and size of every layer it
-- was given. Same conventions as 0001: runs unchanged on SQLite and
-- PostgreSQL, times written by the store.
--
-- Tenant rules are enforced by composite foreign keys, not only by queries:
-- an instruction source reads a repository of its own account; the core and
-- mode configuration names a source of its own account; a profile belongs to
-- a project of its own account (or to the account as a whole), and its
-- layers name either a source of that account or a document source of that
-- very project. Another project's source cannot enter a profile.

-- Targets of the composite foreign keys below.
CREATE UNIQUE INDEX projects_account_id ON projects (account_id, id);
CREATE UNIQUE INDEX document_sources_project_id ON document_sources (project_id, id);

CREATE TABLE account_repositories (
    id                     TEXT PRIMARY KEY,
    account_id             TEXT NOT NULL REFERENCES accounts (id),
    owner                  TEXT NOT NULL,
    name                   TEXT NOT NULL,
    github_installation_id BIGINT NOT NULL CHECK (github_installation_id > 0),
    created_at             TIMESTAMPTZ NOT NULL,
    revoked_at             TIMESTAMPTZ,
    UNIQUE (account_id, id)
);
CREATE UNIQUE INDEX account_repositories_active_name
    ON account_repositories (account_id, lower(owner), lower(name))
    WHERE revoked_at IS NULL;

-- Instruction sources: role "instruction" and a path under docs/agents/
-- only (seed 002), pinned to a commit or tracking a branch.
CREATE TABLE instruction_sources (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts (id),
    repository_id TEXT NOT NULL,
    role          TEXT NOT NULL CHECK (role = 'instruction'),
    path          TEXT NOT NULL CHECK (length(path) > 12 AND substr(path, 1, 12) = 'docs/agents/'),
    commit_sha    TEXT CHECK (length(commit_sha) = 40 AND lower(commit_sha) = commit_sha),
    tracking_ref  TEXT CHECK (tracking_ref <> ''),
    created_at    TIMESTAMPTZ NOT NULL,
    revoked_at    TIMESTAMPTZ,
    CONSTRAINT instruction_sources_pinned_xor_tracking
        CHECK ((commit_sha IS NULL) <> (tracking_ref IS NULL)),
    CONSTRAINT instruction_sources_same_account_repository
        FOREIGN KEY (account_id, repository_id) REFERENCES account_repositories (account_id, id),
    UNIQUE (account_id, id)
);
CREATE UNIQUE INDEX instruction_sources_active_unique
    ON instruction_sources (account_id, repository_id, path,
                            coalesce(commit_sha, ''), coalesce(tracking_ref, ''))
    WHERE revoked_at IS NULL;

-- The account's core (mode = '') and one source per mode name. No row means
-- "not configured": dispatch then reports the layer in layers_missing.
CREATE TABLE account_instruction_layers (
    account_id TEXT NOT NULL REFERENCES accounts (id),
    layer      TEXT NOT NULL CHECK (layer IN ('core', 'mode')),
    mode       TEXT NOT NULL,
    source_id  TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (account_id, layer, mode),
    CHECK ((layer = 'core') = (mode = '')),
    FOREIGN KEY (account_id, source_id) REFERENCES instruction_sources (account_id, id)
);

-- A role profile of one project, or of the whole account (project_id NULL).
CREATE TABLE catalog_profiles (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    project_id TEXT,
    name       TEXT NOT NULL CHECK (name <> ''),
    mode       TEXT NOT NULL CHECK (mode <> ''),
    created_at TIMESTAMPTZ NOT NULL,
    FOREIGN KEY (account_id, project_id) REFERENCES projects (account_id, id),
    UNIQUE (id, account_id),
    UNIQUE (id, project_id)
);
CREATE UNIQUE INDEX catalog_profiles_project_name
    ON catalog_profiles (project_id, name) WHERE project_id IS NOT NULL;
CREATE UNIQUE INDEX catalog_profiles_account_name
    ON catalog_profiles (account_id, name) WHERE project_id IS NULL;

-- The sources of a profile's role layers, in order within each layer. A row
-- names an account instruction source or (project profiles only) a document
-- source of the profile's own project: project_id copies the profile's, and
-- the foreign keys tie both the profile and the source to it.
CREATE TABLE catalog_profile_layers (
    profile_id            TEXT NOT NULL,
    account_id            TEXT NOT NULL,
    project_id            TEXT,
    layer                 TEXT NOT NULL CHECK (layer IN
        ('role_responsibilities', 'methodology', 'role_instructions', 'soul', 'skills')),
    position              INTEGER NOT NULL CHECK (position BETWEEN 1 AND 16),
    instruction_source_id TEXT,
    document_source_id    TEXT,
    PRIMARY KEY (profile_id, layer, position),
    CHECK ((instruction_source_id IS NULL) <> (document_source_id IS NULL)),
    CHECK (document_source_id IS NULL OR project_id IS NOT NULL),
    FOREIGN KEY (profile_id, account_id) REFERENCES catalog_profiles (id, account_id),
    FOREIGN KEY (profile_id, project_id) REFERENCES catalog_profiles (id, project_id),
    FOREIGN KEY (account_id, instruction_source_id) REFERENCES instruction_sources (account_id, id),
    FOREIGN KEY (project_id, document_source_id) REFERENCES document_sources (project_id, id)
);

-- A dispatched workflow: the frozen contract. Text is never stored; each
-- layer keeps the resolved commit, so a replay reads the same bytes, and
-- their SHA-256 and size, so the replay can prove it.
CREATE TABLE workflows (
    id             TEXT PRIMARY KEY,
    project_id     TEXT NOT NULL REFERENCES projects (id),
    profile_id     TEXT NOT NULL REFERENCES catalog_profiles (id),
    profile_name   TEXT NOT NULL,
    mode           TEXT NOT NULL,
    -- Space-separated subset of "core mode"; '' when nothing is missing.
    layers_missing TEXT NOT NULL,
    source_bytes   INTEGER NOT NULL CHECK (source_bytes >= 0),
    grant_id       TEXT NOT NULL,
    subject        TEXT NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX workflows_project ON workflows (project_id, created_at);

CREATE TABLE workflow_layers (
    workflow_id   TEXT NOT NULL REFERENCES workflows (id),
    ordinal       INTEGER NOT NULL CHECK (ordinal >= 1),
    layer         TEXT NOT NULL,
    position      INTEGER NOT NULL CHECK (position >= 1),
    source_scope  TEXT NOT NULL CHECK (source_scope IN ('account', 'project')),
    source_id     TEXT NOT NULL,
    repository_id TEXT NOT NULL,
    owner         TEXT NOT NULL,
    name          TEXT NOT NULL,
    path          TEXT NOT NULL,
    -- The branch a tracking source resolved; NULL for a pinned source.
    tracking_ref  TEXT CHECK (tracking_ref <> ''),
    commit_sha    TEXT NOT NULL CHECK (length(commit_sha) = 40 AND lower(commit_sha) = commit_sha),
    sha256        TEXT NOT NULL CHECK (length(sha256) = 64),
    bytes         INTEGER NOT NULL CHECK (bytes >= 0),
    chars         INTEGER NOT NULL CHECK (chars >= 0),
    PRIMARY KEY (workflow_id, ordinal)
);
