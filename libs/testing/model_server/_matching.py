"""Rule matching against a chat request, and placeholder filling in scripted replies."""

from __future__ import annotations

import re
from typing import Any

from libs.testing.model_server._request import ChatRequest, message_text
from libs.testing.model_server._script import Match


def matches(match: Match, request: ChatRequest) -> bool:
    """True when every condition set on `match` holds for `request`."""
    return all(check(match, request) for check in _CHECKS) and (
        match.predicate is None or bool(match.predicate(request))
    )


def _last_user(match: Match, request: ChatRequest) -> bool:
    text = request.last_user_text
    if match.last_user_equals is not None and text != match.last_user_equals:
        return False
    if match.last_user_contains is not None and (
        text is None or match.last_user_contains not in text
    ):
        return False
    return match.last_user_regex is None or (
        text is not None and re.search(match.last_user_regex, text) is not None
    )


def _system(match: Match, request: ChatRequest) -> bool:
    return match.system_contains is None or match.system_contains in request.system_text


def _tool_results(match: Match, request: ChatRequest) -> bool:
    if match.last_is_tool_result is not None and (
        request.last_is_tool_result != match.last_is_tool_result
    ):
        return False
    if match.tool_result_contains is not None and not any(
        match.tool_result_contains in message_text(m) for m in request.trailing_tool_messages
    ):
        return False
    return match.tool_result_for is None or match.tool_result_for in request.answered_tool_names()


def _offer(match: Match, request: ChatRequest) -> bool:
    if match.model is not None and request.model != match.model:
        return False
    if match.tools_offered is not None and bool(request.tools) != match.tools_offered:
        return False
    if match.tool_offered is not None and match.tool_offered not in request.offered_tool_names:
        return False
    if match.tool_choice is not None and request.tool_choice != match.tool_choice:
        return False
    return match.response_format is None or request.response_format == match.response_format


def _turns(match: Match, request: ChatRequest) -> bool:
    return match.assistant_turns is None or request.assistant_turns == match.assistant_turns


_CHECKS = (_last_user, _system, _tool_results, _offer, _turns)


def fill(template: str, request: ChatRequest) -> str:
    """Replace `{tool_results}` and `{last_user}`; other braces are left alone on purpose, so
    scripted JSON text never trips over str.format."""
    return template.replace("{tool_results}", request.tool_results_text).replace(
        "{last_user}", request.last_user_text or ""
    )


def fill_value(value: Any, request: ChatRequest) -> Any:
    """Fill placeholders in every string inside a JSON-like value (tool-call arguments)."""
    if isinstance(value, str):
        return fill(value, request)
    if isinstance(value, dict):
        return {k: fill_value(v, request) for k, v in value.items()}
    if isinstance(value, list):
        return [fill_value(v, request) for v in value]
    return value
