"""Agent persistent memory shared by the agent runtime and the gateway: the graph as a fold of
its events, the merge rules of extraction, bounds, and the writer that appends changes."""
