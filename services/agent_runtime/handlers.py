"""The agent runtime's NATS edge: two thin consumers.

- `agent_runtime-work` on `heym.run.*.sched.agent_runtime`: the scheduler dispatches an agent
  or llm node; the runtime records the invocation's request as the first event of its own
  aggregate (`agent.requested` on `heym.agent.<run>.<invocation>`) and acknowledges.
- `agent_runtime-agents` on `heym.agent.>`: every event of every agent invocation (its
  request, a child's result, a cancel, a nudge, and its own steps coming back) goes to the
  invocation's actor, which decides and performs the next steps (`actors.py`). Partitioned
  by run (`libs/service/partitioned.py`): a run's invocations are on one replica at a time.
- `agent_runtime-extraction` on `heym.work.*.agent_runtime.*`: memory extraction work items
  (`memory/consumer.py`).
"""

from __future__ import annotations

from nats.aio.msg import Msg

from contracts import subjects
from contracts.agents import AgentRequested, SubAgentDispatched
from contracts.base import Envelope
from contracts.nodes import NodeDispatched
from contracts.tools import MCP_CONNECTION_SUBJECT, TOOL_CREDENTIAL_SUBJECT
from libs.secrets import SecretBox
from libs.secrets.credentials import ResolvedCredential, load_credential
from libs.service import ServiceContext
from libs.service.failures import fail_dispatches
from libs.service.work import WorkConsumer
from libs.tools import connection_query, credential_query
from libs.tools.agent_tools import AgentToolSource
from services.agent_runtime.actors import InvocationRegistry
from services.agent_runtime.effects import Effects
from services.agent_runtime.memory import consumer as memory_consumer
from services.agent_runtime.memory.context import MemoryReader
from services.agent_runtime.model import ModelClients
from services.agent_runtime.steps import Services

# A crashed runtime's step is redelivered after ack_wait; running steps are kept alive.
ACK_WAIT_S = 10.0
MAX_DELIVER = 5


def agent_request(ev: NodeDispatched) -> AgentRequested:
    return AgentRequested(
        invocation_id=ev.invocation_id,
        node_id=ev.node_id,
        node_label=ev.node_label,
        node_type=ev.node_type,
        node=ev.node,
        inputs=ev.inputs,
        upstream=ev.upstream,
        vars=ev.vars,
        attempt=ev.attempt,
        dispatched_at_ms=ev.dispatched_at_ms,
        timezone=ev.timezone,
        workflow_id=ev.workflow_id,
        owner_id=ev.owner_id,
        depth=ev.depth,
        test_run=ev.test_run,
        workflow=ev.workflow,
        sub_workflows=ev.sub_workflows,
        trigger_source=ev.trigger_source,
        globals=ev.globals,
        review_branch=ev.review_branch,
    )


def register(ctx: ServiceContext) -> None:
    box = SecretBox.from_setting(ctx.settings.require_secret_key())
    models = ModelClients(timeout_s=ctx.settings.model_timeout_s)
    ctx.on_close(models.close)
    registry: InvocationRegistry | None = None

    async def resolve(credential_id: str, owner_id: str) -> ResolvedCredential | None:
        return await load_credential(ctx.pool, box, credential_id, owner_id)

    async def mcp_connection(msg: Msg) -> None:
        # the tool sandbox holds no database URL and no secret key: it asks here
        await msg.respond(await connection_query.answer(ctx.pool, box, msg.data))

    ctx.add_responder(MCP_CONNECTION_SUBJECT, mcp_connection)

    async def tool_credential(msg: Msg) -> None:
        # a remote A2A agent's key for a work item the sandbox runs (checked against the log)
        await msg.respond(await credential_query.answer(ctx.event_log, ctx.pool, box, msg.data))

    ctx.add_responder(TOOL_CREDENTIAL_SUBJECT, tool_credential)

    def get_registry() -> InvocationRegistry:
        nonlocal registry
        if registry is None:
            services = Services(
                models=models,
                resolve=resolve,
                effects=Effects(ctx.event_log),
                tools=AgentToolSource(ctx.pool, ctx.nc),
                memory=MemoryReader(ctx.pool),
            )
            registry = InvocationRegistry(
                ctx.event_log,
                services,
                max_deliver=MAX_DELIVER,
                model_attempts=ctx.settings.model_retries + 1,
                backoff_s=ctx.settings.redelivery_backoff_s,
                on_conflict=lambda subject: ctx.conflicts.record("agent", subject),
            )
        return registry

    async def on_dispatch(envelopes: list[Envelope], msg: Msg) -> None:
        for env in envelopes:
            ev = env.event
            if isinstance(ev, NodeDispatched) and ev.service == ctx.service:
                request: AgentRequested | SubAgentDispatched = agent_request(ev)
                invocation = ev.invocation_id
            elif isinstance(ev, SubAgentDispatched):
                request, invocation = ev, ev.invocation_id  # written here by earlier builds
            else:
                continue
            # No expected sequence: a cancel may have reached the aggregate first (the fold
            # takes the first request; the message id makes a re-sent one a duplicate).
            await ctx.event_log.append(
                subjects.agent(env.run_id, invocation),
                [request],
                message_id=f"agent-{env.run_id}-{invocation}",
                causation_id=env.event_id,
                correlation_id=env.correlation_id or env.run_id,
                traceparent=env.traceparent,
            )

    async def dispatch_poisoned(envelopes: list[Envelope] | None, subject: str, why: str) -> None:
        await fail_dispatches(ctx.event_log, envelopes, why)

    async def agent_event_poisoned(
        envelopes: list[Envelope] | None, subject: str, why: str
    ) -> None:
        await get_registry().fail(subject, f"a message for this agent cannot be handled: {why}")

    async def on_agent_event(envelopes: list[Envelope], msg: Msg) -> None:
        reg = get_registry()
        reg.deliver(envelopes, msg)
        ctx.details["active_invocations"] = str(len(reg))

    ctx.add_consumer(
        WorkConsumer(
            service=ctx.service,
            purpose="work",
            subject=subjects.work_for(ctx.service),
            handle=on_dispatch,
            max_workers=32,
            ack_wait_s=ACK_WAIT_S,
            on_poison=dispatch_poisoned,
        )
    )
    ctx.add_partitioned(
        purpose="agents",
        subject=subjects.AGENT_KEYED,
        handle=on_agent_event,
        max_deliver=MAX_DELIVER,
        on_poison=agent_event_poisoned,
        on_acquired=lambda p, n: get_registry().forget_partition(p, n),
    )
    memory_consumer.register(ctx, models, resolve)
