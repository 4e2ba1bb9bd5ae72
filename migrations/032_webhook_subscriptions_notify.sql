-- +goose Up
-- Every box keeps in memory which event types anyone subscribed to, so an
-- event nobody takes costs its change nothing (no savepoint, no statement,
-- and a call's record written without a transaction of its own). Any change
-- to the subscriptions tells every box to drop that (store/notify's channel,
-- topic "webhooks").
-- +goose StatementBegin
CREATE FUNCTION stackbone_platform.webhook_subscriptions_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('stackbone_invalidate', 'webhooks:');
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER webhook_subscriptions_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON stackbone_platform.webhook_subscriptions
    FOR EACH STATEMENT EXECUTE FUNCTION stackbone_platform.webhook_subscriptions_notify();

-- +goose Down
DROP TRIGGER webhook_subscriptions_changed ON stackbone_platform.webhook_subscriptions;
DROP FUNCTION stackbone_platform.webhook_subscriptions_notify();
