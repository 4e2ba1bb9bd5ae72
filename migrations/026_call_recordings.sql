-- +goose Up
-- One row per kept call recording: its object in the object store, the
-- person it was made with (for erasure), when it expires, and where each
-- heard transcript entry sits in its audio. erased_at hides a recording at
-- once on the person's erasure; the purge job then removes its object and
-- the row.
CREATE TABLE stackbone_platform.call_recordings (
    call_id      text PRIMARY KEY,
    agent_id     text NOT NULL,
    user_id      text NOT NULL DEFAULT '',
    object_key   text NOT NULL,
    format       text NOT NULL CHECK (format IN ('ogg', 'wav')),
    sample_rate  integer NOT NULL,
    duration_ms  bigint NOT NULL,
    size_bytes   bigint NOT NULL,
    marks        jsonb NOT NULL DEFAULT '[]',
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    erased_at    timestamptz
);
CREATE INDEX call_recordings_person_idx ON stackbone_platform.call_recordings (agent_id, user_id);
CREATE INDEX call_recordings_expiry_idx ON stackbone_platform.call_recordings (expires_at);

-- +goose Down
DROP TABLE stackbone_platform.call_recordings;
