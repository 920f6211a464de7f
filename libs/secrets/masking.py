"""Masking credential values in what leaves a node (Heym §2.12): every secret longer than 7
characters found in a string becomes its first 7 characters and `**`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

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
