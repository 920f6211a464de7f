"""What a pure node evaluation produced: an output, or a failure (retryable or not)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Outcome:
    output: Any = None
    error: str | None = None
    # throwError and misconfiguration are final: retrying cannot change the result.
    retryable: bool = True
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def fail(cls, message: str, *, retryable: bool = True, output: Any = None) -> Outcome:
        return cls(output=output, error=message, retryable=retryable)
