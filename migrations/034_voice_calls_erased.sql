-- +goose Up
-- A person's erasure (memory's delete-all) removes them from the agent's
-- call records: the heard transcript, the number, the identities, the
-- analysis and the person named in the memory report go; what the call
-- cost and how it went stay. erased_at marks such a record, so a call
-- still in progress at the erasure neither writes nor keeps its transcript.
ALTER TABLE stackbone_platform.voice_calls ADD COLUMN erased_at timestamptz;

-- +goose Down
ALTER TABLE stackbone_platform.voice_calls DROP COLUMN erased_at;
