-- +goose Up
-- A call's heard transcript while the call is up: one row per entry as it is
-- committed, so a turn writes its own entry and not the whole transcript
-- again (a long call rewrote a growing JSON document every turn), and the
-- call's row is not rewritten either. usage, on the last entry of each
-- write, is what the call had used by then (priced if another box closes
-- the call as lost). When the call ends, or another box closes it as lost,
-- its entries are folded into voice_calls.transcript and their rows
-- removed: the transcript of an ended call is in its row alone.
CREATE TABLE stackbone_platform.voice_call_entries (
    call_id  text NOT NULL REFERENCES stackbone_platform.voice_calls (id) ON DELETE CASCADE,
    seq      integer NOT NULL,
    entry    jsonb NOT NULL,
    usage    jsonb,
    PRIMARY KEY (call_id, seq)
);

-- The heard transcript of a call in any state: what is folded into its row,
-- then, while it is not ended, the entries committed since.
-- +goose StatementBegin
CREATE FUNCTION stackbone_platform.heard_transcript(c stackbone_platform.voice_calls) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN c.status = 'ended' THEN c.transcript
        ELSE c.transcript || coalesce((SELECT jsonb_agg(e.entry ORDER BY e.seq)
            FROM stackbone_platform.voice_call_entries e WHERE e.call_id = c.id), '[]'::jsonb) END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION stackbone_platform.heard_transcript(stackbone_platform.voice_calls);
DROP TABLE stackbone_platform.voice_call_entries;
