"""The assistant's NATS edge inside the agent runtime: the conversation command consumer, the
interrupt subscription, the chat read-model projection and the documentation index.

`install(app, ctx)` is the one line the runtime's composition root calls. The assistant
shares the runtime's process, model client code (`model.py`), context compressor and
credential resolution, and keeps everything else in this package.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

from faststream import FastStream
from nats.aio.msg import Msg

from contracts import subjects
from contracts.base import Envelope
from contracts.catalog import BatchDecodeError
from libs.chat import Conversation
from libs.projection import ProjectionRunner
from libs.secrets import SecretBox
from libs.secrets.credentials import ResolvedCredential, load_credential
from libs.service import ServiceContext
from services.agent_runtime.assistant import conformance as conformance_mode
from services.agent_runtime.assistant.actor import Assistant, Decider
from services.agent_runtime.assistant.domain import Step, decide
from services.agent_runtime.assistant.effects import Effects
from services.agent_runtime.assistant.projection import ChatProjector
from services.agent_runtime.assistant.tools.docs import index_docs
from services.agent_runtime.model import ModelClients

log = logging.getLogger(__name__)

SOURCE_ROOT = Path(__file__).resolve().parents[3]


def install(app: FastStream, ctx: ServiceContext) -> None:
    box = SecretBox.from_setting(ctx.settings.require_secret_key())
    models = ModelClients(timeout_s=ctx.settings.model_timeout_s)
    ctx.on_close(models.close)
    assistant: Assistant | None = None

    async def resolve(credential_id: str, owner_id: str) -> ResolvedCredential | None:
        return await load_credential(ctx.pool, box, credential_id, owner_id)

    def get() -> Assistant:
        nonlocal assistant
        if assistant is None:
            effects = Effects(
                pool=ctx.pool,
                event_log=ctx.event_log,
                nc=ctx.nc,
                models=models,
                resolve=resolve,
                settings=ctx.settings,
            )
            assistant = Assistant(
                ctx.event_log,
                effects,
                deciders(ctx.settings.a2a_conformance),
                on_conflict=lambda conversation: ctx.conflicts.record("chat", conversation),
            )
        return assistant

    async def on_command(envelopes: list[Envelope], msg: Msg) -> None:
        get().deliver(envelopes, msg)
        ctx.details["conversations"] = str(len(get()))

    # Partitioned by conversation: one replica works on a conversation at a time.
    ctx.add_partitioned(purpose="chat", subject=subjects.ALL_CHAT_COMMANDS, handle=on_command)

    async def on_interrupt(msg: Msg) -> None:
        try:
            events = ctx.event_log.codec.decode(msg.data)
        except BatchDecodeError:
            return
        get().interrupt(msg.subject, list(events))

    async def start() -> None:
        sub = await ctx.nc.subscribe(subjects.ALL_CHAT_COMMANDS, cb=on_interrupt)
        runner = ProjectionRunner(ctx.nc, ctx.pool, ChatProjector(), event_log=ctx.event_log)
        projection = asyncio.create_task(runner.run(), name="chat-projection")
        docs = asyncio.create_task(_index(ctx), name="docs-index")

        async def stop() -> None:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
            runner.stop()
            docs.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(projection, 10)

        ctx.on_close(stop)

    app.after_startup(start)


def deciders(conformance: bool) -> Decider:
    """The model-driven decider; in A2A conformance mode, the scripted TCK agent for A2A
    conversations (chosen by configuration, never by what a request says)."""
    if not conformance:
        return decide
    log.warning("A2A conformance mode: A2A conversations are answered by the scripted TCK agent")

    def either(conv: Conversation, now_ms: int) -> Step:
        if conv.source == "a2a":
            return conformance_mode.decide(conv, now_ms)
        return decide(conv, now_ms)

    return either


async def _index(ctx: ServiceContext) -> None:
    try:
        await index_docs(ctx.pool, ctx.settings.docs_dir or SOURCE_ROOT)
    except Exception:
        log.exception("indexing the documentation failed; search_documentation finds nothing")
