-- Users, API keys, and the positions projections reached in the event stream.
CREATE TABLE users (
    id uuid PRIMARY KEY,
    email text NOT NULL UNIQUE,
    name text NOT NULL DEFAULT '',
    is_admin boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
    id uuid PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name text NOT NULL DEFAULT 'default',
    key_hash bytea NOT NULL UNIQUE,
    key_prefix text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);
CREATE INDEX api_keys_user ON api_keys (user_id);

-- One row per projector: the stream sequence of the last message it applied. Written in the
-- same transaction as the projector's rows, so a redelivered message is recognised and skipped.
CREATE TABLE projection_positions (
    name text PRIMARY KEY,
    position bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Messages a projector could not decode: kept for inspection instead of blocking the projector.
CREATE TABLE projection_rejects (
    projector text NOT NULL,
    sequence bigint NOT NULL,
    subject text NOT NULL,
    error text NOT NULL,
    body bytea,
    rejected_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (projector, sequence)
);

-- The run summary read model (execution history builds on it).
CREATE TABLE runs (
    run_id text PRIMARY KEY,
    workflow_id text NOT NULL,
    workflow_name text NOT NULL DEFAULT '',
    owner_id text NOT NULL DEFAULT '',
    status text NOT NULL,
    trigger_source text NOT NULL DEFAULT 'API',
    test_run boolean NOT NULL DEFAULT false,
    parent_run_id text,
    inputs jsonb NOT NULL DEFAULT '{}'::jsonb,
    outputs jsonb,
    error text,
    requested_at timestamptz NOT NULL,
    started_at timestamptz,
    finished_at timestamptz,
    execution_time_ms double precision,
    last_sequence bigint NOT NULL
);
CREATE INDEX runs_workflow ON runs (workflow_id, requested_at DESC);
CREATE INDEX runs_owner ON runs (owner_id, requested_at DESC);
