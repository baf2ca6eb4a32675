"""``GET /v1/decisions``: answer the instant the views fold the decision about a request.

A long poll, so that ``sluice submit`` prints the job id as soon as the shard has decided,
without polling:
``GET /v1/decisions?ids=SLUID[,SLUID…]&wait=SECONDS[&until=started|ended][&array=1]
[&nonces=N[,N…]]`` holds the request until every listed SLUID is *decided* or ``wait`` seconds
have passed (at most :data:`MAX_WAIT_S`), then answers ``{"decisions": {sluid: decision |
null}}`` where a decision is

- ``{"job": row}``: the job is in the views (queued, or already further; a rejected
  submission is a row in state ``REJECTED``); with ``until=ended``, only once it has ended;
  with ``until=started``, once it has left ``PENDING`` (started, or ended without starting:
  what ``sluice run`` outside an allocation waits for, as srun waits for its allocation);
- ``{"job": row, "tasks": n}`` with ``array=1``: the SLUID names a job array, ``row`` is its
  first task (the array's job id, as sbatch prints it);
- ``{"denial": row}``: the intake refused the request (a ``RequestDenied`` about the SLUID);
- ``{"test": row}``: the SLUID names an ``sbatch --test-only`` (a ``TestSubmitJob``), answered
  by a ``JobTestAnswered``: when and where it would start, or why it would be refused (with a
  nonce, only the answer carrying it); never while a job holds the SLUID (a test anyone sent
  under a job's SLUID must not end another user's wait for that job);
- ``{"starts": {"shards": {shard: answer}, "complete": bool}}``: the SLUID names a
  ``squeue --start`` (a ``PlanStarts``), answered by each shard's ``StartsPlanned``
  (:mod:`projections.starts_view`); the poll holds until every shard answered (``complete``),
  or answers at the end of the wait with those that did; never while a job holds the SLUID;
- ``{"priorities": {"shards": {shard: answer}, "complete": bool}}``: likewise for an ``sprio``
  (a ``PlanPriorities``), answered by each shard's ``PrioritiesComputed``
  (:mod:`projections.priorities_view`);
- ``{"shares": {"shards": {shard: answer}, "complete": bool}}``: likewise for an ``sshare``
  (a ``PlanShares``), answered by each shard's ``SharesComputed``
  (:mod:`projections.shares_view`);
- ``{"dead_letter": {"reason": code, "time_ms": ms, "offset": n}}``: nothing above, no job
  holds the SLUID (a job's waits until it starts or ends are the job's), and the
  intake dead-lettered a request keyed by the SLUID (unknown schema id, undecodable, too
  large, wrong key...), so it never reached the ledger and no decision will come: the newest
  such letter, as the reader may see it (a ``detail`` too for operators and administrators;
  nothing when the SLUID names another user's job: :mod:`projections.dead_letter_index`).
  Only for a wait without a nonce: a dead letter keeps no nonce (nor credential), and anyone
  may send an unreadable record under any key, so it never answers a submission that drew a
  nonce (as another request's ``RequestDenied`` does not); without one, whoever sends such a
  record under a SLUID first ends a wait for it, as an unnamed ``RequestDenied`` already can;
- ``null``: not decided within the wait.

``nonces`` (one per id, in the same order; 0 = none) names each submission by the nonce its
client drew (``SubmitJob.nonce``): two clients may mint the same SLUID, and each must get the
decision about its own submission. With a nonce, a job (or array) is the answer only when its
``JobQueued`` carried that nonce, a refusal only when its ``JobRejected`` did (the refused
submission's row, ``REJECTED``, e.g. reason ``SluidInUse``: the client mints a new SLUID and
submits again); another submission's row or refusal under the SLUID is not an answer. A
``RequestDenied`` (a refused credential, a rate limit) carries the refused request's nonce too,
and answers only the wait with that nonce: another user's request refused under the same SLUID
(with any nonce, 0 included) is not the answer to a submission that drew a nonce. (A ledger
written before ``RequestDenied.nonce`` existed reads 0 there: such a denial answers only a
client without a nonce.) The relay passes the nonce of the record it produced.

The waiting thread sleeps on :attr:`ProjectionService.folded`, which the service notifies
after each folded batch of the ledger; no thread spins.
"""

from __future__ import annotations

import math
import time
from typing import Any

from projections.api_auth import Viewer, private_view
from projections.dead_letter_index import letters_for
from projections.priorities_view import priorities_answer
from projections.service import ProjectionService
from projections.shares_view import shares_answer
from projections.starts_view import starts_answer
from projections.views import ACTIVE_STATES, Views
from schemas.digits import ascii_integer

__all__ = ["MAX_IDS", "MAX_WAIT_S", "decisions"]

MAX_WAIT_S = 60.0
"""The longest a request may hold a thread of the API."""
MAX_IDS = 500
"""The most SLUIDs one request may name."""

_NOT_STARTED = frozenset({"PENDING", "REQUEUED"})
"""States of a job that has not started (yet, or again)."""
_SHARD_ANSWERS = ("starts", "priorities", "shares")
"""Decisions every shard answers: complete once each has."""


def decisions(service: ProjectionService, query: dict[str, list[str]],
              viewer: Viewer) -> tuple[int, dict[str, Any]]:
    """The answer to one ``GET /v1/decisions`` (status, payload), after waiting as asked."""
    ids = [s for item in query.get("ids", []) for s in item.split(",") if s]
    if not ids:
        return 400, {"error": "ids=SLUID[,SLUID…] is required"}
    if len(ids) > MAX_IDS:
        return 400, {"error": f"at most {MAX_IDS} ids in one request, got {len(ids)}"}
    try:
        wait_s = float(query.get("wait", ["0"])[0])
    except ValueError:
        wait_s = math.nan
    if math.isnan(wait_s):  # nan compares false with everything: the poll would never end
        return 400, {"error": f"wait={query['wait'][0]!r} is not a number of seconds"}
    wait_s = min(max(wait_s, 0.0), MAX_WAIT_S)
    until = query.get("until", [""])[0]
    if until not in ("", "started", "ended"):
        return 400, {"error": f"until={until!r}: expected started or ended"}
    array = query.get("array", ["0"])[0] == "1"
    nonces = _nonces(query, ids)
    if isinstance(nonces, str):
        return 400, {"error": nonces}
    deadline = time.monotonic() + wait_s
    found: dict[str, Any] = dict.fromkeys(ids)
    partial: dict[str, Any] = {}
    with service.folded:
        while True:
            views = service.views
            for sluid in ids:
                if found[sluid] is None:
                    nonce = nonces.get(sluid, 0)
                    decision = _decision(views, sluid, until, array, nonce)
                    if decision is None and not nonce:
                        decision = _dead_letter(service, views, sluid, viewer)
                    if decision is not None and (
                            ("tasks" in decision and views.open_cycles)
                            or any(kind in decision and not decision[kind]["complete"]
                                   for kind in _SHARD_ANSWERS)):
                        # an array's tasks are queued in one cycle: answer once it is folded
                        # whole (its CycleCompleted), not with the tasks of a first read; a
                        # squeue --start (sprio, sshare) once every shard answered
                        partial[sluid] = decision
                    else:
                        found[sluid] = decision
            remaining = deadline - time.monotonic()
            if remaining <= 0 or all(found.values()):
                break
            service.folded.wait(remaining)
        for sluid, decision in partial.items():
            found[sluid] = found[sluid] or decision
        for decision in found.values():
            if decision and "job" in decision:
                decision["job"] = private_view(decision["job"], viewer, views.private_jobs,
                                               views.privileged)
        return 200, {"decisions": found, "freshness": service.freshness()}


def _nonces(query: dict[str, list[str]], ids: list[str]) -> dict[str, int] | str:
    """SLUID → the nonce the client names it by (none: {}), or why ``nonces`` is refused."""
    texts = [s for item in query.get("nonces", []) for s in item.split(",")]
    if not texts:
        return {}
    if len(texts) != len(ids):
        return f"nonces: {len(texts)} given for {len(ids)} ids (one each, 0 = none)"
    nonces: dict[str, int] = {}
    for sluid, text in zip(ids, texts, strict=True):
        nonce = ascii_integer(text)
        if nonce is None or not _NONCE_MIN <= nonce <= _NONCE_MAX:
            return f"nonces: {text[:40]!r} is not a 64-bit integer"
        nonces[sluid] = nonce
    return nonces


_NONCE_MIN, _NONCE_MAX = -(1 << 63), (1 << 63) - 1
"""An Avro ``long``: what ``SubmitJob.nonce`` can hold."""


def _decision(views: Views, sluid: str, until: str, array: bool,
              nonce: int = 0) -> dict[str, Any] | None:
    job = views.lookup(sluid)  # in memory, or read from the store (an old SLUID)
    if nonce and job is not None and job.get("nonce", 0) != nonce:
        job = None  # another submission's job or refusal under the same SLUID
    tasks = 0
    if job is None and array:
        members = views.array_tasks(sluid)
        if members:
            first = min(members, key=lambda row: row.get("array_task_id", 0))
            if not nonce or first.get("nonce", 0) == nonce:
                job, tasks = first, len(members)
    if job is not None:
        if until == "ended" and job["state"] in ACTIVE_STATES:
            return None
        if until == "started" and job["state"] in _NOT_STARTED:
            return None
        return {"job": dict(job), **({"tasks": tasks} if tasks else {})}
    # After the job: a test or a plan request sent under a job's SLUID (anyone's: squeue
    # shows them) must not answer a wait for the job's end.
    starts = starts_answer(views.starts, sluid, nonce, views.shard_names)
    if starts is not None:
        return {"starts": starts}
    priorities = priorities_answer(views.priorities, sluid, nonce, views.shard_names)
    if priorities is not None:
        return {"priorities": priorities}
    shares = shares_answer(views.shares, sluid, nonce, views.shard_names)
    if shares is not None:
        return {"shares": shares}
    test = views.tests.get(sluid)
    if test is not None and (not nonce or test.get("nonce", 0) == nonce):
        return {"test": dict(test)}
    for denial in reversed(views.denials.get(sluid, [])):
        request = denial.get("request", "")
        if nonce and not request and denial.get("nonce", 0) == nonce:
            return {"job": _refused(sluid, denial)}  # this submission's JobRejected
        if request in ("SubmitJob", "TestSubmitJob", "PlanStarts", "PlanPriorities",
                       "PlanShares"):
            if not nonce or denial.get("nonce", 0) == nonce:  # this request's, not another's
                return {"denial": dict(denial)}
        elif request == "" and not nonce:
            return {"denial": dict(denial)}
    return None


def _dead_letter(service: ProjectionService, views: Views, sluid: str,
                 viewer: Viewer) -> dict[str, Any] | None:
    """The newest dead letter keyed by ``sluid`` as ``viewer`` may see it, when no job holds
    the SLUID: a job's own waits (``sbatch --wait``, ``srun``, ``salloc``: no nonce, until it
    starts or ends) are never ended by what anyone sent under its SLUID."""
    if not service.dead_letter_index.letters(sluid):
        return None
    if views.lookup(sluid) is not None or sluid in views.array_ids:
        return None
    letters = letters_for(service.dead_letter_index, views, sluid, viewer)
    return {"dead_letter": letters[-1]} if letters else None


def _refused(sluid: str, denial: dict[str, Any]) -> dict[str, Any]:
    """The ``REJECTED`` row of a submission refused under a SLUID another one holds."""
    return {"job_id": 0, "job_sluid": sluid, "state": "REJECTED", "reason": denial["reason"],
            "detail": denial.get("detail", ""), "nonce": denial.get("nonce", 0),
            "end_ms": denial.get("time_ms", 0)}
