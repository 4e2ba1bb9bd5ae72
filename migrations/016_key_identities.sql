-- +goose Up
-- The trust model of API keys: NULL identities is a key trusted to name any
-- identity (a backend); an object maps identity fields to the fixed value or
-- pattern a restricted key (a browser, a customer-facing app) may act for.
ALTER TABLE stackbone_platform.api_keys ADD COLUMN identities jsonb
    CHECK (identities IS NULL OR jsonb_typeof(identities) = 'object');

-- +goose Down
ALTER TABLE stackbone_platform.api_keys DROP COLUMN identities;
