"""A bounded replay cache: each request id is accepted once within its credential's lifetime."""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["ReplayCache"]


class ReplayCache:
    """Request ids seen, with the time (s) their credential expires; oldest evicted past ``size``.

    ``first_sight(id, expires, position)`` is True for a new id, and again for the same id at
    the same position (a redelivery of the same Kafka record after a crash is not a replay).
    """

    def __init__(self, size: int = 200_000) -> None:
        self.size = size
        self._seen: OrderedDict[str, tuple[float, str]] = OrderedDict()

    def first_sight(self, request_id: str, expires_s: float, now_s: float, position: str) -> bool:
        """Record ``request_id``; False when it was seen before at another position."""
        self._expire(now_s)
        known = self._seen.get(request_id)
        if known is not None and known[0] > now_s:
            return known[1] == position
        self._seen[request_id] = (expires_s, position)
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
