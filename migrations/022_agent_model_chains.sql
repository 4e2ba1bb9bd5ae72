-- +goose Up
-- Studio's overrides of each agent's provider chains: the model chain and
-- the call's speech-to-text and text-to-speech chains, in the order they are
-- tried. NULL is not overridden (the config's chain applies); a row whose
-- three chains are all NULL is removed.
CREATE TABLE stackbone_platform.agent_model_chains (
    agent_id    text PRIMARY KEY,
    model       text[] CHECK (cardinality(model) BETWEEN 1 AND 5),
    stt         text[] CHECK (cardinality(stt) BETWEEN 1 AND 5),
    tts         text[] CHECK (cardinality(tts) BETWEEN 1 AND 5),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    updated_by  text NOT NULL
);

-- +goose Down
DROP TABLE stackbone_platform.agent_model_chains;
