"""``CreateReservation`` and ``DeleteReservation``: Slurm's ``scontrol create|update|delete
reservation``, decided at the record's time (``StartTime=now+N`` is relative to it).

A create (or update) is refused, with a ``RequestDenied`` naming the request SLUID and
carrying Slurm's words, when:

- the user is no operator (``NotOperator``; with credentials authz refuses it first);
- the name is taken (create: ``Duplicate reservation name``) or unknown (update:
  ``Requested reservation is invalid``);
- the window is not given or empty (``Invalid time specified``); a start in the past is now;
- no nodes (Nodes= or NodeCnt=), no Users=/Accounts=, or a flag Sluice does not build;
- Nodes= names a node the shard does not have (``Invalid node name specified``);
- a reserved node runs a job (of no reservation, or another) expected to run into the window,
  unless ``IGNORE_JOBS``; or another reservation holds it in an overlapping window, unless one
  of the two is ``MAINT`` (``Requested nodes are busy``). NodeCnt= picks the first nodes in the
  shard's node order that are in service and not busy so.

A delete of an unknown name is refused (``Requested reservation is invalid``), and so is one
whose jobs still run (``Reservation is busy``). A request that changes nothing decides nothing.
"""

from __future__ import annotations

from scheduler.jobs.queued import unreserved_fact
from scheduler.nodes.admin import is_operator
from scheduler.records import (
    CreateReservation,
    DeleteReservation,
    Fact,
    RequestDenied,
    ReservationDeleted,
    ReservationSet,
)
from scheduler.reservations.model import FLAG_ALIASES, FLAGS, IGNORE_JOBS, Reservation
from scheduler.shard.index import raw_end
from scheduler.shard.reasons import NodeState, Rejection, RejectionReason
from scheduler.shard.stamp import Stamper
from scheduler.shard.state import ShardState
from scheduler.topology.hostlist import expand

__all__ = ["decide_create_reservation", "decide_delete_reservation", "jobs_in"]

R = RejectionReason
_NOT_OPERATOR = "NotOperator"  # as authz's refusal with a credential (DenialReason)


class _RefusedError(Exception):
    """A refusal on the way (caught once, in the deciders)."""

    def __init__(self, reason: Rejection, detail: str = "") -> None:
        super().__init__(reason.name)
        self.reason, self.detail = reason, detail


def _denied(st: Stamper, req: CreateReservation | DeleteReservation, reason: str,
            detail: str) -> list[Fact]:
    return [RequestDenied(
        **st.meta(), request=type(req).__name__, subject_sluid=req.request_sluid,
        requester=req.by or req.user, reason=reason, detail=detail, nonce=req.nonce,
    )]


def _refusal(st: Stamper, req: CreateReservation | DeleteReservation,
             refused: _RefusedError) -> list[Fact]:
    words = refused.reason.slurm or refused.reason.text
    detail = f"{words} ({refused.detail})" if refused.detail else words
    return _denied(st, req, refused.reason.name, detail)


def decide_create_reservation(state: ShardState, req: CreateReservation,
                              st: Stamper) -> list[Fact]:
    """Create or update: one ``ReservationSet`` with the window and nodes decided, or a
    refusal."""
    if not is_operator(state, req.user):
        return _denied(st, req, _NOT_OPERATOR, f"{req.user} is no operator")
    try:
        wanted = _wanted(state, req, st.time_ms)
    except _RefusedError as refused:
        return _refusal(st, req, refused)
    known = state.meta.reservations.get(wanted.name)
    if known == wanted:
        return []
    return [ReservationSet(
        **st.meta(), request_sluid=req.request_sluid, name=wanted.name, created=not req.update,
        start_ms=wanted.start_ms, end_ms=wanted.end_ms, nodes=wanted.nodes,
        users=wanted.users, accounts=wanted.accounts, flags=wanted.flags,
        by=req.by or req.user,
    )]


def decide_delete_reservation(state: ShardState, req: DeleteReservation,
                              st: Stamper) -> list[Fact]:
    """Delete: ``ReservationDeleted``, or a refusal (unknown name, jobs of it still run)."""
    if not is_operator(state, req.user):
        return _denied(st, req, _NOT_OPERATOR, f"{req.user} is no operator")
    if req.name not in state.meta.reservations:
        return _refusal(st, req, _RefusedError(R.RESERVATION_INVALID, req.name))
    running = jobs_in(state, req.name)
    if running:
        return _refusal(st, req, _RefusedError(
            R.RESERVATION_BUSY, f"job {state.jobs[running[0]].job_id} runs in it"))
    return [ReservationDeleted(**st.meta(), request_sluid=req.request_sluid, name=req.name,
                               ended=False, by=req.by or req.user),
            *jobs_let_go(state, state.meta.reservations[req.name], st)]


def jobs_in(state: ShardState, name: str) -> list[str]:
    """The running jobs of reservation ``name`` (SLUIDs, by job id)."""
    jobs = state.jobs
    found = [s for s in state.running if jobs[s].spec.reservation == name]
    return sorted(found, key=lambda s: jobs[s].job_id)


def jobs_let_go(state: ShardState, reservation: Reservation, st: Stamper) -> list[Fact]:
    """What its pending jobs become once ``reservation`` is gone: nothing (they are held,
    ``scheduler.reservations.windows.reservation_wait``), or, with
    ``Flags=NO_HOLD_JOBS_AFTER_END``, the same jobs without it (by job id), free to run
    anywhere, as Slurm's ``_clear_job_resv`` leaves them."""
    if reservation.holds_jobs_after:
        return []
    jobs = state.jobs
    pending = sorted((jobs[s] for s in state.pending
                      if jobs[s].spec.reservation == reservation.name),
                     key=lambda job: job.job_id)
    return [unreserved_fact(st.meta(), state.config, job) for job in pending]


def _wanted(state: ShardState, req: CreateReservation, now: int) -> Reservation:
    """The reservation the request asks for, checked (raises :class:`_RefusedError`)."""
    known = state.meta.reservations.get(req.name) if req.name else None
    if req.update and known is None:
        raise _RefusedError(R.RESERVATION_INVALID, req.name or "no ReservationName")
    if not req.update and known is not None:
        raise _RefusedError(R.RESERVATION_NAME_DUP, req.name)
    name = req.name or _free_name(state, req.by or req.user or "root")
    start, end = _window(req, known, now)
    users = tuple(req.users) or (known.users if known else ())
    accounts = tuple(req.accounts) or (known.accounts if known else ())
    flags = tuple(dict.fromkeys(FLAG_ALIASES.get(f.upper(), f.upper()) for f in req.flags)
                  ) or (known.flags if known else ())
    unknown = [f for f in flags if f not in FLAGS]
    if unknown:
        raise _RefusedError(R.INVALID_RESERVATION_REQUEST,
                       f"Flags={','.join(unknown)}: Sluice builds only {', '.join(FLAGS)}")
    if not users and not accounts:
        raise _RefusedError(R.INVALID_RESERVATION_REQUEST, "Users= or Accounts= must be given")
    draft = Reservation(name, start, end, (), users, accounts, flags)
    if req.nodes or req.node_cnt:
        nodes = _chosen(state, req, draft)
    elif known is not None:
        nodes = known.nodes
        _check_busy(state, draft, nodes)
    else:
        raise _RefusedError(R.INVALID_RESERVATION_REQUEST, "Nodes= or NodeCnt= must be given")
    return Reservation(name, start, end, nodes, users, accounts, flags)


def _free_name(state: ShardState, user: str) -> str:
    """Slurm's name for an unnamed reservation: ``USER_N``, the first N not taken."""
    n = 1
    while f"{user}_{n}" in state.meta.reservations:
        n += 1
    return f"{user}_{n}"


def _window(req: CreateReservation, known: Reservation | None, now: int) -> tuple[int, int]:
    """[start, end) in Unix ms: given, relative to ``now``, or (update) the known one's."""
    if req.start_ms > 0:
        start = req.start_ms
    elif req.start_in_s >= 0:
        start = now + req.start_in_s * 1000
    elif known is not None:
        start = known.start_ms
    else:
        raise _RefusedError(R.INVALID_TIME, "StartTime= must be given")
    start = max(start, now) if known is None or start != known.start_ms else start
    if req.end_ms > 0:
        end = req.end_ms
    elif req.end_in_s >= 0:
        end = now + req.end_in_s * 1000
    elif req.duration_s >= 0:
        end = start + req.duration_s * 1000
    elif known is not None:
        end = known.end_ms
    else:
        raise _RefusedError(R.INVALID_TIME, "Duration= or EndTime= must be given")
    if end <= start:
        raise _RefusedError(R.INVALID_TIME, "the window ends before it starts")
    return start, end


def _chosen(state: ShardState, req: CreateReservation, draft: Reservation) -> tuple[str, ...]:
    """The nodes: Nodes= (a hostlist or ALL), or NodeCnt= picked (checked not busy)."""
    index = state.index
    if req.nodes and req.nodes.upper() != "ALL":
        try:
            names = expand(req.nodes)
        except ValueError as error:
            raise _RefusedError(R.INVALID_NODE_NAME, f"Nodes={req.nodes}: {error}") from None
        missing = [n for n in names if n not in index.pos]
        if missing or not names:
            raise _RefusedError(R.INVALID_NODE_NAME, ",".join(missing) or req.nodes)
        nodes = tuple(sorted(dict.fromkeys(names), key=index.pos.__getitem__))
        _check_busy(state, draft, nodes)
        return nodes
    if req.nodes:  # ALL: every node the shard has
        nodes = tuple(index.names)
        _check_busy(state, draft, nodes)
        return nodes
    busy = _busy_nodes(state, draft)
    free = [n for n in index.names if n not in busy and _in_service(state, n)]
    if len(free) < req.node_cnt:
        raise _RefusedError(R.NODES_BUSY, f"NodeCnt={req.node_cnt}: {len(free)} nodes are free "
                                     "for the window")
    return tuple(free[:req.node_cnt])


def _in_service(state: ShardState, name: str) -> bool:
    node = state.nodes.get(state.node_by_name.get(name, ""))
    return node is not None and node.state not in (NodeState.DOWN, NodeState.DRAIN)


def _check_busy(state: ShardState, draft: Reservation, nodes: tuple[str, ...]) -> None:
    busy = _busy_nodes(state, draft)
    taken = [n for n in nodes if n in busy]
    if taken:
        raise _RefusedError(R.NODES_BUSY, f"{taken[0]}: {busy[taken[0]]}")


def _busy_nodes(state: ShardState, draft: Reservation) -> dict[str, str]:
    """Node name → why it cannot join ``draft``: another reservation holds it in an
    overlapping window (neither is MAINT), or a job runs there into the window (without
    IGNORE_JOBS; jobs of ``draft`` itself, on an update, do not count)."""
    busy: dict[str, str] = {}
    for other in sorted(state.meta.reservations.values(), key=lambda r: r.name):
        if (other.name != draft.name and other.overlaps(draft.start_ms, draft.end_ms)
                and not other.maint and not draft.maint):
            for name in other.nodes:
                busy.setdefault(name, f"reservation {other.name} holds it")
    if IGNORE_JOBS in draft.flags:
        return busy
    jobs = state.jobs
    for sluid in sorted(state.running, key=lambda s: jobs[s].job_id):
        job = jobs[sluid]
        if job.spec.reservation == draft.name:
            continue
        end = raw_end(job.start_ms, job.time_limit_s, False)
        if end > draft.start_ms:
            for name in job.nodes:
                busy.setdefault(name, f"job {job.job_id} runs there into the window "
                                      "(Flags=IGNORE_JOBS reserves it anyway)")
    return busy
