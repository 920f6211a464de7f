-- The run inspector (web pages served by the gateway).
--
-- Sign-in sessions: opened with an API key, kept in Postgres so every gateway replica knows
-- them. Only the SHA-256 of the session token is stored (the cookie holds the token). A
-- session ends at `expires_at`, at sign-out, or when the API key it was opened with is
-- revoked (it is checked on every request through `api_key_id`).
CREATE TABLE ui_sessions (
    token_hash bytea PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    api_key_id uuid NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX ui_sessions_expiry ON ui_sessions (expires_at);

-- Where a child run was started from (an Execute node's or an agent's invocation), so the
-- run detail can nest a sub-workflow's timeline under the node that started it.
ALTER TABLE runs ADD COLUMN parent_invocation_id text;
CREATE INDEX runs_parent ON runs (parent_run_id) WHERE parent_run_id IS NOT NULL;

-- A run's human review pauses, read by the run detail for any run of a tree.
CREATE INDEX review_requests_by_run ON review_requests (run_id);
