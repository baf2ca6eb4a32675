"""The intake agent: decode, route into the shard inbox, or dead-letter.

Requests arrive on ``sluice.requests`` keyed by their subject's SLUID, from any language. The
intake decodes each one (Avro single-object or Confluent framing); bytes that do not decode, or
that decode to something that is not a request, go to ``sluice.dead-letters`` with the reason,
and the agent goes on. A request is forwarded **as the original bytes** to the partition of its
shard, stamped with the intake's clock (the time the core will decide it at; a client's clock
is never trusted). Validation that needs state (an unknown partition, an impossible node count)
is the shard's: it answers with a ``JobRejected`` fact carrying a named reason, which gets a
place in the shard's gap-free sequence.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from agents.routing import ShardRouter
from schemas import DecodeError, decode, encode

if TYPE_CHECKING:
    from agents.app import WorkerContext

__all__ = ["REQUESTS", "install_intake"]

log = logging.getLogger(__name__)

REQUESTS = frozenset(
    {
        "SubmitJob", "CancelJob", "HoldJob", "ReleaseJob", "UpdateJob", "RegisterNode",
        "ReportJobExit", "ApplyConfig", "DrainNode", "ResumeNode", "RequeueJob",
        "ReportEpilog", "ReportProlog",
    }
)


def install_intake(context: WorkerContext, batch_max: int, within_s: float) -> None:
    """Register the intake agent on the worker's app."""
    app, router = context.app, ShardRouter(context.settings)

    @app.agent(context.requests, name="intake")
    async def intake(stream: Any) -> None:
        async for events in stream.take_events(batch_max, within=within_s):
            for event in events:
                message = event.message
                verdict = _classify(message.value)
                if isinstance(verdict, str):
                    await _dead_letter(context, message, verdict)
                    continue
                name, record = verdict
                for shard in router.shards_for(name, record):
                    await context.inbox.send(
                        key=context.settings.shard_name(shard).encode(),
                        value=message.value,
                        partition=shard,
                        headers=list(message.headers or []),
                    )


def _classify(value: bytes | None) -> tuple[str, dict[str, Any]] | str:
    """The decoded request, or the reason it is a dead letter."""
    if not value:
        return "empty record value"
    try:
        name, record = decode(value)
    except DecodeError as exc:
        return str(exc)
    if name not in REQUESTS:
        return f"a {name} record is not a request; requests are {sorted(REQUESTS)}"
    return name, record


async def _dead_letter(context: WorkerContext, message: Any, reason: str) -> None:
    log.warning("dead letter from %s[%d]@%d: %s", message.topic, message.partition,
                message.offset, reason)
    body = {
        "source_topic": message.topic,
        "partition": message.partition,
        "offset": message.offset,
        "key": message.key,
        "value": message.value or b"",
        "error": reason,
        "time_ms": int(time.time() * 1000),
    }
    await context.dead_letters.send(key=message.key, value=encode("DeadLetter", body))
