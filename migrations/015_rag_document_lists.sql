-- +goose Up
-- A collection's documents page by keyset (newest first, id as the
-- tie-breaker), optionally by status, and filter by metadata containment.
DROP INDEX stackbone_platform.rag_documents_collection_idx;
CREATE INDEX rag_documents_collection_idx ON stackbone_platform.rag_documents (collection_id, created_at DESC, id DESC);
CREATE INDEX rag_documents_status_idx ON stackbone_platform.rag_documents (collection_id, status, created_at DESC, id DESC);
CREATE INDEX rag_documents_metadata_idx ON stackbone_platform.rag_documents USING gin (metadata jsonb_path_ops);

-- +goose Down
DROP INDEX stackbone_platform.rag_documents_metadata_idx;
DROP INDEX stackbone_platform.rag_documents_status_idx;
DROP INDEX stackbone_platform.rag_documents_collection_idx;
CREATE INDEX rag_documents_collection_idx ON stackbone_platform.rag_documents (collection_id, created_at DESC, id);
