-- Per-workflow webhook rate limit (a sliding window per workflow and client address) and
-- response cache, shared by every gateway replica.
CREATE TABLE rate_limit_hits (
    workflow_id uuid NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    client text NOT NULL,
    at timestamptz NOT NULL
);
CREATE INDEX rate_limit_hits_window ON rate_limit_hits (workflow_id, client, at);

CREATE TABLE response_cache (
    workflow_id uuid NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    cache_key text NOT NULL,
    outputs jsonb NOT NULL,
    status_code integer NOT NULL DEFAULT 200,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (workflow_id, cache_key)
);
CREATE INDEX response_cache_expiry ON response_cache (expires_at);
