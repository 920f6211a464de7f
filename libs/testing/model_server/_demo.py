"""The built-in script used when the process mode is started without `--script`."""

from __future__ import annotations

from libs.testing.model_server._script import Match, Reply, Rule, Script


def demo_script() -> Script:
    """Friendly short answers for the offline demo; offered tools are never called."""
    return Script(
        rules=[
            Rule(
                name="demo-tool-results",
                when=Match(last_is_tool_result=True),
                reply=Reply(text="Here is what I found: {tool_results}"),
            ),
            Rule(
                name="demo-json",
                when=Match(response_format="json_object"),
                reply=Reply(json={"answer": "Hello from the Heym demo model."}),
            ),
            Rule(
                name="demo-text",
                reply=Reply(text="Hello from the Heym demo model! You said: {last_user}"),
            ),
        ]
    )
