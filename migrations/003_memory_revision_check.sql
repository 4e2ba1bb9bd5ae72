-- +goose Up
-- +goose StatementBegin
-- Bumps the revision of one (agent, person) and fails with SQLSTATE SBC01
-- unless it lands exactly one past the revision the caller's snapshot saw.
-- Raising (rather than returning) lets an add send its whole write as one
-- pipelined batch: the error rolls back the batch's implicit transaction.
CREATE FUNCTION stackbone_platform.memory_bump_revision(p_agent text, p_user text, p_expected bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    r bigint;
BEGIN
    INSERT INTO stackbone_platform.memory_revisions AS m (agent_id, user_id, revision)
    VALUES (p_agent, p_user, 1)
    ON CONFLICT (agent_id, user_id) DO UPDATE SET revision = m.revision + 1
    RETURNING revision INTO r;
    IF r <> p_expected + 1 THEN
        RAISE EXCEPTION 'memory changed since the snapshot (revision %, expected %)', r - 1, p_expected
            USING ERRCODE = 'SBC01';
    END IF;
    RETURN r;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION stackbone_platform.memory_bump_revision(text, text, bigint);
