"""Heym's result shapes (NodeResult rows, SSE frames) from run events; shared by the gateway's
responses and streams and by the execution-history projection, so all three agree."""

from libs.results.shapes import (
    node_result,
    numbered,
    retry_result,
    sse_frames,
    strip_private,
)

__all__ = ["node_result", "numbered", "retry_result", "sse_frames", "strip_private"]
