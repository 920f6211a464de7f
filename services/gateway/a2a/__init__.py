"""The Heym Agent as an A2A 1.0 server (JSON-RPC binding): the Agent Card, the JSON-RPC
endpoint with its SSE streams, the task store (a projection of the chat log), settings."""
