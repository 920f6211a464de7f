"""Composition root of the tool_sandbox service: context, consumers, FastStream app."""

from __future__ import annotations

from faststream import FastStream

from libs.config import Settings
from libs.service import ServiceContext
from libs.service.worker import build_app
from services.tool_sandbox import handlers

SERVICE = "tool_sandbox"


def create_app(settings: Settings) -> tuple[FastStream, ServiceContext]:
    ctx = ServiceContext(SERVICE, settings)
    return build_app(ctx, register=handlers.register), ctx
