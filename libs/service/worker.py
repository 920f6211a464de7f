"""A worker service's FastStream app: context open/close around the broker, one work consumer."""

from __future__ import annotations

from collections.abc import Callable

from faststream import FastStream

from libs.service.context import ServiceContext


def build_app(ctx: ServiceContext, *, register: Callable[[ServiceContext], None]) -> FastStream:
    """The composition root shared by the NATS-only services: handlers first, then lifecycle."""
    register(ctx)
    return FastStream(
        ctx.broker,
        on_startup=[ctx.open],
        after_startup=[ctx.start_consumers, ctx.ready],
        on_shutdown=[ctx.close],
    )
