-- A2A: the Heym Agent as an A2A 1.0 server.

-- A2A on or off, per user on the default server and per named server. It rides on the Heym
-- Agent: it is served only while the surface's chat tool (the agent) is on as well.
ALTER TABLE assistant_settings ADD COLUMN a2a_enabled boolean NOT NULL DEFAULT false;
ALTER TABLE mcp_servers ADD COLUMN a2a_enabled boolean NOT NULL DEFAULT false;
CREATE INDEX assistant_settings_a2a ON assistant_settings (user_id)
    WHERE a2a_enabled AND mcp_chat_enabled;

-- The task store: a read model of heym.chat.> (projected by the gateway). It locates a task
-- (its context, owner and server) and lists tasks; a task's status, artifacts and history
-- are folded from its conversation's log when asked for.
CREATE TABLE a2a_contexts (
    context_id text PRIMARY KEY,
    owner_id uuid NOT NULL,
    server_id text
);

CREATE TABLE a2a_tasks (
    task_id text PRIMARY KEY,
    context_id text NOT NULL,
    owner_id uuid NOT NULL,
    server_id text,
    state text NOT NULL,
    status_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL,
    message_only boolean NOT NULL DEFAULT false,
    deleted boolean NOT NULL DEFAULT false,
    -- event position (sequence * 1000 + index) of the last state change: updates of one
    -- batch run grouped by statement, so each is guarded and the latest event wins
    state_position bigint NOT NULL DEFAULT 0
);
-- ListTasks: the caller's tasks on one server, newest status first (task id breaks ties).
CREATE INDEX a2a_tasks_list ON a2a_tasks (owner_id, status_at DESC, task_id DESC)
    WHERE NOT deleted AND NOT message_only;
CREATE INDEX a2a_tasks_context ON a2a_tasks (context_id);

-- Which task each turn belongs to (a task waiting for input continues in a later turn).
CREATE TABLE a2a_task_turns (
    turn_id text PRIMARY KEY,
    task_id text NOT NULL
);
