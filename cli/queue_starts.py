"""``sluice queue --start`` (squeue --start): the shards' planned starts joined to the rows.

:func:`planned_starts` asks every shard once (``Client.plan_starts``: a ``PlanStarts``, each
shard answering with its ``StartsPlanned``) and maps each planned job's SLUID to its expected
start and nodes. :func:`with_plans` puts them in the pending rows as ``planned_start_ms`` (0:
none, printed ``N/A``) and ``sched_nodes`` (``""``: none, printed ``(null)``), the fields
``START_TIME`` (``%S``) and ``SCHEDNODES`` (``%Y``) print with ``--start``.

No answer is never an error: a worker or views of an older release do not answer (the wait
ends after :data:`STARTS_WAIT_S`), a shard may be down, the request may be refused; squeue
still prints the queue, with ``N/A`` where no plan says more, and one line on standard error
says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cli.client import ApiError, Client

__all__ = ["STARTS_WAIT_S", "Plan", "planned_starts", "with_plans", "with_priorities"]

STARTS_WAIT_S = 10.0
"""How long ``--start`` waits for every shard's plan (a plan is one scheduling pass)."""

Plan = dict[str, tuple[int, str]]
"""Job SLUID → (expected start in Unix ms, nodes hostlist)."""


def planned_starts(client: Client, wait_s: float = STARTS_WAIT_S) -> tuple[Plan, str]:
    """The planned starts of every shard that answered, and a warning ("" when none)."""
    fallback = "START_TIME shows N/A"
    try:
        answer = client.plan_starts(wait_s)
    except (ApiError, ValueError) as exc:
        return {}, f"could not ask for planned starts ({exc}); {fallback}"
    if answer is None:
        return {}, (f"no planned starts within {wait_s:g} s (a worker or views of an older "
                    f"release do not plan them); {fallback}")
    if "denial" in answer:
        denial = answer["denial"]
        return {}, (f"planned starts refused: {denial.get('reason', '')}: "
                    f"{denial.get('detail', '')}; {fallback}")
    starts = answer.get("starts") or {}
    plans: Plan = {}
    missing: list[str] = []
    for shard, found in sorted((starts.get("shards") or {}).items()):
        if found.get("plan_missing"):
            missing.append(shard)
        for job in found.get("jobs", []):
            plans[str(job["job_sluid"])] = (int(job["start_ms"]), str(job["nodes"]))
    warning = ""
    if not starts.get("complete", False):
        warning = (f"not every shard answered within {wait_s:g} s (answered: "
                   f"{', '.join(sorted(starts.get('shards') or {})) or 'none'}); "
                   "the others' jobs show N/A")
    elif missing:
        warning = (f"the views no longer hold the plan shard {', '.join(missing)} reused; "
                   "its jobs show N/A (try again in 10 s)")
    return plans, warning


def with_plans(rows: list[dict[str, Any]], plans: Mapping[str, tuple[int, str]]
               ) -> list[dict[str, Any]]:
    """The rows, each pending one with its planned start and nodes (none: 0 and "")."""
    out = []
    for row in rows:
        planned = row
        if row.get("state") == "PENDING":
            start, nodes = plans.get(str(row.get("job_sluid", "")), (0, ""))
            planned = {**row, "planned_start_ms": start, "sched_nodes": nodes}
        out.append(planned)
    return out


def with_priorities(client: Client, rows: list[dict[str, Any]],
                    wait_s: float = STARTS_WAIT_S) -> tuple[list[dict[str, Any]], str]:
    """The rows, each pending one the shards rank (``sprio``'s answer:
    ``Client.plan_priorities``) with its priority now: the views keep the priority of a job's
    last ``JobPending`` (its reason's last change), which the age factor has outgrown since
    (squeue's ``%Q``/``%p`` print slurmctld's current one). No answer: the rows as they are,
    and why."""
    try:
        answer = client.plan_priorities(wait_s)
    except (ApiError, ValueError) as exc:
        return rows, f"no current priorities ({exc}): PRIORITY shows the last one recorded"
    if answer is None or "denial" in answer:
        return rows, "no current priorities: PRIORITY shows the last one recorded"
    shards = (answer.get("priorities") or {}).get("shards") or {}
    now = {str(j["job_sluid"]): int(j["priority"])
           for part in shards.values() for j in part.get("jobs", [])}
    return [{**row, "priority": now[str(row.get("job_sluid", ""))]}
            if row.get("state") == "PENDING" and not _held(row)
            and str(row.get("job_sluid", "")) in now else row
            for row in rows], ""


def _held(row: dict[str, Any]) -> bool:
    """A held job's priority is 0 (Slurm's, as the shard records it), whatever the factors
    would give it: held by a user or an administrator, or by its deleted reservation."""
    return row.get("reason") in ("JobHeldUser", "JobHeldAdmin", "ReservationDeleted") or (
        "RESV_DEL_HOLD" in (row.get("flags") or ()))
