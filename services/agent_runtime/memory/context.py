"""What an agent run knows from memory when it starts: the prompt blocks and the graphs it
may write afterwards, read from the memory read model (the result is recorded in
`agent.started`, so replays never read the read model again)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import asyncpg

from contracts.memory import MemoryTarget
from libs.memory import read_model
from libs.workflow.agent_fields import memory_enabled
from services.agent_runtime.call import AgentCall
from services.agent_runtime.memory.prompt import graph_markdown, own_block, shared_block


@dataclass
class MemoryPrompt:
    blocks: list[str] = field(default_factory=list)
    targets: list[MemoryTarget] = field(default_factory=list)


class MemoryReader:
    def __init__(self, pool: asyncpg.Pool[Any]) -> None:
        self._pool = pool

    async def prompt(self, call: AgentCall) -> MemoryPrompt:
        out = MemoryPrompt()
        if call.node_type != "agent" or not call.workflow_id:
            return out
        if memory_enabled(call.data):
            out.targets.append(
                MemoryTarget(
                    workflow_id=call.workflow_id,
                    node_id=call.node_id,
                    label=call.node_label,
                    permission="own",
                )
            )
            markdown = await self._markdown(call.workflow_id, call.node_id)
            if markdown:
                out.blocks.append(own_block(markdown))
        shares = await read_model.shared_with(
            self._pool, call.owner_id, call.workflow_id, call.node_id
        )
        for share in shares:
            out.targets.append(
                MemoryTarget(
                    workflow_id=share.workflow_id,
                    node_id=share.node_id,
                    label=share.label,
                    permission="write" if share.permission == "write" else "read",
                )
            )
            markdown = await self._markdown(share.workflow_id, share.node_id)
            if markdown:
                out.blocks.append(shared_block(share.label, share.permission, markdown))
        return out

    async def _markdown(self, workflow_id: str, node_id: str) -> str | None:
        entities, relationships = await read_model.prompt_rows(self._pool, workflow_id, node_id)
        return graph_markdown([dict(r) for r in entities], [dict(r) for r in relationships])
