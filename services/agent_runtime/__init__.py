"""The agent runtime service: LLM and agent nodes, the event-sourced tool loop."""
