-- +goose Up
-- Memory stores (seed 002): path-addressed text memories that sessions
-- browse, search and read as tools. One learned store per agent (origin
-- 'reflection', written only by learning runs) and curated stores written
-- through the API, scoped to one agent or to the whole workspace
-- (agent_id NULL). Deleting a store deletes its memories and history.
CREATE TABLE stackbone_platform.memory_stores (
    id            uuid PRIMARY KEY,
    name          text NOT NULL,
    -- Chosen from the first name and kept across renames; unique in the
    -- box, so configuration can name a store by it.
    slug          text NOT NULL,
    description   text NOT NULL DEFAULT '',
    agent_id      text,
    origin        text NOT NULL CHECK (origin IN ('curated', 'reflection')),
    status        text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
    memory_count  integer NOT NULL DEFAULT 0 CHECK (memory_count >= 0),
    total_bytes   bigint NOT NULL DEFAULT 0 CHECK (total_bytes >= 0),
    -- Bumped once by every write transaction (an API write, a learning run).
    revision      bigint NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    archived_at   timestamptz,
    CHECK (origin = 'curated' OR (agent_id IS NOT NULL AND status = 'active'))
);
CREATE UNIQUE INDEX memory_stores_slug_uq ON stackbone_platform.memory_stores (slug);
CREATE UNIQUE INDEX memory_stores_learned_uq ON stackbone_platform.memory_stores (agent_id) WHERE origin = 'reflection';
CREATE INDEX memory_stores_list_idx ON stackbone_platform.memory_stores (created_at, id);

-- One row per memory. A deleted or retired memory keeps its row (so a
-- restore recreates it under the same id) but not its content: the content
-- lives on only in the versions, where redaction can remove it for good.
CREATE TABLE stackbone_platform.memories (
    id               uuid PRIMARY KEY,
    store_id         uuid NOT NULL REFERENCES stackbone_platform.memory_stores (id) ON DELETE CASCADE,
    -- Byte order, so a folder is one index range: /releases/ .. /releases0.
    path             text COLLATE "C" NOT NULL,
    summary          text NOT NULL,
    content          text NOT NULL,
    content_sha256   text NOT NULL,
    byte_size        integer NOT NULL,
    status           text NOT NULL CHECK (status IN ('active', 'deleted', 'retired')),
    head_version_id  uuid NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    -- The folder the memory is directly in ('/releases/' for
    -- '/releases/versioning.md'), so a listing reads only its own level.
    parent           text COLLATE "C" GENERATED ALWAYS AS (substring(path FROM '^(.*/)')) STORED,
    search           tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english'::regconfig, translate(path, '/._-', '    ')), 'A') ||
        setweight(to_tsvector('english'::regconfig, summary), 'B') ||
        setweight(to_tsvector('english'::regconfig, content), 'C')) STORED
);
-- Keep rows of typical memories (a few KiB) inline and uncompressed: a
-- search checks each candidate's tsvector, and decompressing it cost more
-- than the rest of the query (phrase search p95 5.3 ms -> 1.5 ms at 10,000
-- memories). Large contents are still moved out of line.
ALTER TABLE stackbone_platform.memories SET (toast_tuple_target = 8160);
-- Create never overwrites: one live memory per path; delete frees the path.
CREATE UNIQUE INDEX memories_path_uq ON stackbone_platform.memories (store_id, path) WHERE status = 'active';
CREATE INDEX memories_parent_idx ON stackbone_platform.memories (store_id, parent, path) WHERE status = 'active';
CREATE INDEX memories_updated_idx ON stackbone_platform.memories (store_id, updated_at DESC, id) WHERE status = 'active';
CREATE INDEX memories_search_idx ON stackbone_platform.memories USING gin (search) WHERE status = 'active';

-- Every folder that holds live memories, with how many it holds beneath
-- it: a listing shows memory_prefix entries and their counts by reading
-- one page of this table instead of counting the store. Kept exact by the
-- same transactions that write memories (under the store's row lock).
CREATE TABLE stackbone_platform.memory_folders (
    store_id  uuid NOT NULL REFERENCES stackbone_platform.memory_stores (id) ON DELETE CASCADE,
    path      text COLLATE "C" NOT NULL,
    parent    text COLLATE "C" NOT NULL,
    count     integer NOT NULL CHECK (count > 0),
    PRIMARY KEY (store_id, path)
);
CREATE INDEX memory_folders_parent_idx ON stackbone_platform.memory_folders (store_id, parent, path);

-- Immutable history: every create, update, rename, delete, restore, merge
-- and retirement. Only redaction changes a row, and only to drop content.
CREATE TABLE stackbone_platform.memory_versions (
    id                    uuid PRIMARY KEY,
    seq                   bigint GENERATED ALWAYS AS IDENTITY,
    store_id              uuid NOT NULL REFERENCES stackbone_platform.memory_stores (id) ON DELETE CASCADE,
    memory_id             uuid NOT NULL REFERENCES stackbone_platform.memories (id) ON DELETE CASCADE,
    operation             text NOT NULL CHECK (operation IN ('created', 'updated', 'renamed', 'deleted', 'restored', 'merged', 'retired')),
    path                  text COLLATE "C" NOT NULL,
    summary               text NOT NULL,
    -- NULL for deletions and retirements, and once redacted.
    content               text,
    content_sha256        text,
    byte_size             integer,
    author_kind           text NOT NULL CHECK (author_kind IN ('session', 'api', 'reflection', 'admin')),
    author_id             text NOT NULL DEFAULT '',
    rationale             text,
    evidence_session_ids  text[] NOT NULL DEFAULT '{}',
    reflection_id         uuid,
    restored_from         uuid,
    created_at            timestamptz NOT NULL DEFAULT now(),
    redacted_at           timestamptz,
    redacted_by           text,
    CHECK (redacted_at IS NULL OR content IS NULL)
);
CREATE UNIQUE INDEX memory_versions_seq_uq ON stackbone_platform.memory_versions (seq);
CREATE INDEX memory_versions_store_idx ON stackbone_platform.memory_versions (store_id, seq DESC);
CREATE INDEX memory_versions_memory_idx ON stackbone_platform.memory_versions (memory_id, seq DESC);
CREATE INDEX memory_versions_age_idx ON stackbone_platform.memory_versions (created_at);

-- Learning, per agent: the memory model (NULL inherits the agent's) and the
-- state the console shows.
CREATE TABLE stackbone_platform.agent_learning (
    agent_id          text PRIMARY KEY,
    memory_model_ref  text,
    state             text NOT NULL DEFAULT 'waiting' CHECK (state IN ('waiting', 'idle', 'updating', 'delayed')),
    next_retry_at     timestamptz,
    last_error_code   text,
    last_updated_at   timestamptz,
    last_checked_at   timestamptz,
    updated_at        timestamptz NOT NULL DEFAULT now()
);

-- A short report per finished session (per stretch of turns, when a session
-- goes on after its report). Most say nothing was learned (useful = false).
-- A learning run that reads a useful report marks it with its id.
CREATE TABLE stackbone_platform.session_reports (
    id             uuid PRIMARY KEY,
    session_id     text NOT NULL,
    agent_id       text NOT NULL,
    from_turn      integer NOT NULL,
    through_turn   integer NOT NULL,
    status         text NOT NULL CHECK (status IN ('written', 'failed')),
    useful         boolean NOT NULL DEFAULT false,
    report         text NOT NULL DEFAULT '',
    error_code     text,
    run_id         uuid,
    reflection_id  uuid,
    created_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (session_id, through_turn)
);
CREATE INDEX session_reports_waiting_idx ON stackbone_platform.session_reports (agent_id, created_at)
    WHERE useful AND reflection_id IS NULL;
CREATE INDEX session_reports_agent_idx ON stackbone_platform.session_reports (agent_id, status);

-- Learning runs (one row per attempt): why it ran, what it read, what it did.
CREATE TABLE stackbone_platform.memory_reflections (
    id                uuid PRIMARY KEY,
    agent_id          text NOT NULL,
    store_id          uuid NOT NULL REFERENCES stackbone_platform.memory_stores (id) ON DELETE CASCADE,
    status            text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
    triggered_by      text NOT NULL CHECK (triggered_by IN ('reports', 'schedule', 'retry')),
    reason            text NOT NULL,
    attempt           integer NOT NULL,
    model             text NOT NULL DEFAULT '',
    run_id            uuid NOT NULL,
    report_ids        uuid[] NOT NULL DEFAULT '{}',
    learned_from      text[] NOT NULL DEFAULT '{}',
    added             integer NOT NULL DEFAULT 0,
    updated           integer NOT NULL DEFAULT 0,
    merged            integer NOT NULL DEFAULT 0,
    retired           integer NOT NULL DEFAULT 0,
    changes           jsonb NOT NULL DEFAULT '[]',
    summary           text,
    error_code        text,
    error_message     text,
    started_at        timestamptz NOT NULL DEFAULT now(),
    finished_at       timestamptz
);
CREATE INDEX memory_reflections_agent_idx ON stackbone_platform.memory_reflections (agent_id, started_at DESC, id DESC);
CREATE INDEX memory_reflections_started_idx ON stackbone_platform.memory_reflections (started_at DESC, id DESC);

-- +goose Down
DROP TABLE stackbone_platform.memory_reflections;
DROP TABLE stackbone_platform.session_reports;
DROP TABLE stackbone_platform.agent_learning;
DROP TABLE stackbone_platform.memory_versions;
DROP TABLE stackbone_platform.memory_folders;
DROP TABLE stackbone_platform.memories;
DROP TABLE stackbone_platform.memory_stores;
