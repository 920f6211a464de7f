"""Masking of credential values, two ways.

- `Masker` (Heym §2.12): values a workflow deliberately uses (`$credentials`, secret globals)
  are shown in what leaves a node as their first 7 characters and `**`.
- `mask_secrets` / `mask_value` and the log masking: a stored credential that leaks by
  accident (a provider echoing "Incorrect API key provided: <key>") is replaced whole, also
  URL-encoded and JSON-escaped, by `[REDACTED]`. Shape-based redaction (`libs/observability`)
  catches keys that look like keys; this catches a key of any shape by its value. The process
  remembers every credential it decrypts (`remember`), and `install_log_masking` makes every
  log record of the process pass through `mask_known`.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, Final
from urllib.parse import quote

MIN_MASKED_LENGTH: Final = 8


def masked_form(secret: str) -> str:
    return f"{secret[:7]}**"


class Masker:
    """Replaces secrets in JSON-like values (strings, lists, dict values and keys)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        # Longest first, so a secret containing another is replaced whole.
        self._secrets = sorted(
            {s for s in secrets if isinstance(s, str) and len(s) >= MIN_MASKED_LENGTH},
            key=len,
            reverse=True,
        )

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def text(self, value: str) -> str:
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, masked_form(secret))
        return value

    def value(self, value: Any) -> Any:
        if not self._secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {
                (self.text(k) if isinstance(k, str) else k): self.value(v) for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value


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
