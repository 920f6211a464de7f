-- Workflows (configuration, written by the gateway) and the execution-history read model.
CREATE TABLE workflows (
    id uuid PRIMARY KEY,
    owner_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name text NOT NULL,
    description text NOT NULL DEFAULT '',
    nodes jsonb NOT NULL DEFAULT '[]'::jsonb,
    edges jsonb NOT NULL DEFAULT '[]'::jsonb,
    auth_type text NOT NULL DEFAULT 'jwt',
    auth_header_key text,
    auth_header_value text,
    sse_enabled boolean NOT NULL DEFAULT false,
    sse_node_config jsonb NOT NULL DEFAULT '{}'::jsonb,
    settings jsonb NOT NULL DEFAULT '{}'::jsonb,
    version integer NOT NULL DEFAULT 1,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX workflows_owner ON workflows (owner_id, updated_at DESC);

CREATE TABLE workflow_versions (
    workflow_id uuid NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    version integer NOT NULL,
    name text NOT NULL,
    nodes jsonb NOT NULL,
    edges jsonb NOT NULL,
    settings jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workflow_id, version)
);

-- One row per node result (an invocation; retried attempts have their own rows).
CREATE TABLE run_nodes (
    run_id text NOT NULL,
    invocation_id text NOT NULL,
    node_id text NOT NULL,
    node_label text NOT NULL,
    node_type text NOT NULL,
    status text NOT NULL,
    output jsonb,
    error text,
    execution_time_ms double precision NOT NULL DEFAULT 0,
    metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
    sequence bigint NOT NULL,
    PRIMARY KEY (run_id, invocation_id)
);
CREATE INDEX run_nodes_order ON run_nodes (run_id, sequence);

ALTER TABLE runs ADD COLUMN depth integer NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN http_status integer;
CREATE INDEX runs_status ON runs (owner_id, status, requested_at DESC);
