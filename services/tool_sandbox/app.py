"""Composition root of the tool_sandbox service: context, consumers, FastStream app."""

from __future__ import annotations

from faststream import FastStream

from libs.config import Settings
from libs.service import ServiceContext
from libs.service.worker import build_app
from services.tool_sandbox import handlers

SERVICE = "tool_sandbox"


def create_app(settings: Settings) -> tuple[FastStream, ServiceContext]:
    # The sandbox runs user code and talks to untrusted servers: it holds no database URL and
    # no secret key (it needs neither), so nothing it starts can inherit them.
    ctx = ServiceContext(SERVICE, settings, needs_database=False)
    return build_app(ctx, register=handlers.register), ctx
