"""A bounded replay cache: each request is accepted once within its credential's lifetime.

The key is the intake's :func:`agents.auth.credentials.replay_key` (the request id and the
value's digest), not the id alone: two different requests may carry the same id.
"""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["ReplayCache"]


class ReplayCache:
    """Request keys seen, with the time (s) their credential expires; oldest evicted past
    ``size``.

    ``first_sight(key, expires, position)`` is True for a new key, and again for the same key
    at the same position (a redelivery of the same Kafka record after a crash is not a replay).
    """

    def __init__(self, size: int = 200_000) -> None:
        self.size = size
        self._seen: OrderedDict[str | bytes, tuple[float, str]] = OrderedDict()

    def first_sight(self, key: str | bytes, expires_s: float, now_s: float,
                    position: str) -> bool:
        """Record ``key``; False when it was seen before at another position."""
        self._expire(now_s)
        known = self._seen.get(key)
        if known is not None and known[0] > now_s:
            return known[1] == position
        self._seen[key] = (expires_s, position)
        while len(self._seen) > self.size:
            self._seen.popitem(last=False)
        return True

    def _expire(self, now_s: float) -> None:
        while self._seen:
            key, (expires_s, _) = next(iter(self._seen.items()))
            if expires_s > now_s:
                return
            del self._seen[key]

    def __len__(self) -> int:
        return len(self._seen)
