"""``sluice replay``'s read and fold at once: the ledger read and decoded in a child process
while this one folds what it has read.

The fold of a fact costs about what reading and decoding it costs (``docs/benchmarks.md``,
"Replay speed"), so on two cores the two overlap: a child process (forked before any Kafka
client exists here) reads every partition (``projections.replay.read_batches``) and sends the
decoded facts in batches (``marshal``: a third of what decoding them again would cost,
:func:`read_in_child`); this process puts them in decision order as they come
(:class:`~projections.merge_stream.MergeStream`) and folds them
(:meth:`~projections.views.Views.fold_merged`) while the child reads on.

The result is :func:`projections.replay.views_at` of :func:`projections.replay.read_facts`'s
facts, exactly. The stream hands facts on in ``projections.replay.merge``'s order whenever every
shard was seen before the first was handed on; once every fact is read, if a shard was first
seen later, or facts were left over (a gap or a duplicate in a shard's sequence), the views are
folded again from nothing the plain way (``views_at``, which raises ``LedgerGapError`` as
before). Records that do not decode are skipped, as ``read_facts`` skips them. Without
``fork``, with threads already running here (forking them is unsafe), or without a spare core
(the child then costs more than it saves), it reads then folds in this process.
"""

from __future__ import annotations

import marshal
import multiprocessing
import os
import pickle
import struct
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import suppress
from functools import partial
from pathlib import Path

from projections.merge_stream import MergeStream
from projections.replay import (
    Batch,
    Fact,
    by_shard,
    paused_gc,
    read_batches,
    read_facts,
    views_at,
)
from projections.views import Views
from streams.clients import consumer
from streams.settings import Settings
from streams.topics import Topics

__all__ = ["can_fork", "fold_stream", "read_in_child", "replay_views"]

_BATCH = 2000
"""Facts per message from the child: small enough that the fold starts early."""
_MARSHAL, _PICKLE, _FAILED = 1, 2, 3
"""What a message holds: a batch (``marshal``, else ``pickle``), or the child's error."""
_NOTICE = struct.Struct(">BI")
"""A message's notice through the pipe: what it holds and its length in the spool."""


def replay_views(settings: Settings, at_ms: int | None = None,
                 advance: Callable[[int], None] | None = None,
                 child: bool | None = None) -> tuple[list[Fact], Views]:
    """Every fact of the ledger (as :func:`~projections.replay.read_facts` returns them) and
    the views after those decided at or before ``at_ms`` (:func:`~projections.replay.views_at`
    of them); ``advance`` is told of every 1000 facts folded.

    Read in a child process while this one folds, or read then folded here: in a child when
    one can be forked (:func:`can_fork`) and ``child`` is true, or by default a core is spare
    (:func:`spare_core`). The facts and the views are the same either way."""
    topic = Topics(settings).events
    if not ((spare_core() if child is None else child) and can_fork()):
        facts = read_facts(settings, topic)
        return facts, views_at(facts, at_ms, advance)
    return fold_stream(read_in_child(partial(_ledger, settings.bootstrap, topic)), at_ms, advance)


def spare_core() -> bool:
    """Whether a core is idle, by the 1-minute load average (fewer runnable tasks than cores
    less one).

    The child costs a fifth more CPU in all (the facts are built twice: decoded there, loaded
    here), so it pays only when it runs beside the fold on a core nobody else wants: with
    Linux's autogroup scheduling, the processes of one session share one session's part of a
    busy machine, and there two processes are no faster than one."""
    cores = os.cpu_count() or 1
    return cores > 1 and os.getloadavg()[0] < cores - 1


def fold_stream(batches: Iterator[Batch], at_ms: int | None = None,
                advance: Callable[[int], None] | None = None) -> tuple[list[Fact], Views]:
    """Fold ``batches`` (facts in read order) as they come; every fact and the views, as
    :func:`~projections.replay.views_at` of them all gives them."""
    stream = MergeStream()
    ended = False  # whether the fold took every fact handed on (it did not stop at at_ms)

    def in_order() -> Iterator[Fact]:
        nonlocal ended
        for batch in batches:
            yield from stream.add(batch)
        yield from stream.finish()
        ended = True

    views = Views()
    with paused_gc():
        views.fold_merged(in_order(), at_ms, advance)
        for batch in batches:  # the fold stopped at at_ms: read the rest
            stream.add(batch)
    facts = stream.facts
    if stream.late or (ended and stream.handed < len(facts)):
        # maybe not merge's order; or a gap or a duplicate (raised here): the plain way
        return facts, views_at(facts, at_ms, advance)
    if stream.handed < len(facts):
        by_shard(facts)  # a gap after at_ms raises as it does when folding the plain way
    return facts, views


def can_fork() -> bool:
    """Whether a child can be forked safely: ``fork`` exists and this process runs one thread
    (librdkafka's threads included, counted by Linux)."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return False
    try:
        return sum(1 for _ in Path("/proc/self/task").iterdir()) == 1
    except OSError:
        return False


def _ledger(bootstrap: str, topic: str) -> Iterator[Batch]:
    """Every fact of every partition of ``topic``, decoded, in batches (read here)."""
    reader = consumer(bootstrap, overrides={"fetch.wait.max.ms": 20})
    try:
        yield from read_batches(reader, topic, _BATCH)
    finally:
        reader.close()


def read_in_child(source: Callable[[], Iterator[Batch]]) -> Iterator[Batch]:
    """The batches ``source()`` gives, called in a forked child; its error raised here.

    The child writes each message to a file in memory (``memfd``, else an unlinked temporary
    file) and announces it through a pipe with a few bytes: a write never waits for this
    process, so the child reads on while the fold holds this one (a pipe of messages made the
    two wait for each other on a busy machine)."""
    spool = _spool()
    receiving, sending = os.pipe()
    context = multiprocessing.get_context("fork")
    child = context.Process(target=_child, args=(source, spool, receiving, sending),
                            daemon=True, name="sluice-replay-reader")
    child.start()
    os.close(sending)
    ended = False  # whether every message was taken (else the child is stopped)
    try:
        with os.fdopen(receiving, "rb") as notices:
            at = 0
            while len(notice := notices.read(_NOTICE.size)) == _NOTICE.size:
                tag, size = _NOTICE.unpack(notice)
                body = os.pread(spool, size, at)
                at += size
                if tag == _MARSHAL:
                    yield marshal.loads(body)
                elif tag == _PICKLE:
                    yield pickle.loads(body)
                else:
                    raise pickle.loads(body)
        ended = True
    finally:
        os.close(spool)
        if not ended:
            child.kill()
        child.join()
    if child.exitcode != 0:
        raise RuntimeError(f"the ledger reader process exited with code {child.exitcode}")


def _spool() -> int:
    """A file descriptor of an anonymous file in memory, else of an unlinked temporary file."""
    with suppress(AttributeError, OSError):
        return os.memfd_create("sluice-replay", os.MFD_CLOEXEC)
    with tempfile.TemporaryFile() as spool:
        return os.dup(spool.fileno())


def _child(source: Callable[[], Iterator[Batch]], spool: int, receiving: int,
           sending: int) -> None:
    """Write every batch of ``source()`` to ``spool`` and announce it through the pipe; an
    error is sent to be raised by the parent."""
    os.close(receiving)
    try:
        with paused_gc():
            for batch in source():
                for start in range(0, len(batch), _BATCH):
                    _send(spool, sending, *_packed(batch[start:start + _BATCH]))
        os.close(sending)
    except BaseException as error:
        with suppress(OSError):  # the parent went away: nobody to tell
            _send(spool, sending, _FAILED, _pickled_error(error))
            os.close(sending)
        sys.exit(1)


def _send(spool: int, sending: int, tag: int, body: bytes) -> None:
    view = memoryview(body)
    while view:
        view = view[os.write(spool, view):]
    notice = _NOTICE.pack(tag, len(body))
    while notice:
        notice = notice[os.write(sending, notice):]


def _packed(batch: Batch) -> tuple[int, bytes]:
    try:
        return _MARSHAL, marshal.dumps(batch)
    except ValueError:  # a value marshal does not know (none of the schemas' types today)
        return _PICKLE, pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)


def _pickled_error(error: BaseException) -> bytes:
    try:
        return pickle.dumps(error)
    except Exception:
        return pickle.dumps(RuntimeError(f"the ledger reader failed: {error!r}"))
