"""Job arrays: ``-a 0-15%4`` expands into one job per task at submission.

Each task is a job of its own: a SLUID minted by the shard, the next ``job_id``, and
``array_job_sluid`` = the submitted SLUID with ``array_task_id``. Requests naming the array's
SLUID (cancel, hold, release, update) apply to every live task. ``%N`` limits how many tasks run
at once (pending reason ``JobArrayTaskLimit``). Syntax: comma-separated ids or ranges
``a-b`` with an optional step ``a-b:s``, then an optional ``%N``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scheduler.jobs.queued import queued_fact
from scheduler.records import Fact, SubmitJob
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState
from schemas.digits import INT_DIGITS, ascii_whole

__all__ = ["ArraySpec", "array_facts", "array_step", "parse_array"]

_ITEM = re.compile(r"^(\d{1,9})(?:-(\d{1,9})(?::(\d{1,9}))?)?$", re.ASCII)  # an Avro int


@dataclass(frozen=True, slots=True)
class ArraySpec:
    """The task ids of an array, ascending, and the limit on running tasks (0 = none)."""

    task_ids: tuple[int, ...]
    max_running: int = 0


def parse_array(text: str, max_size: int) -> ArraySpec | None:
    """Parse an array spec; None when malformed or when an id reaches ``max_size``."""
    body, _, limit_text = text.strip().partition("%")
    limit = ascii_whole(limit_text, INT_DIGITS) if limit_text else 0
    if limit is None:
        return None
    ids: set[int] = set()
    for item in body.split(","):
        match = _ITEM.match(item.strip())
        if not match:
            return None
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) else low
        step = int(match.group(3)) if match.group(3) else 1
        if high < low or step < 1 or high >= max_size:
            return None
        ids.update(range(low, high + 1, step))
    return ArraySpec(tuple(sorted(ids)), limit) if ids else None


def array_step(text: str) -> int:
    """``SLURM_ARRAY_TASK_STEP`` of an array spec, as slurmctld sets it: the number after the
    first ``:`` of the text (``1-9:3`` → 3, ``1-5,10-20:2`` → 2), 1 when it has none (a list
    such as ``1,5,7``, or a plain range)."""
    _, colon, rest = text.partition(":")
    digits = re.match(r"\d{1,9}", rest, re.ASCII) if colon else None
    return int(digits.group()) if digits else 1


def array_limit(text: str) -> int:
    """The ``%N`` running-task limit of an array spec (0 = none)."""
    _, _, limit = text.partition("%")
    return ascii_whole(limit, INT_DIGITS) or 0


def array_facts(state: ShardState, req: SubmitJob, parsed: ArraySpec, st: Stamper) -> list[Fact]:
    """One JobQueued per task, ids ascending, each with a newly minted job SLUID.

    Clients mint job SLUIDs with the same cluster id, so a task's SLUID could be a job's the
    shard has (a client whose clock runs ahead minted it for the millisecond the shard is in
    now): the shard mints again until it has a SLUID no job, array or purged job has, so a task
    never takes another job's name (the state alone decides it: a replay mints the same)."""
    first_id = state.meta.next_job_id
    facts: list[Fact] = []
    for offset, task_id in enumerate(parsed.task_ids):
        meta = st.meta()
        sluid = st.new_sluid()
        while sluid in state.jobs or sluid in state.arrays or sluid in state.meta.known:
            sluid = st.new_sluid()
        job = (sluid, first_id + offset)
        facts.append(
            queued_fact(meta, state.config, job, req.spec, (req.job_sluid, task_id),
                        req.submitter, req.nonce)
        )
    return facts
