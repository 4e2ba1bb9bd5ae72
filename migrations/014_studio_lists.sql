-- +goose Up
-- Studio's lists (and any client) page through calls and sessions by keyset,
-- newest first with the id as tie-breaker, filtered by agent, number or
-- status. Each index matches one filter's ORDER BY exactly, so a page is an
-- index range scan however many rows the table holds.
DROP INDEX stackbone_platform.voice_calls_started_idx;
CREATE INDEX voice_calls_started_idx ON stackbone_platform.voice_calls (started_at DESC, id DESC);
CREATE INDEX voice_calls_agent_idx ON stackbone_platform.voice_calls (agent_id, started_at DESC, id DESC);
CREATE INDEX voice_calls_number_idx ON stackbone_platform.voice_calls (phone_number, started_at DESC, id DESC)
    WHERE phone_number IS NOT NULL;

DROP INDEX stackbone_platform.sessions_activity_idx;
DROP INDEX stackbone_platform.sessions_agent_idx;
CREATE INDEX sessions_activity_idx ON stackbone_platform.sessions (last_activity_at DESC, id DESC);
CREATE INDEX sessions_agent_idx ON stackbone_platform.sessions (agent_id, last_activity_at DESC, id DESC);
CREATE INDEX sessions_status_idx ON stackbone_platform.sessions (status, last_activity_at DESC, id DESC);

-- +goose Down
DROP INDEX stackbone_platform.sessions_status_idx;
DROP INDEX stackbone_platform.sessions_agent_idx;
DROP INDEX stackbone_platform.sessions_activity_idx;
CREATE INDEX sessions_activity_idx ON stackbone_platform.sessions (last_activity_at DESC, id);
CREATE INDEX sessions_agent_idx ON stackbone_platform.sessions (agent_id, status, last_activity_at DESC);
DROP INDEX stackbone_platform.voice_calls_number_idx;
DROP INDEX stackbone_platform.voice_calls_agent_idx;
DROP INDEX stackbone_platform.voice_calls_started_idx;
CREATE INDEX voice_calls_started_idx ON stackbone_platform.voice_calls (started_at DESC, id);
