"""Persistent memory in the agent runtime: prompt blocks at start, the extraction work item
after a successful run, and the projections of memory events (graph tables, traces)."""
