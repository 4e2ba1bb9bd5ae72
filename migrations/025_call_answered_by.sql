-- +goose Up
-- Who answered a screened call (answering-machine detection): human,
-- voicemail, ivr, fax or unknown, and how long after the answer the box
-- decided. NULL: the call was not screened.
ALTER TABLE stackbone_platform.voice_calls
    ADD COLUMN answered_by text CHECK (answered_by IN ('human', 'voicemail', 'ivr', 'fax', 'unknown')),
    ADD COLUMN answer_decision_ms integer;

-- +goose Down
ALTER TABLE stackbone_platform.voice_calls DROP COLUMN answered_by, DROP COLUMN answer_decision_ms;
