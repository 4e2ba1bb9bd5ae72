-- +goose Up
-- Why a call ended, in words an operator can act on (never caller text),
-- and which box carries a call in progress until when: a box renews the
-- lease of each call it carries, and any box closes a call whose lease ran
-- out (its box died) as box_lost, from the turns persisted as it went and
-- the memory snapshot taken when it opened (snapshot).
ALTER TABLE stackbone_platform.voice_calls
    ADD COLUMN end_reason  text,
    ADD COLUMN box_id      text,
    ADD COLUMN lease_until timestamptz,
    ADD COLUMN snapshot    jsonb NOT NULL DEFAULT '{}';
CREATE INDEX voice_calls_open_lease_idx ON stackbone_platform.voice_calls (lease_until) WHERE status <> 'ended';

-- +goose Down
DROP INDEX stackbone_platform.voice_calls_open_lease_idx;
ALTER TABLE stackbone_platform.voice_calls DROP COLUMN end_reason, DROP COLUMN box_id, DROP COLUMN lease_until,
    DROP COLUMN snapshot;
