"""The kills a pass decides first: runs past their time limit, and the runs of advanced
reservations whose end came (Slurm's ``ResvOverRun=0``), with those reservations' ends."""

from __future__ import annotations

from scheduler.records import Fact, JobPending, JobQueued, RunKillRequested
from scheduler.reservations.windows import ended_reservations
from scheduler.shard.reasons import JobState
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState

__all__ = ["due_kills", "reasons_after"]


def due_kills(state: ShardState, st: Stamper) -> list[Fact]:
    """The reservations' ends (their runs killed, by end then name), then the runs past their
    limit (by deadline, then job id), each run killed once."""
    facts = ended_reservations(state, st) if state.meta.reservations else []
    killed = {f.job_sluid for f in facts if isinstance(f, RunKillRequested)}
    return facts + _timeouts(state, st, killed)


def _timeouts(state: ShardState, st: Stamper, killed: set[str]) -> list[Fact]:
    """Runs past their limit and not being killed (nor in ``killed``: their reservation
    ended): the index's raw ends (see ``raw_end``) are start + limit for exactly those runs (0
    for a kill, INFINITE without a limit)."""
    now, jobs, ends = st.time_ms, state.jobs, state.index.run_end
    if not ends or min(ends.values()) > now:  # none due (the common case: one C-level scan)
        return []
    due = [jobs[s] for s, end in ends.items() if 0 < end <= now and s not in killed]
    due.sort(key=lambda j: (j.start_ms + j.time_limit_s * 1000, j.job_id))
    return [
        RunKillRequested(
            **st.meta(),
            job_sluid=j.job_sluid,
            run_sluid=j.run_sluid,
            reason=JobState.TIMEOUT,
            nodes=j.nodes,
        )
        for j in due
    ]


def reasons_after(kills: list[Fact], reasons: list[Fact]) -> list[Fact]:
    """The pass's pending reasons (``reasons``) without those of the jobs its ``kills`` let go
    (a ``JobQueued``: their reservation, ``NO_HOLD_JOBS_AFTER_END``, ended in this pass). The
    pass saw them in that reservation, gone, so held; they are not: the next pass, after the
    update, gives their reason."""
    let_go = {f.job_sluid for f in kills if isinstance(f, JobQueued)}
    if not let_go:
        return reasons
    return [f for f in reasons if not (isinstance(f, JobPending) and f.job_sluid in let_go)]
