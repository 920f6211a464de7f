"""The `Settings` struct and `load_settings`: the only place that reads the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import msgspec


class SettingsError(ValueError):
    """An environment variable holds a value Heym cannot use; the message names it."""


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    data_dir: Path = Path(".heym")
    http_host: str = "127.0.0.1"
    http_port: int = 8000
    # None means "start the embedded server" (only `heym up` does that); services need a URL.
    nats_url: str | None = None
    nats_port: int = 4222
    database_url: str | None = None
    admin_api_key: str | None = None
    # URL-safe base64 32-byte key for stored credentials; unset, `heym up` keeps one in
    # <data_dir>/secret.key and passes it to its services.
    secret_key: str | None = None
    log_level: str = "INFO"
    # How long a service waits for in-flight work when asked to stop.
    shutdown_grace_s: float = 10.0
    # How long a synchronous execute waits before answering 202 with the execution id.
    execute_timeout_s: float = 300.0
    # How long one model request may take (Heym: 60 s).
    model_timeout_s: float = 60.0
    # An `http` node's request without `-m` (Heym: 300 s), and the largest response body.
    http_timeout_s: float = 30.0
    http_max_response_bytes: int = 5 * 1024 * 1024
    # Where the assistant's documentation search reads README.md and docs/ (default: the
    # source tree the services run from).
    docs_dir: Path | None = None
    # Host names (besides loopback and HEYM_HTTP_HOST) MCP clients may use: the MCP endpoints
    # refuse other Host/Origin headers (DNS-rebinding protection).
    mcp_allowed_hosts: tuple[str, ...] = ()
    # A2A conformance mode: the A2A server answers with a scripted agent implementing the
    # A2A TCK's scenarios (chosen by configuration only, never by request content), and A2A
    # is on for the administrators from the start. Never for a real deployment.
    a2a_conformance: bool = False
    # Retries of a failed model request (429, 5xx, timeout) inside one agent invocation,
    # before the node's own retry policy applies.
    model_retries: int = 3
    # The sweeper (scheduler): how often it looks for runs that went quiet, and how quiet
    # (seconds since their last event) a run must be before it is re-driven.
    sweep_interval_s: float = 15.0
    sweep_quiet_s: float = 60.0
    # Back-off before a failed message is delivered again (doubling, at most 30 s); after
    # the consumer's last delivery the work is failed with a recorded error.
    redelivery_backoff_s: float = 1.0
    # Human review: how long a review link stays valid (hours; an agent node's
    # `hitlTimeoutHours` overrides it), and the public base of review links (else the base the
    # run's request came from: its Origin or forwarded headers, Heym §5.3).
    review_ttl_h: float = 168.0
    public_url: str | None = None
    # The inspector's web sign-in: how long a session lasts (hours) before signing in again.
    session_ttl_h: float = 12.0
    # Event log limits.
    max_message_bytes: int = 8 * 1024 * 1024
    duplicate_window_s: float = 600.0
    stream_replicas: int = 1
    # Run-partitioned consumers (scheduler, agent runtime): how many partitions the runs are
    # hashed into (fixed for a deployment's life), and the ack wait after which a dead
    # replica's unacknowledged work goes to another replica (held work is kept alive).
    partitions: int = 16
    partition_ack_wait_s: float = 10.0
    # Tool sandbox (per replica): calls in flight, and how many of them one user may hold;
    # skill/Python-tool processes at once, and per user. Fair: users take turns for slots.
    sandbox_concurrency: int = 64
    sandbox_user_concurrency: int = 16
    sandbox_processes: int = 8
    sandbox_user_processes: int = 2
    # bubblewrap: auto (use it where installed), require (refuse to start without), off
    sandbox_bubblewrap: str = "auto"
    # skills: auto (uv run when a skill declares PEP 723 dependencies), uv (always), python
    skill_runner: str = "auto"
    # first of the unprivileged user ids the sandbox gives its processes when run as root
    sandbox_uid_base: int = 61000
    # OpenTelemetry (the seed's `HEYM_OTEL_*` table; `libs/telemetry` reads these). The
    # headers hold exporter credentials: they are sent to the collector and never logged,
    # stored or returned by an API.
    otel_enabled: bool = False
    otel_endpoint: str = ""
    otel_headers: str = ""
    otel_service_name: str = "heym"
    otel_sampler_ratio: float = 1.0
    otel_capture_node_io: bool = False
    otel_metrics_enabled: bool = False
    # How often metrics are exported, and how long finished spans wait to be sent in a batch.
    otel_metrics_interval_s: float = 60.0
    otel_export_delay_ms: int = 5000

    def require_nats(self) -> tuple[str, ...]:
        """The NATS servers (HEYM_NATS_URL is one URL or a comma-separated list of a cluster's)."""
        if not self.nats_url:
            raise SettingsError("HEYM_NATS_URL is not set (`heym up` sets it for its services)")
        return nats_servers(self.nats_url)

    def require_secret_key(self) -> str:
        if not self.secret_key:
            raise SettingsError("HEYM_SECRET_KEY is not set (`heym up` sets it for its services)")
        return self.secret_key

    def require_database(self) -> str:
        if not self.database_url:
            raise SettingsError("HEYM_DATABASE_URL is not set (`heym up` sets it for its services)")
        return self.database_url


def nats_servers(value: str) -> tuple[str, ...]:
    """`nats://a:4222,nats://b:4222` -> each server URL (one is a list of one)."""
    return tuple(u.strip() for u in value.split(",") if u.strip())


def _int(env: Mapping[str, str], name: str, default: int, *, lo: int, hi: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name} must be an integer, got {raw!r}") from None
    if not lo <= value <= hi:
        raise SettingsError(f"{name} must be between {lo} and {hi}, got {value}")
    return value


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a number, got {raw!r}") from None
    if value < 0:
        raise SettingsError(f"{name} must not be negative, got {value}")
    return value


def _positive(env: Mapping[str, str], name: str, default: float) -> float:
    value = _float(env, name, default)
    if value == 0:
        raise SettingsError(f"{name} must be more than 0")
    return value


def _public_url(raw: str | None) -> str | None:
    if raw is None:
        return None
    if not raw.startswith(("http://", "https://")):
        raise SettingsError(f"HEYM_PUBLIC_URL must start with http:// or https://, got {raw!r}")
    return raw.rstrip("/")


def _flag(env: Mapping[str, str], name: str) -> bool:
    raw = (env.get(name) or "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise SettingsError(f"{name} must be 1 or 0, got {raw!r}")


def _choice(env: Mapping[str, str], name: str, allowed: tuple[str, ...]) -> str:
    raw = (env.get(name) or "").strip().lower()
    if not raw:
        return allowed[0]
    if raw not in allowed:
        raise SettingsError(f"{name} must be one of {', '.join(allowed)}, got {raw!r}")
    return raw


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if raw == "":
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{name} must be true or false, got {raw!r}")


def _ratio(env: Mapping[str, str], name: str, default: float) -> float:
    value = _float(env, name, default)
    if value > 1.0:
        raise SettingsError(f"{name} must be between 0.0 and 1.0, got {value}")
    return value


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Read every `HEYM_*` setting once; raise `SettingsError` naming a bad variable."""
    env = os.environ if environ is None else environ

    def text(name: str) -> str | None:
        value = env.get(name, "").strip()
        return value or None

    level = (text("HEYM_LOG_LEVEL") or "INFO").upper()
    if level not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
        raise SettingsError(f"HEYM_LOG_LEVEL must be DEBUG, INFO, WARNING or ERROR, got {level!r}")
    return Settings(
        data_dir=Path(text("HEYM_DATA_DIR") or ".heym"),
        http_host=text("HEYM_HTTP_HOST") or "127.0.0.1",
        http_port=_int(env, "HEYM_HTTP_PORT", 8000, lo=0, hi=65535),
        nats_url=text("HEYM_NATS_URL"),
        nats_port=_int(env, "HEYM_NATS_PORT", 4222, lo=0, hi=65535),
        database_url=text("HEYM_DATABASE_URL"),
        admin_api_key=text("HEYM_ADMIN_API_KEY"),
        secret_key=text("HEYM_SECRET_KEY"),
        log_level=level,
        shutdown_grace_s=_float(env, "HEYM_SHUTDOWN_GRACE_S", 10.0),
        execute_timeout_s=_float(env, "HEYM_EXECUTE_TIMEOUT_S", 300.0),
        model_timeout_s=_float(env, "HEYM_MODEL_TIMEOUT_S", 60.0),
        http_timeout_s=_float(env, "HEYM_HTTP_TIMEOUT_S", 30.0),
        http_max_response_bytes=_int(
            env, "HEYM_HTTP_MAX_RESPONSE_BYTES", 5 * 1024 * 1024, lo=1024, hi=64 * 1024 * 1024
        ),
        model_retries=_int(env, "HEYM_MODEL_RETRIES", 3, lo=0, hi=10),
        redelivery_backoff_s=_float(env, "HEYM_REDELIVERY_BACKOFF_S", 1.0),
        sweep_interval_s=_float(env, "HEYM_SWEEP_INTERVAL_S", 15.0),
        sweep_quiet_s=_float(env, "HEYM_SWEEP_QUIET_S", 60.0),
        max_message_bytes=_int(
            env, "HEYM_MAX_MESSAGE_BYTES", 8 * 1024 * 1024, lo=64 * 1024, hi=64 * 1024 * 1024
        ),
        duplicate_window_s=_float(env, "HEYM_DUPLICATE_WINDOW_S", 600.0),
        review_ttl_h=_positive(env, "HEYM_REVIEW_TTL_H", 168.0),
        public_url=_public_url(text("HEYM_PUBLIC_URL")),
        session_ttl_h=_positive(env, "HEYM_SESSION_TTL_H", 12.0),
        stream_replicas=_int(env, "HEYM_STREAM_REPLICAS", 1, lo=1, hi=5),
        partitions=_int(env, "HEYM_PARTITIONS", 16, lo=1, hi=1024),
        partition_ack_wait_s=_positive(env, "HEYM_PARTITION_ACK_WAIT_S", 10.0),
        sandbox_concurrency=_int(env, "HEYM_SANDBOX_CONCURRENCY", 64, lo=1, hi=4096),
        sandbox_user_concurrency=_int(env, "HEYM_SANDBOX_USER_CONCURRENCY", 16, lo=1, hi=4096),
        sandbox_processes=_int(env, "HEYM_SANDBOX_PROCESSES", 8, lo=1, hi=512),
        sandbox_user_processes=_int(env, "HEYM_SANDBOX_USER_PROCESSES", 2, lo=1, hi=512),
        sandbox_bubblewrap=_choice(env, "HEYM_SANDBOX_BUBBLEWRAP", ("auto", "require", "off")),
        skill_runner=_choice(env, "HEYM_SKILL_RUNNER", ("auto", "uv", "python")),
        sandbox_uid_base=_int(env, "HEYM_SANDBOX_UID_BASE", 61000, lo=1000, hi=2**31 - 70000),
        docs_dir=Path(docs) if (docs := text("HEYM_DOCS_DIR")) else None,
        a2a_conformance=_flag(env, "HEYM_A2A_CONFORMANCE"),
        mcp_allowed_hosts=tuple(
            h.strip() for h in (text("HEYM_MCP_ALLOWED_HOSTS") or "").split(",") if h.strip()
        ),
        otel_enabled=_bool(env, "HEYM_OTEL_ENABLED", False),
        otel_endpoint=text("HEYM_OTEL_EXPORTER_OTLP_ENDPOINT") or "",
        otel_headers=text("HEYM_OTEL_EXPORTER_OTLP_HEADERS") or "",
        otel_service_name=text("HEYM_OTEL_SERVICE_NAME") or "heym",
        otel_sampler_ratio=_ratio(env, "HEYM_OTEL_TRACES_SAMPLER_RATIO", 1.0),
        otel_capture_node_io=_bool(env, "HEYM_OTEL_CAPTURE_NODE_IO", False),
        otel_metrics_enabled=_bool(env, "HEYM_OTEL_METRICS_ENABLED", False),
        otel_metrics_interval_s=_float(env, "HEYM_OTEL_METRICS_INTERVAL_S", 60.0),
        otel_export_delay_ms=_int(env, "HEYM_OTEL_EXPORT_DELAY_MS", 5000, lo=10, hi=60_000),
    )
