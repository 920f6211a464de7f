"""JSON-RPC 2.0 for A2A: the request envelope, typed refusals, and params read in camelCase
or snake_case (ProtoJSON parsers accept both, and the TCK sends snake_case)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from libs.a2a import wire

METHODS: Final = frozenset(
    {
        "SendMessage",
        "SendStreamingMessage",
        "GetTask",
        "ListTasks",
        "CancelTask",
        "SubscribeToTask",
        "GetExtendedAgentCard",
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    }
)
PUSH_METHODS: Final = frozenset(m for m in METHODS if "PushNotification" in m)
STREAMING: Final = frozenset({"SendStreamingMessage", "SubscribeToTask"})
# A2A 0.3 names: this server speaks 1.0 only (VersionNotSupportedError).
V03_METHODS: Final = frozenset(
    {
        "message/send",
        "message/stream",
        "tasks/get",
        "tasks/list",
        "tasks/cancel",
        "tasks/resubscribe",
        "tasks/pushNotificationConfig/set",
        "tasks/pushNotificationConfig/get",
        "tasks/pushNotificationConfig/list",
        "tasks/pushNotificationConfig/delete",
        "agent/getAuthenticatedExtendedCard",
        "agent/authenticatedExtendedCard",
    }
)
V03_MESSAGE: Final = (
    "this server speaks A2A 1.0 only: use SendMessage, SendStreamingMessage, GetTask, "
    "ListTasks, CancelTask, SubscribeToTask or GetExtendedAgentCard with the header "
    "'A2A-Version: 1.0'"
)
_SNAKE = re.compile(r"_([a-z])")


class RpcError(Exception):
    """A refusal answered as a JSON-RPC error (HTTP 200, or `http_status` for auth)."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        metadata: dict[str, str] | None = None,
        http_status: int = 200,
        request_id: Any = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.metadata = metadata
        self.http_status = http_status
        # The id of the request refused (null when it could not be read).
        self.request_id = request_id

    def body(self, request_id: Any) -> dict[str, Any]:
        return {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": wire.error_object(self.code, self.message, self.metadata),
        }


@dataclass(frozen=True)
class Call:
    request_id: Any
    method: str
    params: dict[str, Any]


def camel(key: str) -> str:
    return _SNAKE.sub(lambda m: m.group(1).upper(), key)


def normalised(value: Any, depth: int = 0) -> Any:
    """Params with snake_case keys renamed to camelCase (the camelCase key wins), through
    objects but not into free-form `data`/`metadata` values."""
    if depth > 32 or not isinstance(value, dict | list):
        return value
    if isinstance(value, list):
        return [normalised(v, depth + 1) for v in value]
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = camel(key) if isinstance(key, str) else key
        kept = item if name in ("data", "metadata") else normalised(item, depth + 1)
        if name not in out or name == key:
            out[name] = kept
    return out


def parse(body: bytes) -> Call:
    """The call in `body`, or an `RpcError` (id null when the id cannot be read)."""
    try:
        value = msgspec.json.decode(body)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        raise RpcError(wire.PARSE_ERROR, "Parse error: the body is not valid JSON") from None
    if isinstance(value, list):
        raise RpcError(wire.INVALID_REQUEST, "Invalid Request: batch requests are not supported")
    if not isinstance(value, dict):
        raise RpcError(wire.INVALID_REQUEST, "Invalid Request: expected a JSON-RPC 2.0 object")
    request_id = value.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int | type(None)):
        raise RpcError(
            wire.INVALID_REQUEST, "Invalid Request: id must be a string, a number or null"
        )
    if isinstance(request_id, str) and len(request_id) > 256:
        raise RpcError(wire.INVALID_REQUEST, "Invalid Request: id is longer than 256 characters")
    call_id = request_id
    if value.get("jsonrpc") != "2.0":
        raise _with_id(
            RpcError(wire.INVALID_REQUEST, 'Invalid Request: jsonrpc must be "2.0"'), call_id
        )
    method = value.get("method")
    if not isinstance(method, str) or not method:
        raise _with_id(
            RpcError(wire.INVALID_REQUEST, "Invalid Request: method must be a string"), call_id
        )
    params = value.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise _with_id(
            RpcError(wire.INVALID_PARAMS, "Invalid params: params must be an object"), call_id
        )
    return Call(request_id=call_id, method=method, params=normalised(params))


def _with_id(error: RpcError, request_id: Any) -> RpcError:
    error.request_id = request_id
    return error


def check_method(method: str) -> None:
    if method in V03_METHODS or "/" in method:
        raise RpcError(wire.VERSION_NOT_SUPPORTED, V03_MESSAGE, metadata={"method": method[:100]})
    if method not in METHODS:
        raise RpcError(wire.METHOD_NOT_FOUND, f"Method not found: {method[:100]}")


def check_version(value: str | None) -> None:
    """`A2A-Version` must be 1.0 (a patch number is ignored); missing means 0.3."""
    version = (value or "").strip()
    parts = version.split(".")
    if (
        len(parts) in (2, 3)
        and parts[0] == "1"
        and parts[1] == "0"
        and all(p.isdigit() for p in parts)
    ):
        return
    shown = version or "0.3 (no A2A-Version header)"
    raise RpcError(
        wire.VERSION_NOT_SUPPORTED,
        f"A2A version {shown[:40]!r} is not supported: send the header 'A2A-Version: 1.0'",
        metadata={"supportedVersions": "1.0"},
    )


def result_body(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


# -- params --------------------------------------------------------------------------------
def invalid(message: str, field: str = "") -> RpcError:
    meta = {"field": field} if field else None
    return RpcError(wire.INVALID_PARAMS, f"Invalid params: {message}", metadata=meta)


def opt_str(params: dict[str, Any], name: str, limit: int = 256) -> str | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise invalid(f"{name} must be a string of at most {limit} characters", name)
    return value


def req_str(params: dict[str, Any], name: str, limit: int = 256) -> str:
    value = opt_str(params, name, limit)
    if value is None:
        raise invalid(f"{name} is required", name)
    return value


def opt_int(params: dict[str, Any], name: str, lo: int, hi: int) -> int | None:
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise invalid(f"{name} must be an integer", name)
    if not lo <= int(value) <= hi:
        raise invalid(f"{name} must be between {lo} and {hi}", name)
    return int(value)


def opt_bool(params: dict[str, Any], name: str) -> bool | None:
    value = params.get(name)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise invalid(f"{name} must be a boolean", name)
    return value


def opt_object(params: dict[str, Any], name: str) -> dict[str, Any]:
    value = params.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid(f"{name} must be an object", name)
    return value
