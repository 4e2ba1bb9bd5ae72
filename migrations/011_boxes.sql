-- +goose Up
-- The boxes sharing this database, each renewing its lease while it runs.
-- A job still running under a box whose lease ran out (the box died) is
-- handed back to the queue within seconds, not after River's rescue window.
CREATE TABLE stackbone_platform.boxes (
    id          text PRIMARY KEY,
    started_at  timestamptz NOT NULL DEFAULT now(),
    lease_until timestamptz NOT NULL
);

-- +goose Down
DROP TABLE stackbone_platform.boxes;
