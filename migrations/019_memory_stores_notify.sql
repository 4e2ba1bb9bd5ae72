-- +goose Up
-- Every box caches the memory store tools it offers each agent: they depend
-- on the stores' names, descriptions, scope and status, and on whether the
-- agent's learned store holds memories. A change to any of these, by any
-- box or job, tells every box to drop that cache (store/notify's channel,
-- topic "stores"); a memory written into a store that already holds some
-- does not.
-- +goose StatementBegin
CREATE FUNCTION stackbone_platform.memory_stores_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('stackbone_invalidate', 'stores:');
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER memory_stores_added_or_removed
    AFTER INSERT OR DELETE ON stackbone_platform.memory_stores
    FOR EACH STATEMENT EXECUTE FUNCTION stackbone_platform.memory_stores_notify();
CREATE TRIGGER memory_stores_shown_changed
    AFTER UPDATE ON stackbone_platform.memory_stores
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.slug IS DISTINCT FROM NEW.slug
        OR OLD.description IS DISTINCT FROM NEW.description OR OLD.agent_id IS DISTINCT FROM NEW.agent_id
        OR OLD.origin IS DISTINCT FROM NEW.origin OR OLD.status IS DISTINCT FROM NEW.status
        OR (OLD.memory_count = 0) <> (NEW.memory_count = 0))
    EXECUTE FUNCTION stackbone_platform.memory_stores_notify();

-- +goose Down
DROP TRIGGER memory_stores_shown_changed ON stackbone_platform.memory_stores;
DROP TRIGGER memory_stores_added_or_removed ON stackbone_platform.memory_stores;
DROP FUNCTION stackbone_platform.memory_stores_notify();
