-- +goose Up
-- A box renews the lease of each call it carries every few seconds: with
-- lease_until indexed each renewal wrote a new entry into every index of
-- the table for every call (500 calls: thousands of index entries every
-- five seconds, the calls' rows locked meanwhile). The calls a box looks
-- through for lost ones are few (those not ended, or with a save pending),
-- so they are found by one partial index that leaves lease_until out, and
-- a renewal rewrites only the row, on its own page (fillfactor leaves the
-- room for it).
DROP INDEX stackbone_platform.voice_calls_open_lease_idx;
DROP INDEX stackbone_platform.voice_calls_save_pending_idx;
CREATE INDEX voice_calls_open_idx ON stackbone_platform.voice_calls (box_id) WHERE status <> 'ended' OR save_pending;
ALTER TABLE stackbone_platform.voice_calls SET (fillfactor = 70);

-- +goose Down
ALTER TABLE stackbone_platform.voice_calls RESET (fillfactor);
DROP INDEX stackbone_platform.voice_calls_open_idx;
CREATE INDEX voice_calls_save_pending_idx ON stackbone_platform.voice_calls (lease_until) WHERE save_pending;
CREATE INDEX voice_calls_open_lease_idx ON stackbone_platform.voice_calls (lease_until) WHERE status <> 'ended';
