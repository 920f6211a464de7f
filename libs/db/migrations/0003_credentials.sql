-- Model credentials (API keys for llm/agent nodes). `secret` is AES-256-GCM ciphertext whose
-- associated data is the row id, so a ciphertext copied into another row does not decrypt.
CREATE TABLE credentials (
    id uuid PRIMARY KEY,
    owner_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name text NOT NULL,
    type text NOT NULL CHECK (type IN ('openai', 'custom', 'google')),
    base_url text,
    secret bytea NOT NULL,
    key_hint text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (owner_id, name)
);
