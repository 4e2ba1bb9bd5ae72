-- +goose Up
-- Retrieval: collections of documents split into chunks, each chunk with its
-- embedding (real[], so pgvector can cast it where the server has it) and
-- JSONB metadata. The box searches embeddings with its own in-memory index
-- (rag package), kept current from the version columns below.

-- One embedding model and dimension per collection. version is bumped (and
-- the row locked) by every transaction that changes the collection's
-- chunks, so chunk versions commit in order and a box can catch up with
-- "version > what I have". Tombstones at or above tombstones_from are all
-- kept; a box behind that reloads the collection.
CREATE TABLE stackbone_platform.rag_collections (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name             text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9_.-]{0,63}$'),
    description      text NOT NULL DEFAULT '',
    model            text NOT NULL,
    dimensions       integer NOT NULL CHECK (dimensions BETWEEN 1 AND 16000),
    version          bigint NOT NULL DEFAULT 0,
    tombstones_from  bigint NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now()
);
INSERT INTO stackbone_platform.rag_collections (name, description, model, dimensions)
VALUES ('default', 'The collection used when none is named.', 'openai/text-embedding-3-small', 1536);

-- A document: an uploaded file (its original in the object store, ingested
-- by a job) or a set of chunks ingested from code under the caller's id.
CREATE TABLE stackbone_platform.rag_documents (
    id             text PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 200),
    collection_id  bigint NOT NULL REFERENCES stackbone_platform.rag_collections (id) ON DELETE CASCADE,
    source         text NOT NULL CHECK (source IN ('upload', 'code')),
    filename       text,
    content_type   text,
    size_bytes     bigint,
    sha256         text,
    object_key     text,
    metadata       jsonb NOT NULL DEFAULT '{}',
    status         text NOT NULL CHECK (status IN ('queued', 'running', 'retrying', 'succeeded', 'failed', 'cancelled')),
    error_code     text,
    error_message  text,
    job_id         bigint,
    run_id         uuid,
    attempts       integer NOT NULL DEFAULT 0,
    chunk_count    integer NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX rag_documents_collection_idx ON stackbone_platform.rag_documents (collection_id, created_at DESC, id);
CREATE INDEX rag_documents_job_idx ON stackbone_platform.rag_documents (job_id);

CREATE TABLE stackbone_platform.rag_chunks (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    collection_id  bigint NOT NULL REFERENCES stackbone_platform.rag_collections (id) ON DELETE CASCADE,
    document_id    text NOT NULL REFERENCES stackbone_platform.rag_documents (id) ON DELETE CASCADE,
    chunk_index    integer NOT NULL,
    content        text NOT NULL,
    metadata       jsonb NOT NULL DEFAULT '{}',
    embedding      real[] NOT NULL,
    version        bigint NOT NULL,
    tsv            tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED
);
-- Embeddings do not compress; skip the attempt.
ALTER TABLE stackbone_platform.rag_chunks ALTER COLUMN embedding SET STORAGE EXTERNAL;
CREATE INDEX rag_chunks_document_idx ON stackbone_platform.rag_chunks (document_id, chunk_index);
CREATE INDEX rag_chunks_version_idx ON stackbone_platform.rag_chunks (collection_id, version);
CREATE INDEX rag_chunks_metadata_idx ON stackbone_platform.rag_chunks USING gin (metadata jsonb_path_ops);
CREATE INDEX rag_chunks_tsv_idx ON stackbone_platform.rag_chunks USING gin (tsv);

-- Chunks removed (replaced or deleted), so other boxes drop them from their
-- in-memory indexes. Pruned after a day.
CREATE TABLE stackbone_platform.rag_tombstones (
    collection_id  bigint NOT NULL REFERENCES stackbone_platform.rag_collections (id) ON DELETE CASCADE,
    chunk_id       bigint NOT NULL,
    version        bigint NOT NULL,
    deleted_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX rag_tombstones_idx ON stackbone_platform.rag_tombstones (collection_id, version);

-- +goose Down
DROP TABLE stackbone_platform.rag_tombstones;
DROP TABLE stackbone_platform.rag_chunks;
DROP TABLE stackbone_platform.rag_documents;
DROP TABLE stackbone_platform.rag_collections;
