"""Which secrets each service gets: least privilege, so a process that has no use for the
database or the credential key never holds them (and nothing it starts can inherit them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

# Services that read or write Postgres (configuration and read models).
NEEDS_DATABASE: Final = frozenset({"gateway", "scheduler", "agent_runtime", "review"})
# Services that decrypt stored credentials (model keys, MCP headers, `$credentials`; the
# scheduler also answers the tool sandbox's `$credentials` requests for the nodes it runs).
NEEDS_SECRET_KEY: Final = frozenset({"gateway", "scheduler", "agent_runtime"})
# Only `heym up` (and `heym admin create`) use the admin key; no service does.
_NEVER: Final = ("HEYM_ADMIN_API_KEY",)


def service_env(service: str, env: Mapping[str, str]) -> dict[str, str]:
    """`env` without the settings `service` must not hold."""
    out = {k: v for k, v in env.items() if k not in _NEVER}
    if service not in NEEDS_DATABASE:
        out.pop("HEYM_DATABASE_URL", None)
    if service not in NEEDS_SECRET_KEY:
        out.pop("HEYM_SECRET_KEY", None)
    return out
