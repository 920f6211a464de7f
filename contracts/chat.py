"""Chat events: one conversation with the Heym Agent, as an ordered log on its own subjects.

A conversation is an aggregate with two subjects (`contracts/subjects.py`):

- `heym.chat.<conversation>.cmd`  what comes from outside: the conversation's creation and
  edits, user messages (a turn starts or a message is queued), queue edits, cancellation
  (gateway); run ends reported by the scheduler (`run.end_reported`); durable timers (NATS).
- `heym.chat.<conversation>.turn` what the assistant decided and recorded, step by step: a
  turn's prepared prompt, every model round, every tool start and end, compressions, and the
  turn's end. Each step is recorded before it is used, so a restarted runtime continues a turn
  without asking the model again for a recorded round or re-running a recorded tool.

Every append carries the expected last sequence of `heym.chat.<conversation>.>`, so one turn
at a time runs per conversation and a decision made on a stale view is refused. One turn is
one user message and the assistant's work on it (an A2A task); the conversation is the A2A
context.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from contracts.base import Event

ChatSource = Literal["chat", "mcp", "a2a"]
# Heym's `CredentialPromptMode`: the Chat tab asks and creates, the builder applies the
# choices it was given, `heym_chat` turns (MCP) never ask; A2A turns ask through a link to
# Heym's credential page (the value never passes through the calling agent).
CredentialMode = Literal["ask_and_create", "apply_choices", "off", "ask_via_link"]
ChatToolStatus = Literal["success", "error", "pending", "cancelled", "refused", "running"]

MAX_MESSAGE_CHARS: Final = 20_000
MAX_HISTORY_MESSAGES: Final = 25
MAX_ROUNDS: Final = 66
MAX_BUILD_TEST_RUNS: Final = 5


class BuildRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A turn that builds: save, test with real runs, finish only after a passing run."""

    target_workflow_id: str | None = None
    skill_only: bool = False


# -- from outside (`.cmd`) -------------------------------------------------------------------


class ChatConversationStarted(Event, tag="chat.conversation_started", frozen=True):
    conversation_id: str
    owner_id: str
    source: str = "chat"
    title: str = "New Chat"
    # The named MCP server (or later A2A server) the conversation came through, if any.
    server_id: str | None = None
    started_at_ms: int = 0


class ChatConversationEdited(Event, tag="chat.conversation_edited", frozen=True):
    """A rename or a pin; None leaves the field as it was."""

    title: str | None = None
    is_pinned: bool | None = None


class ChatConversationRead(Event, tag="chat.conversation_read", frozen=True):
    """The user has seen the latest reply (`has_unread` goes false)."""

    read_at_ms: int = 0


class ChatConversationDeleted(Event, tag="chat.conversation_deleted", frozen=True):
    deleted_at_ms: int = 0


class ChatMessagePosted(Event, tag="chat.message_posted", frozen=True):
    """A user message. With `starts_turn` it starts a turn at once (the conversation was idle
    when it was posted; the append's expected sequence proves it); otherwise it waits in the
    queue until the running turn ends."""

    message_id: str
    content: str
    credential_id: str = ""
    model: str = ""
    # `{name, kind: text|image|pdf, content}`; an image's data URL stays server-side.
    attachment: dict[str, Any] | None = None
    credential_mode: str = "ask_and_create"
    build: BuildRequest | None = None
    starts_turn: bool = True
    posted_at_ms: int = 0
    timezone: str = "UTC"
    # A2A: the task this message belongs to (a new task names itself: `task_id` ==
    # `message_id`; an answer to INPUT_REQUIRED / AUTH_REQUIRED names the task it continues),
    # and the A2A Message as the client sent it (its messageId, parts, metadata) for the
    # task's history. Empty for messages of other surfaces.
    task_id: str = ""
    a2a_message: dict[str, Any] | None = None
    # Where the user reached Heym (`Origin`, forwarded headers, or the request's base URL):
    # the base of review links in runs the turn starts.
    public_base_url: str = ""


class ChatQueuedMessageEdited(Event, tag="chat.queued_message_edited", frozen=True):
    message_id: str
    content: str


class ChatQueuedMessageDeleted(Event, tag="chat.queued_message_deleted", frozen=True):
    message_id: str


class ChatCancelRequested(Event, tag="chat.cancel_requested", frozen=True):
    """Stop the turn `turn_id` (a stale id changes nothing) and clear the queue."""

    turn_id: str
    reason: str = "cancelled by user"
    requested_at_ms: int = 0
    # A2A `CancelTask`: the task it cancels. A task waiting for input (its turn has ended)
    # is cancelled by this event alone; a running one when its turn ends cancelled.
    task_id: str = ""


class ChatTimerFired(Event, tag="chat.timer_fired", frozen=True):
    """Written by NATS (a scheduled message) when a timer the assistant set comes due."""

    timer_id: str


# -- recorded by the assistant (`.turn`) -----------------------------------------------------


class ChatTurnStarted(Event, tag="chat.turn_started", frozen=True):
    """A turn's prepared prompt: assembled once, recorded, never redone on replay."""

    turn_id: str
    system_prompt: str
    tools: list[str] = msgspec.field(default_factory=list)
    model: str = ""
    credential_id: str = ""
    # The turn's clock reading: the user message's `Date:` line (sent, never stored).
    now_iso: str = ""
    started_at_ms: int = 0


class ChatQueuedMessageStarted(Event, tag="chat.queued_message_started", frozen=True):
    """The next queued message starts its turn (recorded with the previous turn's end)."""

    message_id: str


class ChatRoundRecorded(Event, tag="chat.round", frozen=True):
    """One model response, recorded before any of its tool calls runs."""

    turn_id: str
    round: int
    message: dict[str, Any]
    model: str = ""
    finish_reason: str | None = None
    usage: dict[str, int] = msgspec.field(default_factory=dict)
    elapsed_ms: float = 0.0
    request_messages: int = 0
    context_tokens: int = 0
    context_limit: int = 0
    # The stored (redacted, bounded) copy for the LLM trace.
    trace: dict[str, Any] = msgspec.field(default_factory=dict)


class ChatToolStarted(Event, tag="chat.tool_started", frozen=True):
    """A tool call begins (the step label the user sees); recorded before the tool runs.

    A tool that runs a workflow names its run: the run's request is appended right after
    with a fixed id, and the run's end (`run.end_reported` on `.cmd`) finishes the tool.
    """

    turn_id: str
    round: int
    tool_call_id: str
    name: str
    label: str
    args: dict[str, Any] = msgspec.field(default_factory=dict)
    started_at_ms: int = 0
    run_id: str | None = None
    # A tool that waits sets durable timers (`chat.timer_fired`) with these ids.
    timer_ids: list[str] = msgspec.field(default_factory=list)


class ChatToolChecked(Event, tag="chat.tool_checked", frozen=True):
    """One check of `wait_for_execution_update` (recorded; the next is a durable timer)."""

    turn_id: str
    tool_call_id: str
    attempt: int
    checked_at: str
    status: str
    timer_id: str = ""


class ChatToolFinished(Event, tag="chat.tool_finished", frozen=True):
    """A tool call's result as the model receives it, and what the user is shown."""

    turn_id: str
    tool_call_id: str
    name: str
    result: Any
    status: str
    response_summary: str = ""
    elapsed_ms: float = 0.0
    finished_at_ms: int = 0
    # Further stream events this result causes: `workflow_created`, `verified`, ...
    notices: list[dict[str, Any]] = msgspec.field(default_factory=list)


class ChatContextCompressed(Event, tag="chat.context_compressed", frozen=True):
    turn_id: str
    round: int
    summary: str
    first_user_index: int
    tail_start_index: int
    messages_compressed: int
    messages_before_count: int
    messages_after_count: int
    tokens_before: int
    tokens_after: int
    elapsed_ms: float = 0.0


class ChatArtifactRecorded(Event, tag="chat.artifact", frozen=True):
    """An A2A artifact the turn produced besides its reply (or a chunk of one: `append`
    adds parts to the artifact with the same id; `last_chunk` closes it). `artifact` is the
    A2A 1.0 JSON (`artifactId`, `name`, `parts`)."""

    turn_id: str
    artifact: dict[str, Any]
    append: bool = False
    last_chunk: bool = True


class ChatTurnCompleted(Event, tag="chat.turn_completed", frozen=True):
    """The reply. `text` is what the user reads; `markers` are the hidden workflow markers
    stored with it (how a later "change it" finds the workflow)."""

    turn_id: str
    text: str
    markers: list[str] = msgspec.field(default_factory=list)
    paused_for_clarification: bool = False
    verified: dict[str, Any] | None = None
    finished_at_ms: int = 0
    # A save in this turn needs credentials the user does not have (credential mode
    # `ask_via_link`): `{name, type, node}` each; A2A answers AUTH_REQUIRED with links.
    credentials_needed: list[dict[str, Any]] = msgspec.field(default_factory=list)
    # The reply is a message, not a task (A2A conformance: `tck-message-response`).
    message_only: bool = False


class ChatTurnFailed(Event, tag="chat.turn_failed", frozen=True):
    turn_id: str
    error: str
    partial_text: str = ""
    finished_at_ms: int = 0
    # The agent refused the request (A2A TASK_STATE_REJECTED) rather than failing at it.
    rejected: bool = False


class ChatTurnCancelled(Event, tag="chat.turn_cancelled", frozen=True):
    turn_id: str
    partial_text: str = ""
    reason: str = "cancelled by user"
    finished_at_ms: int = 0


CHAT_COMMAND_EVENTS: tuple[type[Event], ...] = (
    ChatConversationStarted,
    ChatConversationEdited,
    ChatConversationRead,
    ChatConversationDeleted,
    ChatMessagePosted,
    ChatQueuedMessageEdited,
    ChatQueuedMessageDeleted,
    ChatCancelRequested,
    ChatTimerFired,
)

CHAT_TURN_EVENTS: tuple[type[Event], ...] = (
    ChatTurnStarted,
    ChatQueuedMessageStarted,
    ChatRoundRecorded,
    ChatToolStarted,
    ChatToolChecked,
    ChatToolFinished,
    ChatContextCompressed,
    ChatArtifactRecorded,
    ChatTurnCompleted,
    ChatTurnFailed,
    ChatTurnCancelled,
)

CHAT_EVENTS: tuple[type[Event], ...] = CHAT_COMMAND_EVENTS + CHAT_TURN_EVENTS

TurnEnd = ChatTurnCompleted | ChatTurnFailed | ChatTurnCancelled
