-- +goose Up
-- Webhooks: subscriptions to the box's events, the events themselves, one
-- delivery per event and subscription, and every attempt of a delivery
-- (the log an operator reads and replays from). Deliveries are worked by
-- River jobs; the rows here say what happened.

-- secret is kept as issued (whsec_...): signing needs it. It is shown once,
-- when the subscription is created, and never logged.
CREATE TABLE stackbone_platform.webhook_subscriptions (
    id                  text PRIMARY KEY,
    url                 text NOT NULL CHECK (url ~ '^https?://' AND length(url) <= 2000),
    events              text[] NOT NULL CHECK (cardinality(events) BETWEEN 1 AND 20),
    secret              text NOT NULL,
    include_transcript  boolean NOT NULL DEFAULT false,
    description         text NOT NULL DEFAULT '',
    created_at          timestamptz NOT NULL DEFAULT now(),
    created_by          text NOT NULL
);

-- data is the event's payload; content holds the fields only subscriptions
-- with include_transcript receive (a call's heard transcript).
CREATE TABLE stackbone_platform.webhook_events (
    id          text PRIMARY KEY,
    type        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    data        jsonb NOT NULL,
    content     jsonb
);
CREATE INDEX webhook_events_created ON stackbone_platform.webhook_events (created_at);

-- status: pending (not tried yet), retrying, delivered, failed (out of
-- attempts; a replay may still deliver it).
CREATE TABLE stackbone_platform.webhook_deliveries (
    id               text PRIMARY KEY,
    subscription_id  text NOT NULL REFERENCES stackbone_platform.webhook_subscriptions (id) ON DELETE CASCADE,
    event_id         text NOT NULL REFERENCES stackbone_platform.webhook_events (id) ON DELETE CASCADE,
    status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'retrying', 'delivered', 'failed')),
    attempts         integer NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (subscription_id, event_id)
);
CREATE INDEX webhook_deliveries_subscription ON stackbone_platform.webhook_deliveries (subscription_id, created_at DESC, id DESC);

-- status_code is NULL when the receiver gave no answer (error says why:
-- timeout, refused, ...); never the receiver's body.
CREATE TABLE stackbone_platform.webhook_attempts (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id  text NOT NULL REFERENCES stackbone_platform.webhook_deliveries (id) ON DELETE CASCADE,
    attempt      integer NOT NULL,
    replay       boolean NOT NULL DEFAULT false,
    at           timestamptz NOT NULL DEFAULT now(),
    status_code  integer,
    latency_ms   integer NOT NULL,
    error        text
);
CREATE INDEX webhook_attempts_delivery ON stackbone_platform.webhook_attempts (delivery_id, id);

-- +goose Down
DROP TABLE stackbone_platform.webhook_attempts;
DROP TABLE stackbone_platform.webhook_deliveries;
DROP TABLE stackbone_platform.webhook_events;
DROP TABLE stackbone_platform.webhook_subscriptions;
