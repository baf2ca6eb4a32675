"""Where Sluice's processes find the broker, their topics and their state, from one place.

When ``KAFKA_BOOTSTRAP`` is not set, the broker recorded by ``sluice up`` in
``$SLUICE_HOME/run/system.json`` is used, so ``sluice submit`` finds the system ``sluice up``
started.

Every process (worker, intake, projections, node daemons, the CLI) builds one :class:`Settings`
from the environment, so a test can give a whole system its own topics with one prefix.

| variable | default | meaning |
|---|---|---|
| ``KAFKA_BOOTSTRAP`` | ``127.0.0.1:9092`` | bootstrap servers |
| ``SLUICE_TOPIC_PREFIX`` | ``sluice`` | topic names are ``<prefix>.<topic>`` |
| ``SLUICE_CLUSTER`` | ``sluice`` | cluster name (consumer groups, jobcomp topics) |
| ``SLUICE_CLUSTER_ID`` | ``2`` | SLUID cluster id, 2..4094 |
| ``SLUICE_PARTITIONS`` | ``6`` | partitions of the SLUID-keyed topics |
| ``SLUICE_SHARDS`` | ``1`` | shard count = shard-inbox partitions |
| ``SLUICE_REPLICATION`` | ``1`` | replication factor of new topics (3 in production) |
| ``SLUICE_HOME`` | ``~/.local/state/sluice`` | state root: worker, daemons, logs, run files |
| ``SLUICE_API`` | ``127.0.0.1:6817`` | host:port of the projections' HTTP API |
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

__all__ = ["Settings", "system_file_path"]


def system_file_path(home: Path) -> Path:
    """Where ``sluice up`` records the broker it found or started, for later commands."""
    return home / "run" / "system.json"


def _system_file(home: Path) -> dict[str, str]:
    path = system_file_path(home)
    if not path.exists():
        return {}
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


@dataclass(frozen=True, slots=True)
class Settings:
    """Connection, naming and sizing for one Sluice system."""

    bootstrap: str = "127.0.0.1:9092"
    prefix: str = "sluice"
    cluster: str = "sluice"
    cluster_id: int = 2
    partitions: int = 6
    shards: int = 1
    replication: int = 1
    home: Path = field(default_factory=lambda: Path.home() / ".local" / "state" / "sluice")
    api: str = "127.0.0.1:6817"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        """Read the settings from ``env`` (default: the process environment)."""
        source = os.environ if env is None else env
        base = cls()
        home = Path(source.get("SLUICE_HOME", str(base.home))).absolute()
        system = _system_file(home)
        return cls(
            bootstrap=source.get("KAFKA_BOOTSTRAP", system.get("bootstrap", base.bootstrap)),
            prefix=source.get("SLUICE_TOPIC_PREFIX", base.prefix),
            cluster=source.get("SLUICE_CLUSTER", base.cluster),
            cluster_id=int(source.get("SLUICE_CLUSTER_ID", base.cluster_id)),
            partitions=int(source.get("SLUICE_PARTITIONS", base.partitions)),
            shards=int(source.get("SLUICE_SHARDS", base.shards)),
            replication=int(source.get("SLUICE_REPLICATION", base.replication)),
            home=home,
            api=source.get("SLUICE_API", base.api),
        )

    def as_env(self) -> dict[str, str]:
        """The environment that reproduces these settings in a child process."""
        return {
            "KAFKA_BOOTSTRAP": self.bootstrap,
            "SLUICE_TOPIC_PREFIX": self.prefix,
            "SLUICE_CLUSTER": self.cluster,
            "SLUICE_CLUSTER_ID": str(self.cluster_id),
            "SLUICE_PARTITIONS": str(self.partitions),
            "SLUICE_SHARDS": str(self.shards),
            "SLUICE_REPLICATION": str(self.replication),
            "SLUICE_HOME": str(self.home),
            "SLUICE_API": self.api,
        }

    def with_(self, **changes: object) -> Settings:
        """A copy with some fields changed."""
        return replace(self, **changes)  # type: ignore[arg-type]

    def shard_name(self, index: int) -> str:
        """The name of shard ``index`` (its shard-inbox partition)."""
        return self.cluster if self.shards == 1 else f"{self.cluster}-{index}"

    def shard_names(self) -> list[str]:
        """Every shard's name, in partition order."""
        return [self.shard_name(i) for i in range(self.shards)]
