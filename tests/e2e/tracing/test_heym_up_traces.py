"""`heym up` with tracing on: its status table says where spans go, and the example run it
makes at start is one trace across its processes."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from libs.testing.eventually import eventually
from libs.testing.otlp_receiver import OtlpReceiver
from tests.e2e.stack import heym_up
from tests.e2e.tracing.conftest import otel_env

pytestmark = pytest.mark.e2e


async def test_heym_up_shows_where_spans_go_and_traces_its_example(tmp_path: Path) -> None:
    with OtlpReceiver() as receiver:
        env = otel_env(receiver.url, HEYM_OTEL_TRACES_SAMPLER_RATIO="1")
        async with heym_up(tmp_path / "data", "heym_" + uuid.uuid4().hex, env=env) as stack:
            (line,) = [x for x in stack.output if x.startswith("traces")]
            root = await eventually(
                lambda: next(iter(receiver.named("heym.workflow.execute")), None), timeout=30
            )
            await eventually(lambda: len(receiver.trace(root.trace_id)) >= 4, timeout=30)
            spans = receiver.trace(root.trace_id)
    assert f"{receiver.url}/v1/traces" in line
    assert "OTLP/HTTP, sampler ratio 1.0" in line
    assert root.attributes["heym.workflow.name"] == "Hello Heym"
    nodes = [s for s in spans if s.name == "heym.node.execute"]
    assert {s.attributes["heym.node.type"] for s in nodes} == {"textInput", "set", "output"}
    assert all(s.parent_span_id == root.span_id for s in nodes)
