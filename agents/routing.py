"""Which shard (shard-inbox partition) a request belongs to.

A shard is a set of nodes decided atomically. With one shard (the default) everything goes to
partition 0. With several, the shard map (``ShardMap=`` in the system configuration
``/etc/sluice/sluice.conf``, or ``SLUICE_SHARD_MAP``) says where partitions and nodes live, as a
comma-separated list of ``partition:NAME=SHARD`` and ``node:PREFIX=SHARD`` (a node whose name
starts with PREFIX); anything unmapped belongs to shard 0. Requests addressed to a job by SLUID
alone (cancel, hold, release, update, exit reports) are sent to every shard: the shards that do
not know the job ignore them, which is cheaper than a routing table that could go stale.
"""

from __future__ import annotations

from typing import Any

from schemas.digits import INT_DIGITS, ascii_whole
from streams.settings import Settings

__all__ = ["ShardRouter"]

_BY_PARTITION = {"SubmitJob", "TestSubmitJob"}  # a test is decided where the job would be
_BY_NODE = {"RegisterNode", "DrainNode", "ResumeNode"}


class ShardRouter:
    """Maps a decoded request to the shard indexes that must see it."""

    def __init__(self, settings: Settings, shard_map: str | None = None) -> None:
        self.shards = settings.shards
        text = settings.shard_map if shard_map is None else shard_map
        self._partitions: dict[str, int] = {}
        self._node_prefixes: list[tuple[str, int]] = []
        for item in filter(None, (part.strip() for part in text.split(","))):
            kind, _, rest = item.partition(":")
            name, _, index = rest.partition("=")
            shard = ascii_whole(index.strip(), INT_DIGITS)
            if shard is None:
                raise ValueError(f"ShardMap: {item!r} is not partition:NAME=N or node:PREFIX=N")
            if not shard < self.shards:
                raise ValueError(f"ShardMap: shard {shard} of {item!r} does not exist")
            if kind == "partition":
                self._partitions[name] = shard
            elif kind == "node":
                self._node_prefixes.append((name, shard))
            else:
                raise ValueError(f"ShardMap: {item!r} is not partition:… or node:…")
        self._node_prefixes.sort(key=lambda item: -len(item[0]))  # longest prefix wins

    def shards_for(self, name: str, record: dict[str, Any]) -> list[int]:
        """The shard indexes ``record`` (a decoded ``name``) goes to."""
        if self.shards == 1:
            return [0]
        if name in _BY_PARTITION:
            return [self._partitions.get(record["spec"].get("partition", ""), 0)]
        if name in _BY_NODE:
            node = record.get("name") or record.get("node_name") or ""
            for prefix, shard in self._node_prefixes:
                if node.startswith(prefix):
                    return [shard]
            return [0]
        return list(range(self.shards))
