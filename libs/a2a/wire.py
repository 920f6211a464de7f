"""A2A 1.0 on the wire (JSON-RPC binding): task states, roles, parts, timestamps, error codes.

Plain JSON values (ProtoJSON: camelCase fields, enum strings, `Z` timestamps with
milliseconds); the server builds and reads them, the a2a-sdk client parses them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

PROTOCOL_VERSION: Final = "1.0"

SUBMITTED: Final = "TASK_STATE_SUBMITTED"
WORKING: Final = "TASK_STATE_WORKING"
COMPLETED: Final = "TASK_STATE_COMPLETED"
FAILED: Final = "TASK_STATE_FAILED"
CANCELED: Final = "TASK_STATE_CANCELED"
REJECTED: Final = "TASK_STATE_REJECTED"
INPUT_REQUIRED: Final = "TASK_STATE_INPUT_REQUIRED"
AUTH_REQUIRED: Final = "TASK_STATE_AUTH_REQUIRED"

STATES: Final = (
    SUBMITTED,
    WORKING,
    COMPLETED,
    FAILED,
    CANCELED,
    REJECTED,
    INPUT_REQUIRED,
    AUTH_REQUIRED,
)
TERMINAL: Final = frozenset({COMPLETED, FAILED, CANCELED, REJECTED})
INTERRUPTED: Final = frozenset({INPUT_REQUIRED, AUTH_REQUIRED})

ROLE_USER: Final = "ROLE_USER"
ROLE_AGENT: Final = "ROLE_AGENT"

REPLY_ARTIFACT_ID: Final = "response"
REPLY_ARTIFACT_NAME: Final = "Heym Agent reply"

# JSON-RPC and A2A error codes (A2A 1.0 §9.4) with their `google.rpc.ErrorInfo` reasons.
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
TASK_NOT_FOUND: Final = -32001
TASK_NOT_CANCELABLE: Final = -32002
PUSH_NOT_SUPPORTED: Final = -32003
UNSUPPORTED_OPERATION: Final = -32004
CONTENT_TYPE_NOT_SUPPORTED: Final = -32005
VERSION_NOT_SUPPORTED: Final = -32009
# A2A leaves -32000 free: authentication and authorisation failures.
AUTH_ERROR: Final = -32000

REASONS: Final[dict[int, str]] = {
    INVALID_REQUEST: "INVALID_REQUEST",
    METHOD_NOT_FOUND: "METHOD_NOT_FOUND",
    INVALID_PARAMS: "INVALID_PARAMS",
    INTERNAL_ERROR: "INTERNAL",
    TASK_NOT_FOUND: "TASK_NOT_FOUND",
    TASK_NOT_CANCELABLE: "TASK_NOT_CANCELABLE",
    PUSH_NOT_SUPPORTED: "PUSH_NOTIFICATION_NOT_SUPPORTED",
    UNSUPPORTED_OPERATION: "UNSUPPORTED_OPERATION",
    CONTENT_TYPE_NOT_SUPPORTED: "CONTENT_TYPE_NOT_SUPPORTED",
    VERSION_NOT_SUPPORTED: "VERSION_NOT_SUPPORTED",
    AUTH_ERROR: "UNAUTHENTICATED",
}
ERROR_INFO_TYPE: Final = "type.googleapis.com/google.rpc.ErrorInfo"
ERROR_DOMAIN: Final = "a2a-protocol.org"


def timestamp(at: datetime) -> str:
    """ISO 8601 UTC with milliseconds and a `Z` (the SDK refuses a time without a zone)."""
    return at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_timestamp(value: str) -> datetime | None:
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def text_part(text: str) -> dict[str, Any]:
    return {"text": text}


def data_part(data: dict[str, Any]) -> dict[str, Any]:
    return {"data": data, "mediaType": "application/json"}


def agent_message(
    message_id: str, parts: list[dict[str, Any]], *, task_id: str, context_id: str
) -> dict[str, Any]:
    return {
        "messageId": message_id,
        "role": ROLE_AGENT,
        "parts": parts,
        "taskId": task_id,
        "contextId": context_id,
    }


def error_object(code: int, message: str, metadata: dict[str, str] | None = None) -> dict[str, Any]:
    """A JSON-RPC error with a `google.rpc.ErrorInfo` in `data` (none for a parse error)."""
    error: dict[str, Any] = {"code": code, "message": message}
    reason = REASONS.get(code)
    if reason is not None:
        error["data"] = [
            {
                "@type": ERROR_INFO_TYPE,
                "reason": reason,
                "domain": ERROR_DOMAIN,
                "metadata": metadata or {},
            }
        ]
    return error
