"""`FairScheduler`: a per-replica concurrency limit shared fairly between users.

Every job belongs to a user (the workflow's owner). Jobs wait in one queue per user; a free
slot goes to the next user in round-robin order who has work waiting and is below the per-user
limit. So one user's 70 slow HTTP nodes hold at most `per_user` slots and another user's
quick call starts as soon as any slot frees (or at once, while fewer than `limit` run). Each
running job holds a numbered slot (0 .. limit-1), which the sandbox uses to give concurrent
processes distinct identities.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

Job = Callable[[int], Awaitable[None]]


@dataclass
class _Queued:
    key: str
    job: Job


@dataclass
class _User:
    waiting: deque[_Queued] = field(default_factory=deque)
    running: int = 0


class FairScheduler:
    def __init__(self, name: str, *, limit: int, per_user: int) -> None:
        if limit < 1 or per_user < 1:
            raise ValueError("limits must be at least 1")
        self.name = name
        self.limit = limit
        self.per_user = min(per_user, limit)
        self._users: OrderedDict[str, _User] = OrderedDict()
        self._free_slots = list(range(limit - 1, -1, -1))
        self._tasks: dict[str, asyncio.Task[None]] = {}

    @property
    def running(self) -> int:
        return self.limit - len(self._free_slots)

    @property
    def waiting(self) -> int:
        return sum(len(u.waiting) for u in self._users.values())

    def is_known(self, key: str) -> bool:
        return key in self._tasks or any(
            q.key == key for u in self._users.values() for q in u.waiting
        )

    def submit(self, user: str, key: str, job: Job) -> None:
        """Queue `job` for `user`; it starts when a slot is free and it is the user's turn."""
        if user not in self._users:
            self._users[user] = _User()
            # A user not served lately goes before those served most recently.
            self._users.move_to_end(user, last=False)
        self._users[user].waiting.append(_Queued(key, job))
        self._pump()

    def running_keys(self) -> list[str]:
        return list(self._tasks)

    def cancel(self, key: str) -> bool:
        """Cancel a running job (a waiting one runs and sees its own cancellation)."""
        task = self._tasks.get(key)
        if task is None:
            return False
        task.cancel()
        return True

    async def drain(self, timeout: float) -> None:
        """Wait up to `timeout` for running jobs; waiting jobs are left (they are redelivered)."""
        for user in self._users.values():
            user.waiting.clear()
        if self._tasks:
            await asyncio.wait(list(self._tasks.values()), timeout=timeout)

    def _next_user(self) -> str | None:
        for name, user in self._users.items():
            if user.waiting and user.running < self.per_user:
                return name
        return None

    def _pump(self) -> None:
        while self._free_slots:
            name = self._next_user()
            if name is None:
                return
            user = self._users[name]
            queued = user.waiting.popleft()
            user.running += 1
            # Round robin: the user just served goes to the back of the order.
            self._users.move_to_end(name)
            slot = self._free_slots.pop()
            task = asyncio.create_task(self._run(name, queued, slot), name=f"{self.name}:{name}")
            self._tasks[queued.key] = task

    async def _run(self, name: str, queued: _Queued, slot: int) -> None:
        try:
            await queued.job(slot)
        except asyncio.CancelledError:
            log.info("%s job %s cancelled", self.name, queued.key)
        except Exception:
            log.exception("%s job %s failed", self.name, queued.key)
        finally:
            self._tasks.pop(queued.key, None)
            self._free_slots.append(slot)
            user = self._users.get(name)
            if user is not None:
                user.running -= 1
                if not user.waiting and user.running == 0:
                    del self._users[name]
            self._pump()
