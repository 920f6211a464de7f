"""Masking of known secret values: stored credentials never appear in errors, outputs or logs.

Shape-based redaction (`libs/observability`) catches keys that look like keys; a provider
that echoes a key of any shape ("Incorrect API key provided: <key>") needs the value itself.
`mask_secrets(text, values)` replaces each value, also URL-encoded and JSON-escaped, with
`[REDACTED]`. The process remembers every credential it decrypts (`remember`), and
`install_log_masking` makes every log record of the process pass through `mask_known`.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

REDACTED = "[REDACTED]"
# Shorter values would mask ordinary words; real keys are far longer.
MIN_SECRET_LENGTH = 8
_REMEMBERED = 1024


def _forms(value: str) -> set[str]:
    forms = {value, quote(value, safe=""), json.dumps(value, ensure_ascii=False)[1:-1]}
    forms.add(json.dumps(value)[1:-1])
    return {f for f in forms if len(f) >= MIN_SECRET_LENGTH}


def mask_secrets(text: str, values: Iterable[str | None]) -> str:
    """``text`` with every secret in ``values`` (and its encoded forms) replaced."""
    forms: set[str] = set()
    for value in values:
        if value and len(value) >= MIN_SECRET_LENGTH:
            forms |= _forms(value)
    # Longest first, so a value is masked whole before a shorter form inside it.
    for form in sorted(forms, key=len, reverse=True):
        if form in text:
            text = text.replace(form, REDACTED)
    return text


def mask_value(value: Any, values: Iterable[str | None]) -> Any:
    """A copy of JSON-like ``value`` with every string masked."""
    secrets = [v for v in values if v and len(v) >= MIN_SECRET_LENGTH]
    if not secrets:
        return value
    if isinstance(value, str):
        return mask_secrets(value, secrets)
    if isinstance(value, dict):
        return {k: mask_value(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_value(v, secrets) for v in value]
    return value


class _Known:
    """The secret values this process has seen, most recent last (bounded)."""

    def __init__(self) -> None:
        self._values: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, value: str) -> None:
        if len(value) < MIN_SECRET_LENGTH:
            return
        with self._lock:
            self._values[value] = None
            self._values.move_to_end(value)
            while len(self._values) > _REMEMBERED:
                self._values.popitem(last=False)

    def values(self) -> list[str]:
        with self._lock:
            return list(self._values)


_known = _Known()


def remember(value: str) -> None:
    """Remember a secret value (a decrypted credential) so logs of this process mask it."""
    _known.remember(value)


def mask_known(text: str) -> str:
    """``text`` with every remembered secret masked."""
    values = _known.values()
    return mask_secrets(text, values) if values else text


_installed = False


def install_log_masking() -> None:
    """Make every log record's message (and traceback) of this process masked. Idempotent."""
    global _installed
    if _installed:
        return
    _installed = True
    previous = logging.getLogRecordFactory()
    formatter = logging.Formatter()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if not _known.values():
            return record
        record.msg = mask_known(record.getMessage())
        record.args = None
        if record.exc_info and record.exc_info[0] is not None:
            # Formatters use a cached exc_text as it is: cache the masked traceback.
            record.exc_text = mask_known(formatter.formatException(record.exc_info))
        return record

    logging.setLogRecordFactory(factory)
