"""The connection type every database function accepts: a plain connection or a pooled one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    import asyncpg
    from asyncpg.pool import PoolConnectionProxy

    # asyncpg's classes are generic only in its stubs, so the alias exists for type checks only.
    Conn: TypeAlias = asyncpg.Connection[Any] | PoolConnectionProxy[Any]
else:
    Conn = Any
