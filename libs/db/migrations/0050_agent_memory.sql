-- Agent persistent memory (Heym §7). The graph tables are a projection of the memory events
-- on `heym.memory.<workflow>.<node>` (rebuildable: drop the rows and the projector's
-- position); each row names the last change's writer (run, invocation, turn, or user).
CREATE TABLE agent_memory_graphs (
    workflow_id text NOT NULL,
    canvas_node_id text NOT NULL,
    -- The stream sequence of the last memory message projected for this graph.
    last_sequence bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (workflow_id, canvas_node_id)
);

CREATE TABLE agent_memory_entities (
    id text PRIMARY KEY,
    workflow_id text NOT NULL,
    canvas_node_id text NOT NULL,
    entity_name text NOT NULL,
    entity_type text NOT NULL,
    properties jsonb NOT NULL DEFAULT '{}'::jsonb,
    confidence double precision NOT NULL DEFAULT 0,
    origin jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    sequence bigint NOT NULL
);
CREATE INDEX agent_memory_entities_graph
    ON agent_memory_entities (workflow_id, canvas_node_id, sequence DESC);

CREATE TABLE agent_memory_relationships (
    id text PRIMARY KEY,
    workflow_id text NOT NULL,
    canvas_node_id text NOT NULL,
    source_id text NOT NULL REFERENCES agent_memory_entities (id) ON DELETE CASCADE,
    target_id text NOT NULL REFERENCES agent_memory_entities (id) ON DELETE CASCADE,
    relationship_type text NOT NULL,
    properties jsonb NOT NULL DEFAULT '{}'::jsonb,
    confidence double precision NOT NULL DEFAULT 0,
    origin jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    sequence bigint NOT NULL
);
CREATE INDEX agent_memory_relationships_graph
    ON agent_memory_relationships (workflow_id, canvas_node_id, sequence DESC);
CREATE INDEX agent_memory_relationships_target ON agent_memory_relationships (target_id);
CREATE INDEX agent_memory_relationships_source ON agent_memory_relationships (source_id);

-- Who shares memory with whom: derived from the agent nodes' `memoryShares` of every saved
-- workflow by a trigger, so every writer of `workflows` keeps it right. An owner node lets a
-- peer node (`peer_workflow_id` = the owner's workflow when the share names none) read, or
-- also write, its graph; `write` beats `read`.
CREATE TABLE agent_memory_shares (
    owner_workflow_id uuid NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    owner_node_id text NOT NULL,
    owner_label text NOT NULL,
    peer_workflow_id text NOT NULL,
    peer_node_id text NOT NULL,
    permission text NOT NULL,
    PRIMARY KEY (owner_workflow_id, owner_node_id, peer_workflow_id, peer_node_id)
);
CREATE INDEX agent_memory_shares_peer ON agent_memory_shares (peer_workflow_id, peer_node_id);

CREATE FUNCTION agent_memory_shares_refresh() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM agent_memory_shares WHERE owner_workflow_id = NEW.id;
    INSERT INTO agent_memory_shares
        (owner_workflow_id, owner_node_id, owner_label, peer_workflow_id, peer_node_id,
         permission)
    SELECT NEW.id,
           n ->> 'id',
           max(coalesce(n -> 'data' ->> 'label', n ->> 'id')),
           coalesce(nullif(btrim(s ->> 'peerWorkflowId'), ''), NEW.id::text),
           btrim(s ->> 'peerCanvasNodeId'),
           -- 'write' > 'read': any write share of the pair makes it write
           max(CASE WHEN lower(btrim(coalesce(s ->> 'permission', 'read'))) = 'write'
                    THEN 'write' ELSE 'read' END)
    FROM jsonb_array_elements(
             CASE WHEN jsonb_typeof(NEW.nodes) = 'array' THEN NEW.nodes ELSE '[]'::jsonb END
         ) AS n
    CROSS JOIN LATERAL jsonb_array_elements(
             CASE WHEN jsonb_typeof(n -> 'data' -> 'memoryShares') = 'array'
                  THEN n -> 'data' -> 'memoryShares' ELSE '[]'::jsonb END
         ) AS s
    WHERE jsonb_typeof(n) = 'object'
      AND n ->> 'type' = 'agent'
      AND coalesce(n ->> 'id', '') <> ''
      AND jsonb_typeof(s) = 'object'
      AND coalesce(btrim(s ->> 'peerCanvasNodeId'), '') <> ''
    GROUP BY 2, 4, 5;
    RETURN NULL;
END $$;

CREATE TRIGGER workflows_memory_shares
    AFTER INSERT OR UPDATE OF nodes ON workflows
    FOR EACH ROW EXECUTE FUNCTION agent_memory_shares_refresh();

-- Workflows saved before this migration.
UPDATE workflows SET nodes = nodes;
