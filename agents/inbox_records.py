"""One shard-inbox record → the request the core decides, and the time it decides it at.

Shared by the shard runner and ``sluice verify`` so both read the inbox the same way: the seal
must verify (``agents.auth.seal``), be fresh, and its origin must be the one that may send the
record: client requests from the intake (decided for the identity it sealed), ``Tick`` from the
clock, ``NodeFailed``/``NodeResponding``/``NodeClockAhead`` from the health agent. Anything else
is a reason (a string) to ignore it. A ``SubmitJob`` the intake refused carries the
``sluice-refused`` header (``<Reason>: <detail>``); it stands for a ``RefuseSubmission``, which
the core records as a ``JobRejected`` (see ``scheduler.jobs.refusals`` and ``agents.intake_rules``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import scheduler
from agents.auth.seal import SealChecker, open_seal
from scheduler.jobs.refusals import RefuseSubmission
from schemas import DecodeError, decode

if TYPE_CHECKING:
    from agents.shard_runner import InboxRecord

__all__ = ["REFUSED_HEADER", "open_inbox_record", "refusal_of"]

REFUSED_HEADER = "sluice-refused"

_ONLY_FROM = {"Tick": "clock", "NodeFailed": "health", "NodeResponding": "health",
              "NodeClockAhead": "health"}


def refusal_of(headers: Any) -> str:
    """The ``sluice-refused`` header's text, or ``""`` (headers as faust or confluent give them:
    a list of ``(key, value)`` pairs, or None)."""
    pairs: Iterable[tuple[Any, Any]] = headers.items() if isinstance(headers, dict) else (
        headers or ())
    for key, data in pairs:
        if key == REFUSED_HEADER and data:
            return data.decode(errors="replace") if isinstance(data, bytes) else str(data)
    return ""


def open_inbox_record(
    record: InboxRecord, secret: bytes, seals: SealChecker, now_ms: int
) -> tuple[Any, int] | str:
    """``(request, stamp ms)`` to decide, or why the record is ignored."""
    sealed = open_seal(secret, record.value, record.headers)
    if isinstance(sealed, str):
        return f"not sealed by this cluster's worker ({sealed})"
    try:
        name, body = decode(record.value)
        request = scheduler.from_record(name, body)
    except (DecodeError, KeyError, TypeError, ValueError) as exc:
        return f"not a request: {exc}"
    wanted = _ONLY_FROM.get(name, "intake")
    if sealed.origin != wanted:
        return f"a {name} from {sealed.origin}; only the {wanted} sends it"
    if not seals.fresh(sealed, now_ms):
        return "a sealed record seen before, or older than the replay window"
    refusal = refusal_of(record.headers)
    if refusal and name in ("SubmitJob", "TestSubmitJob"):
        reason, _, detail = refusal.partition(": ")
        nonce = body.get("nonce", 0)  # a decoded Avro long: an int (0 in a v3 record)
        return RefuseSubmission(job_sluid=str(body.get("job_sluid") or ""), reason=reason,
                                detail=detail,
                                nonce=nonce if type(nonce) is int else 0,
                                test=name == "TestSubmitJob"), sealed.stamp_ms
    if sealed.origin == "intake":
        request = scheduler.Attributed(request=request,
                                       identity=sealed.identity or scheduler.ANONYMOUS)
    return request, sealed.stamp_ms
