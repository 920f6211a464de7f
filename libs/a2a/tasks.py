"""A2A tasks as a pure fold of a conversation's events: one task is one turn (or, when the
agent asks for input or a credential, the turns that answer it on the same task), and the
conversation is the task's context. Nothing about a task is stored anywhere but the log.

`TaskBook.fold(env)` folds one envelope and returns what changed, as stream results
(`statusUpdate` / `artifactUpdate` for each task concerned). `render(task, ...)` is the
task as `GetTask` answers it. Both are shared by the JSON-RPC methods and the SSE streams,
so a stream and a `GetTask` never disagree.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from contracts.base import Envelope
from contracts.chat import (
    ChatArtifactRecorded,
    ChatCancelRequested,
    ChatConversationDeleted,
    ChatMessagePosted,
    ChatQueuedMessageStarted,
    ChatToolFinished,
    ChatToolStarted,
    ChatTurnCancelled,
    ChatTurnCompleted,
    ChatTurnFailed,
    ChatTurnStarted,
)
from libs.a2a import wire
from libs.chat import Conversation, strip_markers

_CLARIFY = re.compile(r"```\s*heym-clarify\s*\n(.*?)```", re.DOTALL | re.IGNORECASE)
MAX_HISTORY = 200


@dataclass
class Task:
    task_id: str
    context_id: str
    created_at: datetime
    state: str = wire.SUBMITTED
    timestamp: datetime = field(default_factory=lambda: datetime.now(UTC))
    status_message: dict[str, Any] | None = None
    turn_ids: list[str] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    artifacts: dict[str, dict[str, Any]] = field(default_factory=dict)
    credentials_needed: list[dict[str, Any]] = field(default_factory=list)
    message_only: bool = False
    reply: dict[str, Any] | None = None
    last_sequence: int = 0

    @property
    def current_turn(self) -> str:
        return self.turn_ids[-1] if self.turn_ids else self.task_id

    @property
    def terminal(self) -> bool:
        return self.state in wire.TERMINAL

    @property
    def interrupted(self) -> bool:
        return self.state in wire.INTERRUPTED


@dataclass(frozen=True)
class Change:
    """One stream result for a task: its status changed, or an artifact (chunk) arrived."""

    task_id: str
    kind: str  # "status" | "artifact"
    artifact: dict[str, Any] | None = None
    append: bool = False
    last_chunk: bool = True


class TaskBook:
    """The A2A tasks of one conversation, folded from its events."""

    def __init__(self, context_id: str) -> None:
        self.context_id = context_id
        self.conversation = Conversation(context_id)
        self.tasks: dict[str, Task] = {}
        self._turn_task: dict[str, str] = {}

    @property
    def owner_id(self) -> str:
        return self.conversation.owner_id

    @property
    def server_id(self) -> str | None:
        created = self.conversation.created
        return created.server_id if created is not None else None

    def task_of_turn(self, turn_id: str) -> Task | None:
        found = self._turn_task.get(turn_id)
        return self.tasks.get(found) if found else None

    def fold_all(self, envelopes: list[Envelope]) -> TaskBook:
        for env in envelopes:
            self.fold(env)
        return self

    def fold(self, env: Envelope) -> list[Change]:
        ev = env.event
        at = env.recorded_at
        before = self.conversation.current
        known = isinstance(ev, ChatMessagePosted) and ev.message_id in self.conversation.messages
        self.conversation.fold(env)
        if isinstance(ev, ChatMessagePosted):
            return [] if known else self._posted(ev, at, env.sequence)
        if isinstance(ev, ChatQueuedMessageStarted | ChatConversationDeleted):
            return []
        if isinstance(ev, ChatCancelRequested):
            return self._cancel(ev, before, at, env.sequence)
        turn_id = str(getattr(ev, "turn_id", "") or "")
        if before is None or before.turn_id != turn_id:
            return []  # the conversation's fold ignores it too (not the running turn)
        task = self.task_of_turn(turn_id)
        if task is None or task.terminal:
            return []
        task.last_sequence = env.sequence
        if isinstance(ev, ChatTurnStarted):
            return self._status(task, wire.WORKING, at, None)
        if isinstance(ev, ChatToolStarted):
            label = ev.label[:-3] if ev.label.endswith("...") else ev.label
            message = self._agent(task, f"{ev.turn_id}-{ev.tool_call_id}", [wire.text_part(label)])
            return self._status(task, wire.WORKING, at, message)
        if isinstance(ev, ChatToolFinished):
            return []
        if isinstance(ev, ChatArtifactRecorded):
            return [self._artifact(task, ev.artifact, append=ev.append, last=ev.last_chunk)]
        if isinstance(ev, ChatTurnCompleted):
            return self._completed(task, ev, at)
        if isinstance(ev, ChatTurnFailed):
            state = wire.REJECTED if ev.rejected else wire.FAILED
            message = self._agent(task, f"{ev.turn_id}-end", [wire.text_part(ev.error)])
            return self._status(task, state, at, message)
        if isinstance(ev, ChatTurnCancelled):
            return self._status(task, wire.CANCELED, at, None)
        return []

    # -- events ----------------------------------------------------------------------------
    def _posted(self, ev: ChatMessagePosted, at: datetime, sequence: int) -> list[Change]:
        if not ev.task_id or ev.message_id in self._turn_task:
            return []
        task = self.tasks.get(ev.task_id)
        if task is None:
            task = Task(task_id=ev.task_id, context_id=self.context_id, created_at=at)
            self.tasks[ev.task_id] = task
        elif task.terminal:
            return []
        task.turn_ids.append(ev.message_id)
        self._turn_task[ev.message_id] = task.task_id
        task.last_sequence = sequence
        task.credentials_needed = []
        task.history.append(self._user(task, ev))
        # A continued task goes back to work; a new one is submitted.
        state = wire.SUBMITTED if len(task.turn_ids) == 1 else wire.WORKING
        return self._status(task, state, at, None)

    def _cancel(
        self, ev: ChatCancelRequested, running: Any, at: datetime, sequence: int
    ) -> list[Change]:
        """A cancel is final at once: the decider always honours it (the running turn is
        interrupted and ends cancelled; a late result is never recorded)."""
        if ev.task_id:
            task = self.tasks.get(ev.task_id)
        elif running is not None and running.turn_id == ev.turn_id:
            task = self.task_of_turn(ev.turn_id)  # the Chat tab's Stop
        else:
            task = None
        if task is None or task.terminal:
            return []
        task.last_sequence = sequence
        return self._status(task, wire.CANCELED, at, None)

    def _completed(self, task: Task, ev: ChatTurnCompleted, at: datetime) -> list[Change]:
        text = strip_markers(ev.text)
        message = self._agent(task, f"{ev.turn_id}-reply", [wire.text_part(text or "")])
        if ev.message_only:
            task.message_only = True
            task.reply = message
            return self._status(task, wire.COMPLETED, at, None)
        if ev.paused_for_clarification:
            asking = [wire.text_part(_without_clarify(text) or text)]
            questions = _questions(ev.text)
            if questions is not None:
                asking.append(wire.data_part({"questions": questions}))
            asked = self._agent(task, f"{ev.turn_id}-reply", asking)
            task.history.append(asked)
            return self._status(task, wire.INPUT_REQUIRED, at, asked)
        if ev.credentials_needed:
            task.credentials_needed = [dict(n) for n in ev.credentials_needed]
            task.history.append(message)
            return self._status(task, wire.AUTH_REQUIRED, at, message)
        changes: list[Change] = []
        if text:
            parts: list[dict[str, Any]] = [wire.text_part(text)]
            links = _workflow_links(self.conversation, ev.turn_id)
            if links:
                parts.append(wire.data_part({"workflows": links}))
            reply = {
                "artifactId": wire.REPLY_ARTIFACT_ID,
                "name": wire.REPLY_ARTIFACT_NAME,
                "parts": parts,
            }
            changes.append(self._artifact(task, reply, append=False, last=True))
            task.history.append(message)
        return changes + self._status(task, wire.COMPLETED, at, None)

    # -- building blocks -------------------------------------------------------------------
    def _status(
        self, task: Task, state: str, at: datetime, message: dict[str, Any] | None
    ) -> list[Change]:
        task.state = state
        task.timestamp = at
        task.status_message = message
        return [Change(task.task_id, "status")]

    def _artifact(
        self, task: Task, artifact: dict[str, Any], *, append: bool, last: bool
    ) -> Change:
        aid = str(artifact.get("artifactId") or f"artifact-{len(task.artifacts) + 1}")
        chunk = {**artifact, "artifactId": aid}
        existing = task.artifacts.get(aid)
        if append and existing is not None:
            merged = dict(existing)
            merged["parts"] = [*existing.get("parts", []), *chunk.get("parts", [])]
            task.artifacts[aid] = merged
        else:
            task.artifacts[aid] = chunk
        return Change(task.task_id, "artifact", artifact=chunk, append=append, last_chunk=last)

    def _agent(self, task: Task, message_id: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
        return wire.agent_message(
            message_id, parts, task_id=task.task_id, context_id=task.context_id
        )

    def _user(self, task: Task, ev: ChatMessagePosted) -> dict[str, Any]:
        sent = ev.a2a_message or {}
        parts = sent.get("parts")
        return {
            "messageId": str(sent.get("messageId") or ev.message_id),
            "role": wire.ROLE_USER,
            "parts": parts if isinstance(parts, list) else [wire.text_part(ev.content)],
            "taskId": task.task_id,
            "contextId": task.context_id,
        }


def _workflow_links(conv: Conversation, turn_id: str) -> list[dict[str, Any]]:
    """The workflows the turn saved (its `workflow_created` notices), newest state per id."""
    turn = conv.turn(turn_id)
    found: dict[str, dict[str, Any]] = {}
    for call in turn.calls() if turn is not None else []:
        for notice in call.finished.notices if call.finished is not None else []:
            kind = notice.get("type")
            wid = str(notice.get("workflow_id") or "")
            if kind in ("workflow_created", "verified") and wid:
                entry = found.setdefault(wid, {"id": wid})
                entry["name"] = str(notice.get("workflow_name") or entry.get("name") or "")
                entry["path"] = str(notice.get("workflow_url") or f"/workflows/{wid}")
                if kind == "verified":
                    entry["verified"] = True
    return list(found.values())


def _questions(text: str) -> list[Any] | None:
    found = _CLARIFY.search(text)
    if found is None:
        return None
    try:
        value = json.loads(found.group(1))
    except ValueError:
        return None
    questions = value.get("questions") if isinstance(value, dict) else None
    return questions if isinstance(questions, list) else None


def _without_clarify(text: str) -> str:
    return _CLARIFY.sub("", text).strip()


def render(
    task: Task,
    *,
    origin: str,
    history_length: int | None = None,
    include_artifacts: bool = True,
) -> dict[str, Any]:
    """The task as `GetTask` answers it. `origin` makes links absolute; `history_length`
    None is all of it (at most 200), 0 none, n the last n messages."""
    out: dict[str, Any] = {
        "id": task.task_id,
        "contextId": task.context_id,
        "status": status(task, origin),
    }
    if include_artifacts and task.artifacts:
        out["artifacts"] = [absolute(a, origin) for a in task.artifacts.values()]
    limit = MAX_HISTORY if history_length is None else min(history_length, MAX_HISTORY)
    if limit > 0 and task.history:
        out["history"] = task.history[-limit:]
    return out


def status(task: Task, origin: str) -> dict[str, Any]:
    out: dict[str, Any] = {"state": task.state, "timestamp": wire.timestamp(task.timestamp)}
    message = task.status_message
    if task.state == wire.AUTH_REQUIRED and message is not None:
        message = auth_message(task, message, origin)
    if message is not None:
        out["message"] = message
    return out


def auth_message(task: Task, message: dict[str, Any], origin: str) -> dict[str, Any]:
    """The AUTH_REQUIRED status: the agent's words, a link per missing credential to Heym's
    credential page (opened in a browser signed in to Heym), and the same as data."""
    needed = [{**n, "create_url": credential_link(origin, n)} for n in task.credentials_needed]
    lines = [f"- {n.get('name') or n.get('type')}: {n['create_url']}" for n in needed]
    note = (
        "Create the missing credential in Heym (open the link in a browser signed in to Heym), "
        "then send a message on this task to continue:\n" + "\n".join(lines)
    )
    parts = [
        *message.get("parts", []),
        wire.text_part(note),
        wire.data_part({"credentials": needed}),
    ]
    return {**message, "parts": parts}


def credential_link(origin: str, need: dict[str, Any]) -> str:
    from urllib.parse import urlencode

    query = {"create": str(need.get("type") or "custom")}
    if need.get("name"):
        query["name"] = str(need["name"])
    return f"{origin}/credentials?{urlencode(query)}"


def absolute(artifact: dict[str, Any], origin: str) -> dict[str, Any]:
    """Workflow links in a reply artifact's data part, made absolute with the caller's origin."""
    parts = artifact.get("parts")
    if not isinstance(parts, list):
        return artifact
    out_parts: list[Any] = []
    for part in parts:
        data = part.get("data") if isinstance(part, dict) else None
        if isinstance(data, dict) and isinstance(data.get("workflows"), list):
            flows = [
                {**{k: v for k, v in w.items() if k != "path"}, "url": origin + str(w["path"])}
                if isinstance(w, dict) and "path" in w
                else w
                for w in data["workflows"]
            ]
            part = {**part, "data": {**data, "workflows": flows}}
        out_parts.append(part)
    return {**artifact, "parts": out_parts}


def stream_result(book: TaskBook, change: Change, *, origin: str) -> dict[str, Any]:
    """One SSE result (`statusUpdate` / `artifactUpdate`) for a change."""
    task = book.tasks[change.task_id]
    if change.kind == "artifact" and change.artifact is not None:
        return {
            "artifactUpdate": {
                "taskId": task.task_id,
                "contextId": task.context_id,
                "artifact": absolute(change.artifact, origin),
                "append": change.append,
                "lastChunk": change.last_chunk,
            }
        }
    return {
        "statusUpdate": {
            "taskId": task.task_id,
            "contextId": task.context_id,
            "status": status(task, origin),
        }
    }
