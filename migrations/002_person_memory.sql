-- +goose Up
-- One revision counter per (agent, person). The row is never deleted: erasure
-- bumps it, so an add that read an older snapshot can never write afterwards.
CREATE TABLE stackbone_platform.memory_revisions (
    agent_id  text NOT NULL,
    user_id   text NOT NULL,
    revision  bigint NOT NULL,
    PRIMARY KEY (agent_id, user_id)
);

CREATE TABLE stackbone_platform.memory_facts (
    id          uuid PRIMARY KEY,
    seq         bigserial NOT NULL,
    agent_id    text NOT NULL,
    user_id     text NOT NULL,
    content     text NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);
CREATE INDEX memory_facts_person_idx ON stackbone_platform.memory_facts (agent_id, user_id, seq);

CREATE TABLE stackbone_platform.memory_calls (
    id                uuid PRIMARY KEY,
    seq               bigserial NOT NULL,
    agent_id          text NOT NULL,
    user_id           text NOT NULL,
    started_at        timestamptz NOT NULL,
    duration_seconds  double precision,
    outcome           text,
    summary           text NOT NULL,
    run_id            text,
    created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX memory_calls_person_idx ON stackbone_platform.memory_calls (agent_id, user_id, started_at DESC, seq DESC);

-- Studio overrides of an agent's memory defaults. NULL means "not overridden".
CREATE TABLE stackbone_platform.agent_memory_settings (
    agent_id      text PRIMARY KEY,
    read          boolean,
    save          boolean,
    instructions  text,
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- The fixed identity key of an agent: written once, never updated or deleted
-- by the box (reset, config removal and erasure keep it).
CREATE TABLE stackbone_platform.agent_identity_bindings (
    agent_id      text PRIMARY KEY,
    identity_key  text NOT NULL,
    source        text NOT NULL CHECK (source IN ('code', 'studio')),
    fixed_at      timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE stackbone_platform.agent_identity_bindings;
DROP TABLE stackbone_platform.agent_memory_settings;
DROP TABLE stackbone_platform.memory_calls;
DROP TABLE stackbone_platform.memory_facts;
DROP TABLE stackbone_platform.memory_revisions;
