-- +goose Up
-- What the post-call analysis found (summary, fields, criteria judged,
-- success), NULL until it ran or when the agent has none.
ALTER TABLE stackbone_platform.voice_calls ADD COLUMN analysis jsonb;
CREATE INDEX voice_calls_analysis_success_idx ON stackbone_platform.voice_calls (((analysis->>'success')::boolean))
    WHERE analysis IS NOT NULL;

-- +goose Down
DROP INDEX stackbone_platform.voice_calls_analysis_success_idx;
ALTER TABLE stackbone_platform.voice_calls DROP COLUMN analysis;
