-- +goose Up
-- What a call used, per part (model tokens, speech-to-text seconds,
-- text-to-speech characters, the trunk's answered seconds), kept as the
-- call goes so a box that recovers a lost call can still price it, and
-- its cost in the currency of the price table, written with the call's
-- end: a part without a price is null there, never 0.
ALTER TABLE stackbone_platform.voice_calls ADD COLUMN usage jsonb, ADD COLUMN cost jsonb;

-- +goose Down
ALTER TABLE stackbone_platform.voice_calls DROP COLUMN usage, DROP COLUMN cost;
