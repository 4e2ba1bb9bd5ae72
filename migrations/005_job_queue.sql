-- +goose Up
-- The job queue's tables (river_job, river_leader, river_queue, ...) are
-- created in stackbone_platform by River's own migrator (jobs.Migrate),
-- which migrations.Apply runs right after these files. This file marks the
-- point of the sequence from which they exist, so databases and test
-- templates built before it are rebuilt with them.
COMMENT ON SCHEMA stackbone_platform IS 'Stackbone box platform tables and the River job queue';

-- +goose Down
COMMENT ON SCHEMA stackbone_platform IS NULL;
