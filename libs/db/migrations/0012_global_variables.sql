-- Global variables ($global): per user, set through the API or by `variable` nodes with
-- isGlobal (projected from run events after each run; `source_sequence` is the log position of
-- the value, so a replayed or late projection never overwrites a newer value).
CREATE TABLE global_variables (
    id uuid PRIMARY KEY,
    owner_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name text NOT NULL,
    value jsonb,
    source_sequence bigint NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (owner_id, name)
);
