-- Human review requests (the review service's read model of `heym.work.<run>.review.<id>`).
-- The token itself is never stored: `token_hash` is its SHA-256 (the link holds the token).
-- `agent_sequence` is where the request sits on the agent's aggregate: the gateway reads the
-- aggregate after it to check the review is still open and appends the decision after what
-- it read (expected sequence), so exactly one decision (or the expiry) wins.
CREATE TABLE review_requests (
    request_id text PRIMARY KEY,
    token_hash text NOT NULL UNIQUE,
    run_id text NOT NULL,
    root_run_id text NOT NULL,
    invocation_id text NOT NULL,
    agent_sequence bigint NOT NULL,
    owner_id uuid,
    workflow_id text NOT NULL DEFAULT '',
    workflow_name text NOT NULL DEFAULT '',
    agent_node_id text NOT NULL DEFAULT '',
    agent_label text NOT NULL DEFAULT '',
    summary text NOT NULL DEFAULT '',
    draft_text text NOT NULL DEFAULT '',
    review_url text NOT NULL DEFAULT '',
    checkpoint integer NOT NULL DEFAULT 1,
    test_run boolean NOT NULL DEFAULT false,
    status text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'decided', 'expired', 'cancelled')),
    decision text CHECK (decision IN ('accepted', 'edited', 'refused')),
    edited_text text,
    refusal_reason text,
    resolved_output jsonb,
    expires_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    resolved_at timestamptz
);
CREATE INDEX review_requests_run ON review_requests (root_run_id);
