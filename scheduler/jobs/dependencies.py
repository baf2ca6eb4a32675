"""Job dependencies (``-d``): ``afterok``, ``afterany``, ``afternotok``, ``after``, ``singleton``.

Syntax as Slurm's: ``type:job[:job...]`` items joined by ``,`` (all must hold) or ``?`` (any
may hold; the two cannot be mixed). A job is named by its ``job_id`` or its SLUID.

Evaluation against the state gives one of three answers: satisfied, waiting (``Dependency``) or
never satisfiable (``DependencyNeverSatisfied``, e.g. ``afterok`` on a job that failed; the job
stays pending, as in Slurm without ``kill_invalid_depend``). A named job that was purged
(ended more than MinJobAge ago) counts as satisfied, as Slurm does when the record is gone.
``singleton`` waits while another job with the same name and user is running.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.shard.reasons import JobState, PendingReason
from schemas.digits import ascii_whole

if TYPE_CHECKING:
    from scheduler.shard.model import Job
    from scheduler.shard.state import ShardState

__all__ = ["Dependency", "DependencyError", "circular_through", "dependency_problem",
           "dependency_reason", "parse_dependency"]

KINDS = ("after", "afterany", "afterok", "afternotok", "singleton")
SATISFIED, WAITING, NEVER = "", PendingReason.DEPENDENCY, PendingReason.DEPENDENCY_NEVER_SATISFIED


class DependencyError(ValueError):
    """A dependency text does not parse."""


@dataclass(frozen=True, slots=True)
class Dependency:
    """A parsed dependency: its items (kind, job refs) and whether any one suffices."""

    items: tuple[tuple[str, tuple[str, ...]], ...]
    any_of: bool = False


@functools.lru_cache(maxsize=4096)
def parse_dependency(text: str) -> Dependency:
    """Parse a dependency text; raise :class:`DependencyError` when malformed."""
    if "," in text and "?" in text:
        raise DependencyError("',' and '?' cannot be mixed")
    any_of = "?" in text
    items = []
    for part in filter(None, text.replace("?", ",").split(",")):
        kind, *refs = part.strip().split(":")
        kind = kind.lower()
        if kind not in KINDS:
            raise DependencyError(f"unknown dependency type {kind!r}")
        if (kind == "singleton") != (not refs) or not all(refs):
            raise DependencyError(f"{part!r}: singleton takes no job, the others need jobs")
        items.append((kind, tuple(refs)))
    if not items:
        raise DependencyError("empty dependency")
    return Dependency(tuple(items), any_of)


def find_job(state: ShardState, ref: str) -> Job | None:
    """The job a reference names (job id or SLUID), if it is still in the state."""
    if ref.isdigit():
        job_id = ascii_whole(ref)
        sluid = state.job_by_id.get(job_id) if job_id is not None else None
        return state.jobs.get(sluid) if sluid else None
    return state.jobs.get(ref)


def references_exist(state: ShardState, dep: Dependency) -> str:
    """ "" when every named job exists or existed; else the first unknown reference."""
    for _, refs in dep.items:
        for ref in refs:
            job_id = ascii_whole(ref)
            known = ref in state.meta.known or (
                job_id is not None and 0 < job_id < state.meta.next_job_id
            )
            if find_job(state, ref) is None and not known:
                return ref
    return ""


def circular_through(state: ShardState, dep: Dependency, job: Job) -> str:
    """The job of ``dep`` through which the dependencies lead back to ``job`` ("" when none):
    such a job would wait for ever (Slurm refuses it: ESLURM_CIRCULAR_DEPENDENCY)."""
    for _, refs in dep.items:
        for ref in refs:
            seen: set[str] = set()
            stack = [ref]
            while stack:
                other = find_job(state, stack.pop())
                if other is None or other.job_sluid in seen:
                    continue
                if other.job_sluid == job.job_sluid:
                    return ref
                seen.add(other.job_sluid)
                if other.has_ended:  # its dependency is behind it: no wait goes through it
                    continue
                try:
                    stack += [r for _, rs in parse_dependency(other.spec.dependency).items
                              for r in rs] if other.spec.dependency else []
                except DependencyError:
                    continue
    return ""


def dependency_problem(state: ShardState, text: str, job: Job | None = None) -> str:
    """Why the dependency ``text`` is refused (``InvalidDependency``'s detail), "" when it is
    not: it does not parse, names a job that never existed, or (``job``: an update of that
    pending job) leads back to ``job``."""
    try:
        dep = parse_dependency(text)
    except DependencyError as error:
        return f"{text!r}: {error}"
    unknown = references_exist(state, dep)
    if unknown:
        return f"job {unknown[:40]} does not exist"
    through = circular_through(state, dep, job) if job is not None else ""
    if job is not None and through:
        return f"circular dependency: job {job.job_id} would wait for itself through job {through}"
    return ""


def _one(
    state: ShardState,
    job: Job,
    kind: str,
    refs: tuple[str, ...],
    running_names: set[tuple[str, str]],
) -> str:
    if kind == "singleton":
        return WAITING if (job.spec.user, job.spec.name) in running_names else SATISFIED
    answers = []
    for ref in refs:
        other = find_job(state, ref)
        if other is None:
            answers.append(SATISFIED)
        elif kind == "after":
            answers.append(WAITING if other.is_pending else SATISFIED)
        elif not other.has_ended:
            answers.append(WAITING)
        elif kind == "afterany":
            answers.append(SATISFIED)
        elif kind == "afterok":
            answers.append(SATISFIED if other.state == JobState.COMPLETED else NEVER)
        else:  # afternotok
            answers.append(NEVER if other.state == JobState.COMPLETED else SATISFIED)
    return NEVER if NEVER in answers else WAITING if WAITING in answers else SATISFIED


def dependency_reason(state: ShardState, job: Job, running_names: set[tuple[str, str]]) -> str:
    """ "" when the job's dependency holds, else ``Dependency`` or ``DependencyNeverSatisfied``.

    ``running_names`` holds (user, name) of the running jobs, for ``singleton``.
    """
    if not job.spec.dependency:
        return SATISFIED
    try:
        dep = parse_dependency(job.spec.dependency)
    except DependencyError:
        return NEVER
    answers = [_one(state, job, kind, refs, running_names) for kind, refs in dep.items]
    if dep.any_of:
        if SATISFIED in answers:
            return SATISFIED
        return WAITING if WAITING in answers else NEVER
    return NEVER if NEVER in answers else WAITING if WAITING in answers else SATISFIED
