-- +goose Up
-- Keys are stored as SHA-256 of the secret; the secret itself is never kept.
CREATE TABLE stackbone_platform.api_keys (
    id          uuid PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    key_hash    bytea NOT NULL UNIQUE,
    scopes      text[] NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

-- Run history: one row for every model-backed unit of work (an agent turn, a
-- memory extraction, a learning run). Never holds prompt or response text.
CREATE TABLE stackbone_platform.runs (
    id             uuid PRIMARY KEY,
    kind           text NOT NULL,
    agent_id       text,
    status         text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled')),
    model          text,
    input_tokens   integer NOT NULL DEFAULT 0,
    output_tokens  integer NOT NULL DEFAULT 0,
    cost_usd       numeric,
    error_code     text,
    started_at     timestamptz NOT NULL,
    finished_at    timestamptz,
    duration_ms    integer,
    metadata       jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX runs_started_idx ON stackbone_platform.runs (started_at DESC, id DESC);
CREATE INDEX runs_agent_idx ON stackbone_platform.runs (agent_id, started_at DESC);

-- Operator actions worth an audit trail. Field names only, never values such
-- as instruction text.
CREATE TABLE stackbone_platform.activity_log (
    id       bigserial PRIMARY KEY,
    at       timestamptz NOT NULL DEFAULT now(),
    actor    text NOT NULL,
    action   text NOT NULL,
    subject  text NOT NULL,
    fields   text[] NOT NULL DEFAULT '{}'
);
CREATE INDEX activity_log_subject_idx ON stackbone_platform.activity_log (subject, id DESC);

-- Box-wide settings chosen by operators (System in Studio), one JSON value per key.
CREATE TABLE stackbone_platform.system_settings (
    key         text PRIMARY KEY,
    value       jsonb NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE stackbone_platform.system_settings;
DROP TABLE stackbone_platform.activity_log;
DROP TABLE stackbone_platform.runs;
DROP TABLE stackbone_platform.api_keys;
