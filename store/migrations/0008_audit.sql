-- The audit record (docs/audit.md): one row per authenticated tool call,
-- a hash chain per writer (one writer per gateway process). record is the
-- canonical JSON the chain hashes, chain fields included; writer, seq and
-- hash repeat it as columns so that rows are read in chain order and
-- `admin audit verify` can name a row whose columns and record disagree.
-- No content bytes and no credential are ever stored here.
CREATE TABLE audit_records (
    writer  TEXT NOT NULL,
    seq     BIGINT NOT NULL,
    at      TIMESTAMPTZ NOT NULL,
    record  TEXT NOT NULL,
    hash    TEXT NOT NULL,
    PRIMARY KEY (writer, seq)
);

-- A signed checkpoint: the writer's chain head (hash of record seq) and
-- count at a time, signed with the writer's Ed25519 key (key_id names it).
CREATE TABLE audit_checkpoints (
    writer    TEXT NOT NULL,
    seq       BIGINT NOT NULL,
    head      TEXT NOT NULL,
    at        TIMESTAMPTZ NOT NULL,
    key_id    TEXT NOT NULL,
    signature TEXT NOT NULL,
    PRIMARY KEY (writer, seq)
);
