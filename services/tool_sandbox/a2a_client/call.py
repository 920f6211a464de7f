"""One call to a remote A2A 1.0 agent with the official a2a-sdk client.

Card discovery, then `SendMessage` (blocking), `SendStreamingMessage` (streaming: each status
update's text is kept as a step) or `SendMessage` with `returnImmediately` (polling); a task
that is not yet terminal or interrupted is polled with `GetTask` until it is. The whole call
is bounded by the agent's `timeout_s` (the remote task is then cancelled, best effort) and by
a response budget. INPUT_REQUIRED and AUTH_REQUIRED are answers (the caller continues the
same task with `task_id`); FAILED, REJECTED and CANCELED raise `RemoteAgentError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientTimeoutError, AgentCardResolutionError
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import A2AError
from google.protobuf.json_format import MessageToDict

from libs.a2a.remote import MAX_MESSAGE_CHARS, RemoteAgent
from services.tool_sandbox.a2a_client.transport import BoundedTransport, OriginKey, ResponseTooLarge

_DONE: Final = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)
_INTERRUPTED: Final = frozenset(
    {TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED}
)
_FAILED: Final = frozenset(
    {TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED}
)
POLL_FIRST_S: Final = 0.1
POLL_MAX_S: Final = 2.0
CANCEL_TIMEOUT_S: Final = 5.0
CONNECT_TIMEOUT_S: Final = 10.0
MAX_STEPS: Final = 200


class RemoteAgentError(Exception):
    """The call failed: unreachable agent, protocol error, budget exceeded, or a task that
    ended FAILED, REJECTED or CANCELED. The message names no secret."""

    # whether trying again may help (a node's retry policy applies): not for a task the remote
    # agent ended, nor for a call that cannot be made as configured
    retryable = True


class BadRemoteCall(RemoteAgentError):
    """The call cannot be made as configured (settings, an empty or too long message)."""

    retryable = False


class RemoteTaskEnded(RemoteAgentError):
    """The remote agent ended the task FAILED, REJECTED or CANCELED."""

    retryable = False


@dataclass(frozen=True)
class Ask:
    """What to send: the text, and optionally the task or context it continues."""

    text: str
    task_id: str = ""
    context_id: str = ""


def _state_name(state: int) -> str:
    return str(TaskState.Name(state)).removeprefix("TASK_STATE_")


def _parts(parts: Any) -> tuple[list[str], list[Any]]:
    texts: list[str] = []
    data: list[Any] = []
    for part in parts:
        kind = part.WhichOneof("content")
        if kind == "text":
            texts.append(part.text)
        elif kind == "data":
            data.append(MessageToDict(part)["data"])
    return texts, data


def _task_output(task: Task, card: AgentCard, steps: list[str]) -> dict[str, Any]:
    texts: list[str] = []
    data: list[Any] = []
    for artifact in task.artifacts:
        t, d = _parts(artifact.parts)
        texts += t
        data += d
    status_text, status_data = _parts(task.status.message.parts)
    interrupted = task.status.state in _INTERRUPTED
    return {
        "state": _state_name(task.status.state),
        "text": "\n".join(status_text if interrupted or not texts else texts),
        "status_message": "\n".join(status_text),
        "data": data + status_data if interrupted else data,
        "input_required": interrupted,
        "task_id": task.id,
        "context_id": task.context_id,
        "artifacts": [MessageToDict(a) for a in task.artifacts],
        "steps": steps,
        "agent": card.name,
    }


def _message_output(message: Message, card: AgentCard) -> dict[str, Any]:
    texts, data = _parts(message.parts)
    return {
        "state": "COMPLETED",
        "text": "\n".join(texts),
        "status_message": "",
        "data": data,
        "input_required": False,
        "task_id": message.task_id,
        "context_id": message.context_id,
        "artifacts": [],
        "steps": [],
        "agent": card.name,
    }


@dataclass
class _Progress:
    """What a call has seen so far (a timeout cancels `task_id`)."""

    task_id: str = ""
    updated: bool = False
    steps: list[str] = field(default_factory=list)


class RemoteCall:
    """Calls remote A2A agents over the sandbox's shared HTTP transport."""

    def __init__(self, transport: httpx.AsyncBaseTransport, *, max_response_bytes: int) -> None:
        self._transport = transport
        self._max_bytes = max_response_bytes

    async def __call__(self, agent: RemoteAgent, ask: Ask, secret: str | None) -> dict[str, Any]:
        if len(ask.text) > MAX_MESSAGE_CHARS:
            raise BadRemoteCall(
                f"the message has {len(ask.text)} characters; at most {MAX_MESSAGE_CHARS}"
            )
        if not ask.text.strip():
            raise BadRemoteCall("the message to the remote agent is empty")
        http = httpx.AsyncClient(
            transport=BoundedTransport(self._transport, self._max_bytes),
            auth=OriginKey(agent.origin(), agent.auth_header, secret) if secret else None,
            timeout=httpx.Timeout(agent.timeout_s, connect=min(CONNECT_TIMEOUT_S, agent.timeout_s)),
            follow_redirects=False,
        )
        where = agent.url
        progress = _Progress(task_id=ask.task_id)
        client: Client | None = None
        try:
            async with asyncio.timeout(agent.timeout_s):
                base, path = agent.card_location()
                card = await A2ACardResolver(http, base).get_agent_card(relative_card_path=path)
                if card.supported_interfaces:
                    where = card.supported_interfaces[0].url
                config = ClientConfig(
                    httpx_client=http,
                    streaming=agent.mode == "streaming",
                    polling=agent.mode == "polling",
                )
                client = ClientFactory(config).create(card)
                return await _exchange(client, card, ask, progress)
        except TimeoutError:
            if client is not None and progress.task_id:
                await _cancel(client, progress.task_id)
            raise RemoteAgentError(
                f"the remote agent at {where} did not finish within {agent.timeout_s:g}s"
                + (f" (task {progress.task_id} was cancelled)" if progress.task_id else "")
            ) from None
        except ResponseTooLarge as exc:
            raise RemoteAgentError(str(exc)) from None
        except AgentCardResolutionError as exc:
            raise RemoteAgentError(f"could not read the Agent Card of {agent.url}: {exc}") from None
        except A2AClientTimeoutError:
            raise RemoteAgentError(f"the remote agent at {where} timed out") from None
        except A2AError as exc:
            raise RemoteAgentError(
                f"the remote agent at {where} answered {type(exc).__name__}: {exc}"
            ) from None
        except (httpx.HTTPError, ValueError) as exc:
            raise RemoteAgentError(f"calling the remote agent at {where} failed: {exc}") from None
        finally:
            await http.aclose()


async def _exchange(
    client: Client, card: AgentCard, ask: Ask, progress: _Progress
) -> dict[str, Any]:
    message = Message(
        message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=ask.text)]
    )
    if ask.task_id:
        message.task_id = ask.task_id
    if ask.context_id:
        message.context_id = ask.context_id
    task: Task | None = None
    async for event in client.send_message(SendMessageRequest(message=message)):
        kind = event.WhichOneof("payload")
        if kind == "message":
            return _message_output(event.message, card)
        if kind == "task":
            task = event.task
            progress.task_id = task.id
        elif kind in ("status_update", "artifact_update"):
            progress.updated = True
            if kind == "status_update":
                texts, _ = _parts(event.status_update.status.message.parts)
                if texts and len(progress.steps) < MAX_STEPS:
                    progress.steps.append(" ".join(texts))
    if task is None:
        raise RemoteAgentError("the remote agent answered with neither a task nor a message")
    delay = POLL_FIRST_S
    while progress.updated or (
        task.status.state not in _DONE and task.status.state not in _INTERRUPTED
    ):
        if not progress.updated:  # a streamed task is read again at once; then polled
            await asyncio.sleep(delay)
            delay = min(delay * 2, POLL_MAX_S)
        progress.updated = False
        task = await client.get_task(GetTaskRequest(id=task.id))
    if task.status.state in _FAILED:
        texts, _ = _parts(task.status.message.parts)
        reason = " ".join(texts) or "no reason given"
        raise RemoteTaskEnded(
            f"the remote agent's task {task.id} ended {_state_name(task.status.state)}: {reason}"
        )
    return _task_output(task, card, progress.steps)


async def _cancel(client: Client, task_id: str) -> None:
    with contextlib.suppress(Exception):
        async with asyncio.timeout(CANCEL_TIMEOUT_S):
            await client.cancel_task(CancelTaskRequest(id=task_id))
