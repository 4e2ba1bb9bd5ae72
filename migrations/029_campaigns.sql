-- +goose Up
-- Campaigns: batch outbound calling. A campaign is an agent, a trunk, a
-- list of contacts, calling windows, a concurrency cap and a retry policy.
-- Each attempt is one River job and one call sharing the attempt's id, so
-- a box that dies loses no contact and calls none twice.

-- status: draft (contacts may be added), running, paused, cancelled,
-- finished. windows and retry hold the policy as the API shows it.
CREATE TABLE stackbone_platform.campaigns (
    id               text PRIMARY KEY,
    name             text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    agent_id         text NOT NULL,
    trunk            text NOT NULL DEFAULT '',
    status           text NOT NULL DEFAULT 'draft'
                     CHECK (status IN ('draft', 'running', 'paused', 'cancelled', 'finished')),
    max_concurrent   integer NOT NULL CHECK (max_concurrent BETWEEN 1 AND 1000),
    windows          jsonb NOT NULL,
    default_zone     text NOT NULL DEFAULT '',
    retry            jsonb NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    created_by       text NOT NULL,
    started_at       timestamptz,
    finished_at      timestamptz
);
CREATE INDEX campaigns_running ON stackbone_platform.campaigns (id) WHERE status = 'running';

-- state: waiting (due at next_at), queued (an attempt's job is in the
-- queue), calling (its call is up or ringing), then one final state: done
-- (reached), failed (out of attempts, or the number cannot be called),
-- cancelled (the campaign was cancelled first). zones are the IANA zones
-- its windows are read in (all must be inside a window).
CREATE TABLE stackbone_platform.campaign_contacts (
    campaign_id   text NOT NULL REFERENCES stackbone_platform.campaigns (id) ON DELETE CASCADE,
    seq           integer NOT NULL,
    number        text NOT NULL,
    zones         text[] NOT NULL,
    identities    jsonb NOT NULL DEFAULT '{}',
    variables     jsonb NOT NULL DEFAULT '{}',
    state         text NOT NULL DEFAULT 'waiting'
                  CHECK (state IN ('waiting', 'queued', 'calling', 'done', 'failed', 'cancelled')),
    attempts      integer NOT NULL DEFAULT 0,
    next_at       timestamptz NOT NULL DEFAULT now(),
    last_outcome  text,
    last_call_id  text,
    reason        text,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campaign_id, seq)
);
CREATE INDEX campaign_contacts_due ON stackbone_platform.campaign_contacts (campaign_id, next_at, seq)
    WHERE state = 'waiting';
CREATE INDEX campaign_contacts_state ON stackbone_platform.campaign_contacts (campaign_id, state);
CREATE INDEX campaign_contacts_number ON stackbone_platform.campaign_contacts (number);

-- One row per attempt: its id is the call's id and the job's argument.
-- state: queued, dialled (the call exists), ended, failed (the dial was
-- refused). An attempt withdrawn before it was dialled (its campaign paused
-- or cancelled, its window closed) is deleted.
CREATE TABLE stackbone_platform.campaign_attempts (
    id           text PRIMARY KEY,
    campaign_id  text NOT NULL,
    seq           integer NOT NULL,
    attempt      integer NOT NULL,
    state        text NOT NULL DEFAULT 'queued'
                 CHECK (state IN ('queued', 'dialled', 'ended', 'failed')),
    outcome      text,
    answered_by  text,
    reason       text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    dialled_at   timestamptz,
    ended_at     timestamptz,
    FOREIGN KEY (campaign_id, seq) REFERENCES stackbone_platform.campaign_contacts (campaign_id, seq) ON DELETE CASCADE,
    UNIQUE (campaign_id, seq, attempt)
);

-- +goose Down
DROP TABLE stackbone_platform.campaign_attempts;
DROP TABLE stackbone_platform.campaign_contacts;
DROP TABLE stackbone_platform.campaigns;
