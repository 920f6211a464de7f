-- Workflow-scoped execution tokens (auth_type jwt): the JWT itself is never stored; its `jti`
-- is the row id, so revoking the row revokes the token.
CREATE TABLE execution_tokens (
    id uuid PRIMARY KEY,
    workflow_id uuid NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    owner_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz,
    revoked_at timestamptz
);
CREATE INDEX execution_tokens_workflow ON execution_tokens (workflow_id, created_at DESC);
