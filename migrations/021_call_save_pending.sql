-- +goose Up
-- A lost call another box closed as box_lost but has not saved yet: the
-- recovering box holds lease_until while it saves and clears the flag
-- after; if it dies meanwhile, its lease runs out and the next box that
-- looks for lost calls finishes the save (the save's idempotency key makes
-- a second attempt return the first).
ALTER TABLE stackbone_platform.voice_calls ADD COLUMN save_pending boolean NOT NULL DEFAULT false;
CREATE INDEX voice_calls_save_pending_idx ON stackbone_platform.voice_calls (lease_until) WHERE save_pending;

-- +goose Down
DROP INDEX stackbone_platform.voice_calls_save_pending_idx;
ALTER TABLE stackbone_platform.voice_calls DROP COLUMN save_pending;
