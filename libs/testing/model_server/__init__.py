"""A scripted OpenAI-compatible model server: the only fake in Heym's tests and offline demo."""

from libs.testing.model_server._demo import demo_script
from libs.testing.model_server._engine import LedgerEntry
from libs.testing.model_server._request import ChatRequest
from libs.testing.model_server._script import HttpError, Match, Reply, Rule, Script, ToolCall
from libs.testing.model_server._server import ModelServer

__all__ = [
    "ChatRequest",
    "HttpError",
    "LedgerEntry",
    "Match",
    "ModelServer",
    "Reply",
    "Rule",
    "Script",
    "ToolCall",
    "demo_script",
]
