-- The tool sandbox's stored objects: skills (the agent node references one by id), MCP
-- connections (headers and env sealed like credentials, AES-256-GCM bound to the row id) and
-- the files skills write (served only with their token, whose SHA-256 is stored).
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

CREATE TABLE generated_files (
    id uuid PRIMARY KEY,
    owner_id uuid REFERENCES users (id) ON DELETE CASCADE,
    token_hash bytea NOT NULL,
    filename text NOT NULL,
    mime_type text NOT NULL,
    size_bytes integer NOT NULL,
    content bytea NOT NULL,
    run_id text NOT NULL DEFAULT '',
    tool_call_id text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX generated_files_owner ON generated_files (owner_id, created_at);
