"""The next requests offset the intake expects, per partition, kept in a consumer group.

A consumer group's committed offset cannot say what the intake handled: the intake's own
consumer commits hints, and faust, which fed the intake until 2026-12-05, acknowledged (and
then committed over) records it never delivered. So the intake keeps its own progress, as the
committed offsets of a group of its own, ``<prefix>-intake-progress`` (no member ever joins it;
a consumer that is only assigned partitions commits for it): the offset after the last
requests record that was forwarded or dead-lettered **and** confirmed by the broker. Every
worker of the cluster reads and writes the same group, so the next owner of a partition
continues where the last one stopped, whatever any other group committed.

A partition the group has no offset for yet (a new cluster, or one upgraded from a version
without it) starts at faust's worker group's committed offset (where the faust intake stood),
or at the partition's first offset when there is none; that start is committed to the group at
once. The intake loop loads the partitions it is assigned inside its assignment callback,
before any is read, and starts reading each at its progress (``agents.intake_loop``).

The calls block (a round trip to the group coordinator): the intake runs them on its own thread
or off its event loop. A commit without a coordinator fails after the consumers'
``session.timeout.ms``, 10 s here (librdkafka's 45 s default held every batch that long).

The two consumers are watched as the worker's group consumers are (``agents.group_watch``):
after a broker stall librdkafka 2.16 can forget every broker and never look again
(confluentinc/librdkafka#5301). A committer so cut off failed every commit, 45 s each, so the
intake handled one batch every 45 s and its progress never moved on (a restart or a new owner
forwarded again everything since); and once its partitions were assigned again (the group
consumer replaced, a rebalance) the progress could not be loaded, and the intake retried the
load for ever, forwarding nothing. So when their calls have failed for
``SLUICE_WORKER_REJOIN_TIMEOUT`` (60 s) while the broker answers a new client, both are
replaced (the old ones closed on a thread of their own).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import OFFSET_INVALID, KafkaException, TopicPartition

from agents.group_watch import GroupWatch, close_in_background, rejoin_limit_s
from streams.clients import consumer

__all__ = ["IntakeProgress", "progress_group"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_OVERRIDES = {"enable.partition.eof": False,
              # never joins a group: only how long a commit waits for a coordinator
              "session.timeout.ms": 10_000}


def progress_group(prefix: str) -> str:
    """The name of the group the intake's progress is committed to."""
    return f"{prefix}-intake-progress"


class IntakeProgress:
    """Loads, caches and commits the intake's next offset per requests partition."""

    def __init__(self, bootstrap: str, topic: str, group: str, worker_group: str,
                 timeout_s: float = 30.0, *, make: Callable[[str], Any] | None = None,
                 watch: GroupWatch | None = None) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.group, self.worker_group = group, worker_group
        self.timeout_s = timeout_s
        self._next: dict[int, int] = {}
        self._lock = threading.Lock()
        self._make = make or (lambda name: consumer(bootstrap, name, dict(_OVERRIDES)))
        self._watch = watch or GroupWatch(f"intake progress ({group})", bootstrap,
                                          rejoin_limit_s(), symptom="its commits failing")
        self._committer = self._make(group)
        self._worker = self._make(worker_group)

    def expected(self, partition: int) -> int:
        """The next offset the intake expects on ``partition`` (loaded once per ownership)."""
        with self._lock:
            if partition not in self._next:
                self._load({partition})
            return self._next[partition]

    def cached(self, partition: int) -> int | None:
        """:meth:`expected` when it is known and not being changed right now; None when
        asking would wait (a load, or a commit in another thread). Never blocks."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            return self._next.get(partition)
        finally:
            self._lock.release()

    def load(self, partitions: set[int]) -> None:
        """Load (and record, where the group has none) the partitions just assigned."""
        with self._lock:
            self._load({p for p in partitions if p not in self._next})

    def done(self, offsets: dict[int, int]) -> None:
        """Every record below ``offsets[p]`` of each partition ``p`` is handled and durable."""
        if not offsets:
            return
        with self._lock:
            self._next.update(offsets)  # this owner goes on from here even if the commit fails
            self._commit(offsets)

    def _commit(self, offsets: dict[int, int]) -> None:
        self._watched(lambda: self._commit_now(offsets))

    def _commit_now(self, offsets: dict[int, int]) -> None:
        self._committer.commit(
            offsets=[TopicPartition(self.topic, p, o) for p, o in sorted(offsets.items())],
            asynchronous=False)

    def _watched(self, call: Callable[[], T]) -> T:
        """``call()``; a failure that has lasted while the broker answers a new client
        replaces both consumers (module docstring) before it is raised."""
        try:
            result = call()
        except KafkaException:
            if self._watch.lasting(True):
                self._replace()
            raise
        self._watch.lasting(False)
        return result

    def _replace(self) -> None:
        close_in_background(self._committer, self._watch.what)
        close_in_background(self._worker, self._watch.what)
        self._committer = self._make(self.group)
        self._worker = self._make(self.worker_group)

    def forget(self, partitions: set[int]) -> None:
        """Drop the cached offsets (the partitions moved): the next owner's are read again."""
        with self._lock:
            for partition in partitions:
                self._next.pop(partition, None)

    def close(self) -> None:
        """Close the groups' consumers."""
        self._committer.close()
        self._worker.close()

    def _load(self, partitions: set[int]) -> None:
        if not partitions:
            return
        self._watched(lambda: self._load_now(partitions))

    def _load_now(self, partitions: set[int]) -> None:
        tps = [TopicPartition(self.topic, p) for p in sorted(partitions)]
        stored = self._committer.committed(tps, timeout=self.timeout_s)
        found = {tp.partition: int(tp.offset) for tp in stored if tp.offset >= 0}
        missing = partitions - set(found)
        starts = self._worker.committed([tp for tp in tps if tp.partition in missing],
                                        timeout=self.timeout_s) if missing else []
        new: dict[int, int] = {}
        for tp in starts:
            if tp.offset != OFFSET_INVALID and tp.offset >= 0:
                new[tp.partition] = int(tp.offset)
                where = "the worker group's offset"
            else:
                new[tp.partition] = int(self._worker.get_watermark_offsets(
                    TopicPartition(self.topic, tp.partition), timeout=self.timeout_s)[0])
                where = "its first offset"
            log.info("intake progress: %s[%d] starts at %s %d", self.topic, tp.partition,
                     where, new[tp.partition])
        if new:  # record where they start, before anything can be skipped
            self._commit_now(new)
        self._next.update(found)
        self._next.update(new)
