"""Hypothesis profiles for the fuzzing suite: bounded for CI, long behind `task fuzz`.

`HEYM_FUZZ=long` (what `task fuzz` sets) selects the long profile.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# The API fuzzer runs against a system of its own (the e2e fixture, started for this folder).
from tests.e2e.conftest import system

__all__ = ["examples", "system"]

# Per property: the expression properties must hold for 10,000 inputs on every CI run.
CI_EXAMPLES = 10_000
LONG_EXAMPLES = 200_000

settings.register_profile(
    "ci",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile(
    "long",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
LONG = os.environ.get("HEYM_FUZZ") == "long"
settings.load_profile("long" if LONG else "ci")


def examples(ci: int, long: int) -> int:
    """How many examples a property runs: ``ci`` in CI, ``long`` under `task fuzz`."""
    return long if LONG else ci
