-- Stored agent tools: skills (the agent node references one by id) and MCP connections
-- (headers and env sealed like credentials, AES-256-GCM bound to the row id). Files that
-- skills write live in the JetStream object store HEYM_FILES, not here.
CREATE TABLE skills (
    id uuid PRIMARY KEY,
    owner_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name text NOT NULL,
    content text NOT NULL DEFAULT '',
    files jsonb NOT NULL DEFAULT '[]',
    timeout_seconds double precision,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX skills_owner ON skills (owner_id, lower(name));

CREATE TABLE mcp_connections (
    id uuid PRIMARY KEY,
    owner_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    label text NOT NULL,
    transport text NOT NULL CHECK (transport IN ('stdio', 'sse', 'streamable_http')),
    url text,
    command text,
    args jsonb NOT NULL DEFAULT '[]',
    timeout_seconds double precision,
    -- JSON {"headers": {...}, "env": {...}} sealed; names only are kept in the clear
    secret bytea,
    header_names jsonb NOT NULL DEFAULT '[]',
    env_names jsonb NOT NULL DEFAULT '[]',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX mcp_connections_owner ON mcp_connections (owner_id, lower(label));
