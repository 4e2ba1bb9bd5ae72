-- +goose Up
-- One row per phone or browser call: what happened, the heard transcript
-- (what the caller actually heard, not what was generated), what memory did
-- and the per-turn metrics.
CREATE TABLE stackbone_platform.voice_calls (
    id                text PRIMARY KEY,
    direction         text NOT NULL CHECK (direction IN ('inbound', 'outbound', 'browser')),
    agent_id          text NOT NULL,
    phone_number      text,
    trunk             text,
    status            text NOT NULL CHECK (status IN ('ringing', 'active', 'ended')),
    started_at        timestamptz NOT NULL DEFAULT now(),
    answered_at       timestamptz,
    ended_at          timestamptz,
    outcome           text,
    duration_seconds  double precision,
    transcript        jsonb NOT NULL DEFAULT '[]',
    memory            jsonb NOT NULL DEFAULT '{}',
    metrics           jsonb NOT NULL DEFAULT '[]'
);
CREATE INDEX voice_calls_started_idx ON stackbone_platform.voice_calls (started_at DESC, id);

-- +goose Down
DROP TABLE stackbone_platform.voice_calls;
