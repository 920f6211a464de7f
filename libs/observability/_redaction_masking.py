"""Which keys hold secrets, and masking of credentials embedded in free text."""

from __future__ import annotations

import functools
import re

REDACTED = "[REDACTED]"

_SENSITIVE_NAMES = frozenset(
    {
        "api_key",
        "apikey",
        "authorization",
        "proxy_authorization",
        "cookie",
        "set_cookie",
        "password",
        "passwd",
        "secret",
        "private_key",
        "access_token",
        "refresh_token",
        "client_secret",
        "token",
    }
)
# Suffixes name a secret ("github_token", "webhook_secret", "openai_api_key"); the plural
# "_tokens" is deliberately absent because prompt_tokens / max_tokens are counters.
_SENSITIVE_SUFFIXES = ("_token", "_secret", "_password", "_passwd", "_api_key", "_apikey")
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[\s.\-]+")


def normalize_key(key: str) -> str:
    """`X-Api-Key`, `apiKey` and `api key` all become `x_api_key` / `api_key`."""
    return _SEPARATORS.sub("_", _CAMEL_BOUNDARY.sub("_", key).lower().strip())


def is_sensitive_key(key: object) -> bool:
    name = normalize_key(str(key))
    return name in _SENSITIVE_NAMES or name.endswith(_SENSITIVE_SUFFIXES)


# Key names recognised inside text, as `name: value` / `name=value` / `"name": "value"`.
_KEY_NAMES = (
    r"(?:x[_-]?)?api[_-]?key|authorization|proxy[_-]authorization|set[_-]cookie|cookie"
    r"|passw(?:or)?d|client[_-]?secret|private[_-]?key|access[_-]?token|refresh[_-]?token"
    r"|secret|token|[a-z0-9]+(?:[_-][a-z0-9]+)*[_-](?:token|secret|passw(?:or)?d|api[_-]?key)"
)
# The value may be quoted (also JSON-escaped quotes inside a JSON string) or bare; an
# authorization value keeps its scheme word with it so the credential goes too.
_KEY_VALUE = re.compile(
    r"(?P<lead>(?<![\w-])(?P<q>\\?[\"']?)(?:" + _KEY_NAMES + r")(?P=q)\s*[:=]\s*)"
    r"(?P<value>\\?\"(?:[^\"\\]|\\[^\"])*\\?\"|'[^']*'"
    r"|(?:(?:bearer|basic|token)\s+)?[^\s,;&}\]\"'\\]+)",
    re.IGNORECASE,
)
_AUTH_SCHEME = re.compile(
    r"\b(?P<scheme>bearer|basic)\s+(?P<credential>[A-Za-z0-9\-._~+/]{8,}=*)", re.IGNORECASE
)
_PEM_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?P<kind>[A-Z0-9 ]*)PRIVATE KEY-----.*?(?:-----END (?P=kind)PRIVATE KEY-----|\Z)",
    re.DOTALL,
)
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
# Well-known provider key shapes: OpenAI / Anthropic (sk-...), Stripe, GitHub, Slack, AWS,
# Google. Matched anywhere so a key pasted into prose is caught without a `key:` label.
_API_KEY_SHAPES = re.compile(
    r"\b(?:sk-[A-Za-z0-9_\-]{16,}"
    r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"
    r"|xox[abprs]-[A-Za-z0-9\-]{10,}"
    r"|AKIA[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_\-]{35})"
)


def _mask_value(match: re.Match[str]) -> str:
    value = match.group("value")
    # Keep the quoting so JSON text stays well-formed after masking.
    for quote in ('\\"', '"', "'"):
        if len(value) >= 2 * len(quote) and value.startswith(quote) and value.endswith(quote):
            return f"{match.group('lead')}{quote}{REDACTED}{quote}"
    return f"{match.group('lead')}{REDACTED}"


def _mask_credential(match: re.Match[str]) -> str:
    credential = match.group("credential")
    # Prose such as "basic authentication" is left alone: real credentials carry digits,
    # base64/token punctuation, or mixed case after the first character.
    tail = credential[1:]
    looks_random = any(c.isdigit() or c in "+/=_-.~" for c in credential) or (
        any(c.isupper() for c in tail) and any(c.islower() for c in tail)
    )
    return f"{match.group('scheme')} {REDACTED}" if looks_random else match.group(0)


# Long texts recur (an assistant's system prompt is sent with every model round and traced
# each time): they are masked once and remembered. The cache holds at most this many.
_CACHED_MIN_CHARS = 1024
_CACHED_TEXTS = 64


def mask_text(text: str) -> str:
    """Mask credentials inside free text; the cheap containment checks skip the regexes for
    the common case of text that cannot contain a match."""
    if len(text) >= _CACHED_MIN_CHARS:
        return _mask_long(text)
    return _mask(text)


@functools.lru_cache(maxsize=_CACHED_TEXTS)
def _mask_long(text: str) -> str:
    return _mask(text)


def _mask(text: str) -> str:
    if "PRIVATE KEY-----" in text:
        text = _PEM_PRIVATE_KEY.sub("[REDACTED PRIVATE KEY]", text)
    if ":" in text or "=" in text:
        text = _KEY_VALUE.sub(_mask_value, text)
    text = _AUTH_SCHEME.sub(_mask_credential, text)
    if "eyJ" in text:
        text = _JWT.sub(REDACTED, text)
    return _API_KEY_SHAPES.sub(REDACTED, text)
