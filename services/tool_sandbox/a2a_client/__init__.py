"""Calling remote A2A 1.0 agents (the `a2a` node and agents' `a2aAgents` tools)."""

from services.tool_sandbox.a2a_client.call import Ask, RemoteAgentError, RemoteCall

__all__ = ["Ask", "RemoteAgentError", "RemoteCall"]
