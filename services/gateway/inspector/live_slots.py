"""How many live streams (Debug panels) each user holds on this gateway replica: each is a
NATS consumer for as long as the tab stays open, so one user's tabs must not hold them all."""

from __future__ import annotations

from collections import Counter

PER_USER = 8


class LiveSlots:
    def __init__(self, per_user: int = PER_USER) -> None:
        self.per_user = per_user
        self._held: Counter[str] = Counter()

    def take(self, user_id: str) -> bool:
        """A slot for one more stream of this user, if they have fewer than the limit."""
        if self._held[user_id] >= self.per_user:
            return False
        self._held[user_id] += 1
        return True

    def give_back(self, user_id: str) -> None:
        self._held[user_id] -= 1
        if self._held[user_id] <= 0:
            del self._held[user_id]
