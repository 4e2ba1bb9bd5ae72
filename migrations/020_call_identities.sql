-- +goose Up
-- The identities a call was opened with, as admitted under the opening
-- key's policy: a key restricted to a person may read, answer or end a
-- browser room only when it admits every one of them.
ALTER TABLE stackbone_platform.voice_calls ADD COLUMN identities jsonb NOT NULL DEFAULT '{}'
    CHECK (jsonb_typeof(identities) = 'object');

-- +goose Down
ALTER TABLE stackbone_platform.voice_calls DROP COLUMN identities;
