"""The expression language's vocabulary, read from the registries the evaluator uses (so a
reference built from it, such as the assistant's builder prompt, never drifts from the code)."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from libs.expressions._collections import ARRAY_METHODS, ARRAY_PROPERTIES, OBJECT_METHODS
from libs.expressions._dates import DATE_METHODS, DATE_PROPERTIES, DotDateTime
from libs.expressions._functions import CONDITION_FUNCTIONS, build_functions
from libs.expressions._strings import STRING_METHODS, STRING_PROPERTIES


def vocabulary() -> dict[str, list[str]]:
    """Every callable name by where it applies: top-level functions, methods per value type."""
    functions = build_functions(UTC, random.Random(0), DotDateTime(datetime.now(UTC)))
    return {
        "functions": sorted(functions),
        "condition functions": sorted(CONDITION_FUNCTIONS),
        "string methods": sorted(STRING_METHODS),
        "string properties": sorted(STRING_PROPERTIES),
        "array methods": sorted(ARRAY_METHODS),
        "array properties": sorted(ARRAY_PROPERTIES),
        "object methods": sorted(OBJECT_METHODS),
        "date methods": sorted(DATE_METHODS),
        "date properties": sorted(DATE_PROPERTIES),
    }
