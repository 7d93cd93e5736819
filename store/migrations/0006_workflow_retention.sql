-- Workflows are purged once older than catalog.workflow_retention, oldest
-- first, in batches: this index serves that scan on both backends
-- (workflows_project leads with the project, so it cannot).
--
-- layers_missing (0002) may now also name methodology, soul and skills,
-- still space-separated in assembly order; the column has no check to
-- change.
CREATE INDEX workflows_created ON workflows (created_at, id);
