-- The Heym Agent (chat assistant) and Heym as an MCP server.

-- A workflow offered as an MCP tool (settable on create/update and by PATCH /api/mcp/workflows).
ALTER TABLE workflows ADD COLUMN mcp_enabled boolean NOT NULL DEFAULT false;
CREATE INDEX workflows_mcp ON workflows (owner_id) WHERE mcp_enabled;

-- Per-user assistant settings: the default MCP server's chat tool and the preferred model.
CREATE TABLE assistant_settings (
    user_id uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    mcp_chat_enabled boolean NOT NULL DEFAULT false,
    mcp_chat_credential_id uuid REFERENCES credentials (id) ON DELETE SET NULL,
    mcp_chat_model text,
    preferred_credential_id uuid REFERENCES credentials (id) ON DELETE SET NULL,
    preferred_model text,
    quick_prompts jsonb,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Named MCP servers: their own hashed key, assigned workflows, own chat tool settings.
CREATE TABLE mcp_servers (
    id uuid PRIMARY KEY,
    owner_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name text NOT NULL,
    description text NOT NULL DEFAULT '',
    key_hash bytea NOT NULL UNIQUE,
    key_prefix text NOT NULL,
    chat_enabled boolean NOT NULL DEFAULT false,
    chat_credential_id uuid REFERENCES credentials (id) ON DELETE SET NULL,
    chat_model text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (owner_id, name)
);

CREATE TABLE mcp_server_workflows (
    server_id uuid NOT NULL REFERENCES mcp_servers (id) ON DELETE CASCADE,
    workflow_id uuid NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    PRIMARY KEY (server_id, workflow_id)
);

-- Conversations with the Heym Agent: projections of heym.chat.<conversation>.> events.
CREATE TABLE chat_conversations (
    id text PRIMARY KEY,
    owner_id uuid NOT NULL,
    title text NOT NULL DEFAULT 'New Chat',
    source text NOT NULL DEFAULT 'chat',
    server_id text,
    is_pinned boolean NOT NULL DEFAULT false,
    is_running boolean NOT NULL DEFAULT false,
    has_unread boolean NOT NULL DEFAULT false,
    titled boolean NOT NULL DEFAULT false,
    running_turn_id text,
    last_turn_id text,
    last_turn_sequence bigint,
    last_credential_id text,
    last_model text,
    queue_paused_by_message_id text,
    deleted boolean NOT NULL DEFAULT false,
    -- Event positions (sequence * 1000 + index) of the last turn-state and title/pin changes:
    -- a projector batch applies statements grouped by kind, so each update is guarded by
    -- position and the latest event wins whatever order the statements run in.
    state_position bigint NOT NULL DEFAULT 0,
    meta_position bigint NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    last_sequence bigint NOT NULL
);
CREATE INDEX chat_conversations_owner ON chat_conversations (owner_id, updated_at DESC)
    WHERE NOT deleted;

CREATE TABLE chat_messages (
    id text PRIMARY KEY,
    conversation_id text NOT NULL REFERENCES chat_conversations (id) ON DELETE CASCADE,
    role text NOT NULL,
    content text NOT NULL,
    tool_calls jsonb NOT NULL DEFAULT '[]'::jsonb,
    status text NOT NULL DEFAULT 'done',
    created_at timestamptz NOT NULL,
    sequence bigint NOT NULL
);
CREATE INDEX chat_messages_conversation ON chat_messages (conversation_id, sequence);

CREATE TABLE chat_queue_items (
    id text PRIMARY KEY,
    conversation_id text NOT NULL REFERENCES chat_conversations (id) ON DELETE CASCADE,
    content text NOT NULL,
    credential_id text,
    model text,
    attachment jsonb,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    sequence bigint NOT NULL
);
CREATE INDEX chat_queue_items_conversation ON chat_queue_items (conversation_id, created_at, id);

-- The tool calls of each turn as the Chat tab shows them (an assistant message's tool_calls).
CREATE TABLE chat_tool_calls (
    turn_id text NOT NULL,
    id text NOT NULL,
    conversation_id text NOT NULL REFERENCES chat_conversations (id) ON DELETE CASCADE,
    name text NOT NULL,
    label text NOT NULL DEFAULT '',
    args jsonb NOT NULL DEFAULT '{}'::jsonb,
    status text NOT NULL DEFAULT 'running',
    response_summary text NOT NULL DEFAULT '',
    elapsed_ms double precision NOT NULL DEFAULT 0,
    sequence bigint NOT NULL,
    PRIMARY KEY (turn_id, id)
);
CREATE INDEX chat_tool_calls_conversation ON chat_tool_calls (conversation_id, sequence);

-- One row per turn: the assistant's run history (`run_type: dashboard_chat`).
CREATE TABLE chat_turns (
    turn_id text PRIMARY KEY,
    conversation_id text NOT NULL,
    owner_id uuid NOT NULL,
    status text NOT NULL,
    content text NOT NULL DEFAULT '',
    reply text NOT NULL DEFAULT '',
    tool_names jsonb NOT NULL DEFAULT '[]'::jsonb,
    started_at timestamptz NOT NULL,
    finished_at timestamptz,
    execution_time_ms double precision,
    sequence bigint NOT NULL
);
CREATE INDEX chat_turns_owner ON chat_turns (owner_id, started_at DESC);

-- This project's own documentation, split by section, for the assistant's search_documentation.
CREATE TABLE doc_sections (
    path text NOT NULL,
    anchor text NOT NULL,
    title text NOT NULL,
    content text NOT NULL,
    checksum text NOT NULL,
    search tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', title), 'A') || to_tsvector('english', content)
    ) STORED,
    PRIMARY KEY (path, anchor)
);
CREATE INDEX doc_sections_search ON doc_sections USING gin (search);

-- LLM traces of the assistant (source dashboard_chat) carry their owner and conversation.
ALTER TABLE llm_traces ADD COLUMN session_id text;
