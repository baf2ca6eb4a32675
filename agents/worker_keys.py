"""A worker's keys against the cluster it joins, checked before it starts.

A worker makes its worker secret (``inbox.key``) and its node-command signing key on its first
start when it finds none (docs/security.md). That is right for the first worker of a cluster
and wrong for a second one started without copies of the first one's files: it made its own,
and then (red team, 7 Dec 2026, live) every request its intake took was sealed with a secret
the other worker's shard ignores (`inbox offset … ignored: not sealed by this cluster's
worker`: half of alice's ``sbatch`` calls waited for ever), and every node command it would
sign as the owner of a shard is refused by nodes holding the first key
(``CommandSignatureInvalid``). Nothing said so at its start.

:func:`key_problems` reads the newest records of the shard inbox and the node-command topic:

- a missing secret, while the inbox holds a sealed record younger than the seal's replay
  window (another worker is running, or ran moments ago), or a missing signing key while the
  node commands hold one younger than the command TTL: the worker must not start (the caller
  exits 2 with the returned lines);
- a secret that exists but does not open the newest such record (a wrong copy, or a rotation
  whose old worker stopped less than the window ago): a warning, the worker starts.

Reading costs one consumer and a fetch of at most :data:`TAIL` records a partition.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import TopicPartition

from agents.auth.command_signature import SIGNATURE_HEADER
from agents.auth.public_keys import command_key_paths
from agents.auth.seal import REPLAY_WINDOW_MS, SEAL_HEADER, STAMP_HEADER, open_seal
from streams.clients import consumer
from streams.settings import Settings
from streams.topics import Topics

__all__ = ["KeyProblems", "key_problems", "secret_path"]

TAIL = 64
"""Records read at the end of each partition."""


@dataclass(frozen=True, slots=True)
class KeyProblems:
    """What :func:`key_problems` found: refusals (do not start) and warnings."""

    refusals: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def secret_path(home: Path) -> Path:
    """Where the worker secret is (``agents.auth.seal.worker_secret``'s path)."""
    return Path(os.environ.get("SLUICE_WORKER_SECRET", home / "worker" / "inbox.key"))


def _tail(settings: Settings, topic: str) -> Iterator[Any]:
    """The last :data:`TAIL` records of each partition of ``topic`` (aborted ones too)."""
    reader = consumer(settings.bootstrap, overrides={"isolation.level": "read_uncommitted"})
    try:
        meta = reader.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None:
            return
        wanted: dict[int, int] = {}
        for partition in sorted(meta.partitions):
            low, high = reader.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            if high > low:
                wanted[partition] = high
        if not wanted:
            return
        reader.assign([TopicPartition(topic, p, max(0, high - TAIL)) for p, high in
                       wanted.items()])
        deadline = time.monotonic() + 10
        while wanted and time.monotonic() < deadline:
            for message in reader.consume(500, 0.5):
                partition = message.partition() or 0
                if message.error() is not None:
                    wanted.pop(partition, None)  # its end (EOF), or unreadable
                    continue
                if (message.offset() or 0) + 1 >= wanted.get(partition, 0):
                    wanted.pop(partition, None)
                yield message
    finally:
        reader.close()


def _header(message: Any, name: str) -> bytes | None:
    for key, value in message.headers() or ():
        if key == name:
            return bytes(value or b"")
    return None


def _newest(messages: Iterator[Any], header: str, since_ms: int) -> Any | None:
    """The newest record carrying ``header`` with a timestamp at or after ``since_ms``."""
    newest = None
    for message in messages:
        kind, stamp = message.timestamp()
        if _header(message, header) is None or kind == 0 or stamp < since_ms:
            continue
        if newest is None or stamp > newest.timestamp()[1]:
            newest = message
    return newest


def key_problems(settings: Settings, now_ms: int | None = None) -> KeyProblems:
    """Whether this worker's secret and signing key fit the cluster's recent records."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    topics = Topics(settings)
    refusals: list[str] = []
    warnings: list[str] = []
    secret = secret_path(settings.home)
    # SLUICE_WORKER_SECRET names a file; a value that is no absolute path (a secret's text
    # put there by mistake) is never printed
    shown = str(secret) if secret.is_absolute() else "the path SLUICE_WORKER_SECRET names"
    sealed = _newest(_tail(settings, topics.shard_inbox), SEAL_HEADER, now - REPLAY_WINDOW_MS)
    if sealed is not None:
        age_s = max(now - sealed.timestamp()[1], 0) / 1000
        if not secret.exists():
            refusals.append(
                f"no worker secret at {shown}, and the shard inbox holds a record another "
                f"worker sealed {age_s:.0f} s ago: this worker would make its own secret, and "
                f"each worker's shards would ignore what the other's intake seals (requests "
                f"never decided). Copy that worker's inbox.key here (mode 0600), or set "
                f"SLUICE_WORKER_SECRET to it (docs/security.md)")
        elif isinstance(open_seal(secret.read_bytes(), sealed.value() or b"",
                                  sealed.headers()), str):
            stamp = (_header(sealed, STAMP_HEADER) or b"?").decode(errors="replace")
            warnings.append(
                f"the worker secret at {shown} does not open the shard inbox's newest sealed "
                f"record (stamp {stamp}, {age_s:.0f} s ago): if another worker of this cluster "
                f"is running, its shards ignore what this one seals and the reverse; copy its "
                f"inbox.key (a rotation whose old workers stopped is fine)")
    private, _public = command_key_paths(settings)
    if not private.exists():
        signed = _newest(_tail(settings, topics.node_commands), SIGNATURE_HEADER,
                         now - settings.command_ttl_s * 1000)
        if signed is not None:
            age_s = max(now - signed.timestamp()[1], 0) / 1000
            refusals.append(
                f"no node-command signing key at {private}, and another worker signed a node "
                f"command {age_s:.0f} s ago: this worker would make its own key, and the nodes "
                f"would refuse every command it signs (CommandSignatureInvalid). Copy that "
                f"worker's command-ed25519.key and .pub here (mode 0600), or set "
                f"SLUICE_COMMAND_KEY to it (docs/security.md)")
    return KeyProblems(tuple(refusals), tuple(warnings))
