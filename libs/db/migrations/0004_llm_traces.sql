-- LLM traces: one row per model call and per context compression, stored redacted and bounded.
CREATE TABLE llm_traces (
    id text PRIMARY KEY,
    owner_id text NOT NULL DEFAULT '',
    run_id text NOT NULL,
    invocation_id text NOT NULL,
    workflow_id text NOT NULL DEFAULT '',
    credential_id text,
    node_id text NOT NULL DEFAULT '',
    node_label text NOT NULL DEFAULT '',
    source text NOT NULL DEFAULT 'workflow',
    request_type text NOT NULL,
    provider text NOT NULL DEFAULT 'openai',
    model text NOT NULL DEFAULT '',
    request jsonb NOT NULL DEFAULT '{}'::jsonb,
    response jsonb NOT NULL DEFAULT '{}'::jsonb,
    error text,
    prompt_tokens integer NOT NULL DEFAULT 0,
    completion_tokens integer NOT NULL DEFAULT 0,
    total_tokens integer NOT NULL DEFAULT 0,
    elapsed_ms double precision NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL,
    sequence bigint NOT NULL
);
CREATE INDEX llm_traces_owner ON llm_traces (owner_id, created_at DESC);
CREATE INDEX llm_traces_run ON llm_traces (run_id, sequence);

-- Which agent invocation belongs to which owner and workflow (from AgentStarted + run).
CREATE TABLE agent_invocations (
    run_id text NOT NULL,
    invocation_id text NOT NULL,
    credential_id text,
    node_id text NOT NULL,
    node_label text NOT NULL,
    PRIMARY KEY (run_id, invocation_id)
);
