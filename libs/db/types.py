"""The connection type every database function accepts: a plain connection or a pooled one."""

from __future__ import annotations

from typing import Any, TypeAlias

import asyncpg
from asyncpg.pool import PoolConnectionProxy

Conn: TypeAlias = asyncpg.Connection[Any] | PoolConnectionProxy[Any]
