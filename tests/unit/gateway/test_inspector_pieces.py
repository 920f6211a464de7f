"""Small pieces of the inspector: Debug panel lines from §2.13 frames, where sign-in may send
the viewer next, CSRF tokens, JSON blocks cut to size, the pages' security headers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from services.gateway import review_html
from services.gateway.inspector.fragments import json_text
from services.gateway.inspector.layout import CSP, HEADERS
from services.gateway.inspector.live import entry_html
from services.gateway.inspector.viewer import csrf_token, form_key, safe_next

pytestmark = pytest.mark.unit

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_debug_panel_lines() -> None:
    compression = {
        "type": "agent_progress",
        "node_label": "planner",
        "entry": {
            "phase": "compression",
            "messages_compressed": 6,
            "tokens_before": 1700,
            "tokens_after": 900,
        },
    }
    line = entry_html(compression, NOW)
    assert line is not None
    assert 'data-kind="compression"' in line
    assert '<span data-num="6">6</span> messages → summary)' in line
    assert "Context compressed (" in line
    result = {
        "type": "agent_progress",
        "node_label": "<b>x</b>",
        "entry": {
            "phase": "result",
            "name": "lookup",
            "result": {"has_error": True, "status": "timeout", "execution_time_ms": 30000},
        },
    }
    line = entry_html(result, NOW)
    assert line is not None
    assert "&lt;b&gt;x&lt;/b&gt;" in line
    assert 'class="badge s-timeout"' in line
    assert entry_html({"type": "agent_progress", "entry": {"phase": "end"}}, NOW) is None
    assert entry_html({"type": "final_output"}, NOW) is None
    end = entry_html({"type": "execution_complete", "status": "pending"}, NOW)
    assert end is not None
    assert "s-pending" in end


def test_sign_in_sends_the_viewer_to_inspector_pages_only() -> None:
    assert safe_next("/ui/runs/abc?x=1") == "/ui/runs/abc?x=1"
    for bad in (None, "", "https://evil.example/", "//evil.example/ui/", "/ui//evil.example",
                "/ui/\\evil", "/api/workflows", "/ui/static/x.js"):  # fmt: skip
        assert safe_next(bad) == "/ui/history", bad


def test_csrf_tokens_depend_on_the_secret_the_purpose_and_the_session() -> None:
    key = form_key("secret-a")
    token = csrf_token(key, "session", "s1")
    assert token == csrf_token(form_key("secret-a"), "session", "s1")
    assert token != csrf_token(form_key("secret-b"), "session", "s1")
    assert token != csrf_token(key, "signin", "s1")
    assert token != csrf_token(key, "session", "s2")


def test_json_blocks_are_cut_to_their_limit() -> None:
    text, full = json_text({"a": "x" * 100}, limit=50)
    assert len(text) == 50
    assert full > 100
    text, full = json_text({"a": 1}, limit=50)
    assert text == '{\n  "a": 1\n}'
    assert full == len(text)


def test_pages_allow_scripts_and_styles_from_this_origin_only() -> None:
    assert CSP.startswith("default-src 'none'")
    assert "script-src 'self'" in CSP
    assert "unsafe" not in CSP
    assert HEADERS["X-Frame-Options"] == "DENY"
    assert HEADERS["Referrer-Policy"] == "same-origin"
    # the review page keeps its own: no script at all, no referrer (its URL is a token)
    assert "script-src" not in review_html.CSP
    assert review_html.HEADERS["Referrer-Policy"] == "no-referrer"
