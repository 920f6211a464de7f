"""The MCP approval policy's heuristic pass (Heym §5.2): modes per tool from the policy text."""

from __future__ import annotations

import pytest

from services.agent_runtime.tools.approval import approval_modes

pytestmark = pytest.mark.unit

TOOLS = ["send_email", "read_file", "delete_row"]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("", {"send_email": "never", "read_file": "never", "delete_row": "never"}),
        (
            "Ask before using any MCP tool.",
            {"send_email": "always", "read_file": "always", "delete_row": "always"},
        ),
        (
            "Ask before any MCP tool. read_file is pre-approved.\nAsk only once before delete row.",
            {"send_email": "always", "read_file": "never", "delete_row": "once"},
        ),
        (
            "Sending email requires approval: send_email needs approval every time.",
            {"send_email": "always", "read_file": "never", "delete_row": "never"},
        ),
        (
            "Do not ask before read_file. Human review before send-email.",
            {"send_email": "always", "read_file": "never", "delete_row": "never"},
        ),
    ],
)
def test_modes_from_the_policy(policy: str, expected: dict[str, str]) -> None:
    assert approval_modes(policy, TOOLS) == expected
