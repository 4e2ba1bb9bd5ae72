-- +goose Up
-- One row per kept conversation (x-stackbone-session, AG-UI threadId) or
-- grouped stateless conversation (x-stackbone-conversation). The id is
-- derived from the key, the agent and the customer's identity address; the
-- key itself is not stored.
CREATE TABLE stackbone_platform.sessions (
    id                text PRIMARY KEY,
    kind              text NOT NULL CHECK (kind IN ('session', 'conversation')),
    agent_id          text NOT NULL,
    status            text NOT NULL CHECK (status IN ('running', 'completed', 'held', 'failed')),
    turns             integer NOT NULL DEFAULT 0,
    input_tokens      bigint NOT NULL DEFAULT 0,
    output_tokens     bigint NOT NULL DEFAULT 0,
    preview           text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    last_activity_at  timestamptz NOT NULL DEFAULT now(),
    -- A running turn's lease: another turn on the session is refused while it
    -- is fresh, and allowed once it is stale (the box died mid-turn).
    running_since     timestamptz
);
CREATE INDEX sessions_activity_idx ON stackbone_platform.sessions (last_activity_at DESC, id);
CREATE INDEX sessions_agent_idx ON stackbone_platform.sessions (agent_id, status, last_activity_at DESC);

-- The transcript Studio shows: one row per finished turn, linked to its run.
CREATE TABLE stackbone_platform.session_turns (
    session_id     text NOT NULL REFERENCES stackbone_platform.sessions (id) ON DELETE CASCADE,
    turn           integer NOT NULL,
    run_id         uuid NOT NULL,
    status         text NOT NULL,
    user_text      text NOT NULL,
    reply_text     text NOT NULL,
    input_tokens   integer NOT NULL,
    output_tokens  integer NOT NULL,
    duration_ms    integer NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, turn)
);

-- The conversation state of kept sessions, one row per turn (and per held
-- decision): the messages that step appended, and the held tool call with
-- the identity and memory snapshot it was taken under, when the turn parked.
CREATE TABLE stackbone_checkpoints.checkpoints (
    session_id  text NOT NULL,
    step        integer NOT NULL,
    messages    jsonb NOT NULL,
    pending     jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, step)
);

-- +goose Down
DROP TABLE stackbone_checkpoints.checkpoints;
DROP TABLE stackbone_platform.session_turns;
DROP TABLE stackbone_platform.sessions;
