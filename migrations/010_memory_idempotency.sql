-- +goose Up
-- The first result of a memory add made with an idempotency key: a retried
-- add with the same key (a client retrying, a box completing a call another
-- box may have saved before it died) returns it instead of extracting again.
-- Erasure deletes a person's rows with their facts (they hold fact text).
CREATE TABLE stackbone_platform.memory_idempotency (
    agent_id   text NOT NULL,
    user_id    text NOT NULL,
    key        text NOT NULL,
    result     jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, user_id, key)
);
CREATE INDEX memory_idempotency_created_idx ON stackbone_platform.memory_idempotency (created_at);

-- +goose Down
DROP TABLE stackbone_platform.memory_idempotency;
