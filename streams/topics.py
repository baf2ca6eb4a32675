"""The topic catalogue: every topic Sluice uses, its key, partitions and cleanup policy.

| topic | key | partitions | policy |
|---|---|---|---|
| ``requests`` | subject SLUID | ``partitions`` | delete, 7 days |
| ``heartbeats`` | node SLUID | ``partitions`` | compact |
| ``shard-inbox`` | shard name | ``shards`` | delete, 7 days (``sluice verify`` re-decides it) |
| ``events`` (the ledger) | subject SLUID | ``partitions`` | delete, kept forever |
| ``node-commands`` | node SLUID | ``partitions`` | delete, 7 days |
| ``job-starts`` | job SLUID | ``partitions`` | delete, 7 days |
| ``dead-letters`` | original key | 1 | delete, 30 days |
| ``<cluster>-job-start``, ``<cluster>`` | job id | 1 | delete, 7 days (jobcomp/kafka JSON) |

faust's own changelog and leader topics are created by faust; they are never ``delete``.
"""

from __future__ import annotations

from dataclasses import dataclass

from streams.settings import Settings

__all__ = ["TopicSpec", "Topics"]

DAY_MS = 24 * 3600 * 1000


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """One topic: its name, partition count and topic-level configuration."""

    name: str
    partitions: int
    config: tuple[tuple[str, str], ...]
    key: str

    def config_dict(self) -> dict[str, str]:
        """The configuration as AdminClient wants it."""
        return dict(self.config)


def _delete(days: int | None) -> tuple[tuple[str, str], ...]:
    retention = "-1" if days is None else str(days * DAY_MS)
    return (("cleanup.policy", "delete"), ("retention.ms", retention))


_COMPACT = (("cleanup.policy", "compact"),)


@dataclass(frozen=True, slots=True)
class Topics:
    """Names of one system's topics, all under ``<prefix>.``."""

    settings: Settings

    def _name(self, topic: str) -> str:
        return f"{self.settings.prefix}.{topic}"

    @property
    def requests(self) -> str:
        return self._name("requests")

    @property
    def heartbeats(self) -> str:
        return self._name("heartbeats")

    @property
    def shard_inbox(self) -> str:
        return self._name("shard-inbox")

    @property
    def events(self) -> str:
        return self._name("events")

    @property
    def node_commands(self) -> str:
        return self._name("node-commands")

    @property
    def job_starts(self) -> str:
        return self._name("job-starts")

    @property
    def dead_letters(self) -> str:
        return self._name("dead-letters")

    @property
    def jobcomp_start(self) -> str:
        """Slurm jobcomp/kafka's job-start topic (``<cluster>-job-start``)."""
        return f"{self.settings.cluster}-job-start"

    @property
    def jobcomp_finish(self) -> str:
        """Slurm jobcomp/kafka's job-completion topic (``<cluster>``)."""
        return self.settings.cluster

    def catalogue(self) -> list[TopicSpec]:
        """Every topic Sluice creates at start-up."""
        p, shards = self.settings.partitions, self.settings.shards
        return [
            TopicSpec(self.requests, p, _delete(7), "subject SLUID"),
            TopicSpec(self.heartbeats, p, _COMPACT, "node SLUID"),
            TopicSpec(self.shard_inbox, shards, _delete(7), "shard name"),
            TopicSpec(self.events, p, _delete(None), "subject SLUID"),
            TopicSpec(self.node_commands, p, _delete(7), "node SLUID"),
            TopicSpec(self.job_starts, p, _delete(7), "job SLUID"),
            TopicSpec(self.dead_letters, 1, _delete(30), "original key"),
        ]

    def jobcomp_catalogue(self) -> list[TopicSpec]:
        """The Slurm-compatible JSON topics, created only when jobcomp output is enabled."""
        return [
            TopicSpec(self.jobcomp_start, 1, _delete(7), "job id"),
            TopicSpec(self.jobcomp_finish, 1, _delete(7), "job id"),
        ]
