"""Remote A2A agents Heym calls: the `a2a` node's and an agent's `a2aAgents` configuration,
read and checked (pure; the gateway adds the credential-ownership check on save)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Final, Literal
from urllib.parse import urlsplit

Mode = Literal["blocking", "streaming", "polling"]
AuthHeader = Literal["X-MCP-Key", "Authorization"]

MODES: Final = ("blocking", "streaming", "polling")
AUTH_HEADERS: Final = ("X-MCP-Key", "Authorization")
DEFAULT_TIMEOUT_S: Final = 120.0
MAX_TIMEOUT_S: Final = 900.0
MAX_MESSAGE_CHARS: Final = 100_000
MAX_URL: Final = 2048
MAX_AGENTS: Final = 20
MAX_NAME: Final = 64
MAX_DESCRIPTION: Final = 2000
TOOL_PREFIX: Final = "a2a_"
# Where a base URL's Agent Card is (A2A 1.0 well-known path).
WELL_KNOWN_CARD: Final = "/.well-known/agent-card.json"


@dataclass(frozen=True)
class RemoteAgent:
    """Where a remote A2A agent is and how to call it.

    `url` is the agent's base URL (its card at `/.well-known/agent-card.json`) or the card's
    own URL (ending in `.json`, e.g. a Heym named server's
    `/api/a2a/servers/<id>/agent-card.json`)."""

    url: str
    credential_id: str = ""
    auth_header: AuthHeader = "X-MCP-Key"
    mode: Mode = "blocking"
    timeout_s: float = DEFAULT_TIMEOUT_S
    name: str = ""
    description: str = ""

    def card_location(self) -> tuple[str, str]:
        """(base URL, card path relative to it) as the SDK's card resolver takes them."""
        parts = urlsplit(self.url)
        origin = f"{parts.scheme}://{parts.netloc}"
        path = parts.path.rstrip("/")
        if path.endswith(".json"):
            return origin, path
        return f"{origin}{path}", WELL_KNOWN_CARD

    def origin(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}".lower()

    def as_meta(self) -> dict[str, Any]:
        """The form a work item carries (no secret: the credential travels by id)."""
        return {
            "url": self.url,
            "credentialId": self.credential_id,
            "authHeader": self.auth_header,
            "mode": self.mode,
            "timeoutSeconds": self.timeout_s,
            "name": self.name,
        }


def url_problem(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return "needs agentUrl: the remote agent's http(s) URL"
    url = value.strip()
    if len(url) > MAX_URL or any(c.isspace() for c in url):
        return f"agentUrl must be an http:// or https:// URL (at most {MAX_URL} characters)"
    try:
        parts = urlsplit(url)
        _ = parts.port
    except ValueError:
        return "agentUrl must be an http:// or https:// URL"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "agentUrl must be an http:// or https:// URL"
    if parts.username or parts.password:
        return "agentUrl must not carry credentials: use credentialId"
    if parts.query or parts.fragment:
        return "agentUrl must not have a query or fragment (A2A refuses credentials in the URL)"
    return None


def _timeout_problem(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "timeoutSeconds must be a number"
    if not math.isfinite(value) or value <= 0 or value > MAX_TIMEOUT_S:
        return f"timeoutSeconds must be above 0 and at most {MAX_TIMEOUT_S:g}"
    return None


def config_problems(data: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, message) for each problem with one remote agent's settings."""
    problems: list[tuple[str, str]] = []
    url = url_problem(data.get("agentUrl"))
    if url:
        problems.append(("agentUrl", url))
    cred = data.get("credentialId")
    if cred is not None and cred != "" and not isinstance(cred, str):
        problems.append(("credentialId", "credentialId must be a credential id (a string)"))
    header = data.get("authHeader")
    if header not in (None, "", *AUTH_HEADERS):
        problems.append(("authHeader", f"authHeader must be one of {', '.join(AUTH_HEADERS)}"))
    mode = data.get("mode")
    if mode not in (None, "", *MODES):
        problems.append(("mode", f"mode must be one of {', '.join(MODES)}"))
    timeout = _timeout_problem(data.get("timeoutSeconds"))
    if timeout:
        problems.append(("timeoutSeconds", timeout))
    return problems


def remote_agent(data: dict[str, Any]) -> RemoteAgent:
    """The settings of a checked configuration (defaults for what is unset)."""
    timeout = data.get("timeoutSeconds")
    header = data.get("authHeader")
    mode = data.get("mode")
    return RemoteAgent(
        url=str(data.get("agentUrl") or "").strip(),
        credential_id=str(data.get("credentialId") or "").strip(),
        auth_header=header if header in AUTH_HEADERS else "X-MCP-Key",
        mode=mode if mode in MODES else "blocking",
        timeout_s=(
            min(float(timeout), MAX_TIMEOUT_S)
            if isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0
            else DEFAULT_TIMEOUT_S
        ),
        name=str(data.get("name") or "").strip()[:MAX_NAME],
        description=str(data.get("description") or "").strip()[:MAX_DESCRIPTION],
    )


def from_meta(meta: dict[str, Any]) -> RemoteAgent:
    """The inverse of `RemoteAgent.as_meta` (a work item's `meta["agent"]`)."""
    return remote_agent({**meta, "agentUrl": meta.get("url")})


def tool_name(name: str) -> str:
    return TOOL_PREFIX + (re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "agent")


def agent_list_problems(raw: Any) -> list[str]:
    """Problems with an agent node's `a2aAgents` (each `{name, agentUrl, ...}`)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        return ["a2aAgents must be a list"]
    if len(raw) > MAX_AGENTS:
        return [f"at most {MAX_AGENTS} remote A2A agents"]
    problems: list[str] = []
    seen: set[str] = set()
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict):
            problems.append(f"a2aAgents #{i} is not an object")
            continue
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip() or len(name.strip()) > MAX_NAME:
            problems.append(f"a2aAgents #{i} needs a name (at most {MAX_NAME} characters)")
        else:
            tool = tool_name(name)
            if tool in seen:
                problems.append(f"a2aAgents #{i}: another agent has the tool name {tool!r}")
            seen.add(tool)
        description = entry.get("description")
        if description is not None and not isinstance(description, str):
            problems.append(f"a2aAgents #{i}: description must be a string")
        problems += [f"a2aAgents #{i}: {message}" for _, message in config_problems(entry)]
    return problems


def remote_agents(raw: Any) -> list[RemoteAgent]:
    """The well-formed entries of an agent's `a2aAgents` (malformed ones refused on save)."""
    if not isinstance(raw, list):
        return []
    out = []
    for entry in raw[:MAX_AGENTS]:
        if isinstance(entry, dict) and not config_problems(entry) and entry.get("name"):
            out.append(remote_agent(entry))
    return out
