"""The span pipeline of a process with tracing on: finished spans built as the SDK's
`ReadableSpan` records, handed to the bounded batch processor and exported over OTLP/HTTP.

Spans here are records written after the fact from the log (their ids derived, their times
recorded), never live spans: building the SDK's record directly costs about 1 µs where a
`Tracer.start_span`/`end` round trip (sampler, id generator, bounded attribute dict, locks)
costs about 35 µs, measured; the sampling decision is the SDK's parent-based ratio sampler,
taken once per run (`runtime.new_run_context`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from libs.telemetry.context import TraceContext

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_UNSET = Status(StatusCode.UNSET)
_KINDS = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT, "server": SpanKind.SERVER}


class _Resource(Resource):
    """A resource that hashes once: the OTLP encoder groups every span of a batch by its
    resource, and `Resource.__hash__` serialises the attributes to JSON on each call."""

    def __init__(self, resource: Resource) -> None:
        super().__init__(resource.attributes, resource.schema_url)
        self._hash = super().__hash__()

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return other is self or super().__eq__(other)


class Pipeline:
    def __init__(self, processor: SpanProcessor, resource: Resource) -> None:
        self.processor = processor
        self.resource = _Resource(resource)
        self.scope = InstrumentationScope("heym", "0.1.0")
        self._parents: dict[tuple[int, int, bool], SpanContext] = {}

    def write(
        self,
        name: str,
        ctx: TraceContext,
        parent_span_id: int | None,
        *,
        start_ns: int,
        end_ns: int,
        attributes: Mapping[str, Any],
        error: str | None,
        links: Sequence[TraceContext],
        kind: str,
        remote_parent: bool,
    ) -> None:
        parent = None
        if parent_span_id is not None:
            parent = self._parent(ctx.trace_id, parent_span_id, remote_parent)
        span = ReadableSpan(
            name,
            SpanContext(ctx.trace_id, ctx.span_id, False, _SAMPLED),
            parent,
            self.resource,
            {k: v for k, v in attributes.items() if v is not None},
            (),
            tuple(Link(SpanContext(x.trace_id, x.span_id, True, _SAMPLED)) for x in links),
            _KINDS[kind],
            status=_UNSET if error is None else Status(StatusCode.ERROR, error[:512]),
            start_time=start_ns,
            end_time=max(end_ns, start_ns),
            instrumentation_scope=self.scope,
        )
        self.processor.on_end(span)

    def _parent(self, trace_id: int, span_id: int, remote: bool) -> SpanContext:
        """Parents are shared (a run's node spans all name its run span): the spans waiting
        in the queue then hold fewer objects for the garbage collector to go through."""
        key = (trace_id, span_id, remote)
        found = self._parents.get(key)
        if found is None:
            if len(self._parents) >= 4096:
                self._parents.clear()
            found = self._parents[key] = SpanContext(trace_id, span_id, remote, _SAMPLED)
        return found

    def shutdown(self) -> None:
        self.processor.shutdown()
