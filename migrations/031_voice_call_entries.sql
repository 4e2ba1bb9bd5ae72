-- +goose Up
-- A call's heard transcript while the call is up: one row per entry as it is
-- committed, so a turn writes its own entry and not the whole transcript
-- again (a long call rewrote a growing JSON document every turn). When the
-- call ends (or another box closes it as lost) its entries are folded into
-- voice_calls.transcript and their rows removed; voice_calls.transcript of an
-- ended call is the whole heard transcript.
CREATE TABLE stackbone_platform.voice_call_entries (
    call_id  text NOT NULL REFERENCES stackbone_platform.voice_calls (id) ON DELETE CASCADE,
    seq      integer NOT NULL,
    entry    jsonb NOT NULL,
    PRIMARY KEY (call_id, seq)
);

-- The heard transcript of a call in any state: what is folded into the
-- call's row, then the entries committed since.
-- +goose StatementBegin
CREATE FUNCTION stackbone_platform.heard_transcript(call_id text, folded jsonb) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(folded, '[]'::jsonb) || coalesce((SELECT jsonb_agg(e.entry ORDER BY e.seq)
        FROM stackbone_platform.voice_call_entries e WHERE e.call_id = heard_transcript.call_id), '[]'::jsonb)
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION stackbone_platform.heard_transcript(text, jsonb);
DROP TABLE stackbone_platform.voice_call_entries;
