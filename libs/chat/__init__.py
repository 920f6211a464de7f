"""A conversation with the Heym Agent, read the same way everywhere: the fold and its frames."""

from libs.chat.conversation import (
    DEFAULT_TITLE,
    Conversation,
    Round,
    ToolCall,
    Turn,
    fallback_title,
    fold_all,
    parse_arguments,
)
from libs.chat.frames import (
    assistant_message_id,
    display_args,
    queued_message,
    step,
    stored_text,
    strip_markers,
    workflow_marker,
)

__all__ = [
    "DEFAULT_TITLE",
    "Conversation",
    "Round",
    "ToolCall",
    "Turn",
    "assistant_message_id",
    "display_args",
    "fallback_title",
    "fold_all",
    "parse_arguments",
    "queued_message",
    "step",
    "stored_text",
    "strip_markers",
    "workflow_marker",
]
