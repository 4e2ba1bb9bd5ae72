-- +goose Up
-- Studio's overrides of each agent's turn-taking settings (voice activity
-- detection, endpointing, who ends turns, interruptions): one JSON object per
-- agent whose members are the settings overridden, by their API names
-- (vad, endpointingMode, minWords, resumeAfterMs...); a setting absent from
-- it is not overridden, and a row left with no member is removed. The box
-- checks every value by the config's rules before it is saved.
CREATE TABLE stackbone_platform.agent_turn_taking (
    agent_id    text PRIMARY KEY,
    settings    jsonb NOT NULL CHECK (jsonb_typeof(settings) = 'object' AND settings <> '{}'::jsonb),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    updated_by  text NOT NULL
);

-- +goose Down
DROP TABLE stackbone_platform.agent_turn_taking;
