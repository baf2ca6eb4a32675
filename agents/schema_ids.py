"""Confluent schema ids for the intake: looked up in the schema registry, cached, bounded.

A Confluent-framed value (``00`` + 4-byte schema id + Avro body) names its writer schema only
by an id the registry gave it. Before the intake classifies a batch, :meth:`SchemaIds.prepare`
makes sure the codec knows every such id in it:

- an id already known (registered in an earlier batch) costs nothing;
- an unknown id is fetched from the registry (``GET /schemas/ids/<id>``) in a thread, with the
  client's timeout, and registered in the codec with that writer schema, so the body is resolved
  against Sluice's current (reader) schema with Avro's resolution rules;
- at most :data:`MAX_IDS` ids are kept; the least recently used is forgotten (and fetched again
  if it comes back).

When an id cannot be used the record is dead-lettered with a named reason (and never blocks the
intake for good):

| reason | when |
|---|---|
| ``NoSchemaRegistry`` | a Confluent-framed record, and no ``SLUICE_SCHEMA_REGISTRY_URL`` |
| ``UnknownSchemaId`` | the registry has no schema with that id |
| ``ForeignSchema`` | the id's schema is not a Sluice record (or not Avro, or unreadable) |
| ``RegistryUnavailable`` | no answer within ``SLUICE_SCHEMA_REGISTRY_WAIT_S`` |
| ``SchemaLookupLimit`` | the id was not looked up: over :data:`LOOKUPS_PER_BATCH` new ids in one |
| | batch, or the intake's lookup budget (:data:`LOOKUP_BURST`, :data:`LOOKUPS_PER_S`) spent |

A registry that does not answer is retried (1 s, 2 s, 4 s ... apart) for at most
``SLUICE_SCHEMA_REGISTRY_WAIT_S`` seconds per batch (default 30), then the batch's records that
need it are dead-lettered; a record is never dropped in silence and the intake never stops.
"Not found" answers are remembered for :data:`NEGATIVE_TTL_S` so a flood of records with a bogus
id costs one lookup. A flood of *fresh* ids (4 bytes: 2^32 of them) would cost one sequential
round trip each and hold every other request behind it, so lookups are bounded: at most
:data:`LOOKUPS_PER_BATCH` a batch, and a bucket of :data:`LOOKUP_BURST` refilled at
:data:`LOOKUPS_PER_S` across batches; an id past the bound is dead-lettered
(``SchemaLookupLimit``, not remembered: a later batch may look it up). A real producer's records
name a few ids, each looked up once and kept.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from schemas.codec import CONFLUENT_HEADER_SIZE, CONFLUENT_MAGIC, Codec
from streams.schema_registry import (
    RegistryError,
    RegistryUnavailableError,
    SchemaRegistry,
    UnknownSchemaIdError,
)

__all__ = ["MAX_IDS", "NEGATIVE_TTL_S", "SchemaIds", "confluent_id"]

log = logging.getLogger(__name__)

MAX_IDS = 1024
"""How many resolved schema ids the intake keeps."""
NEGATIVE_TTL_S = 60.0
"""How long an id the registry does not know is not asked about again."""
LOOKUPS_PER_BATCH = 16
"""The most unknown ids one batch may send to the registry."""
LOOKUP_BURST = 64
LOOKUPS_PER_S = 2.0
"""The lookup budget across batches: a bucket of ``LOOKUP_BURST`` lookups, refilled at
``LOOKUPS_PER_S`` a second."""


def confluent_id(value: bytes | None) -> int | None:
    """The schema id of a Confluent-framed value, ``None`` for any other value."""
    if not value or len(value) < CONFLUENT_HEADER_SIZE or value[0] != CONFLUENT_MAGIC:
        return None
    return int.from_bytes(value[1:CONFLUENT_HEADER_SIZE], "big")


class SchemaIds:
    """The schema ids one intake has resolved (see the module docstring)."""

    def __init__(
        self, codec: Codec, registry: SchemaRegistry | None, wait_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        self.codec = codec
        self.registry = registry
        self.wait_s = wait_s
        self.clock = clock
        self.sleep = sleep
        self._known: OrderedDict[int, str] = OrderedDict()
        self._missing: dict[int, tuple[float, str]] = {}
        self._tokens, self._filled = float(LOOKUP_BURST), clock()

    async def prepare(self, values: Iterable[bytes | None]) -> dict[int, str]:
        """Resolve the ids of ``values``; the named reason for each id that cannot be used."""
        wanted = []
        for value in values:
            schema_id = confluent_id(value)
            if schema_id is None:
                continue
            if schema_id in self._known:
                self._known.move_to_end(schema_id)
            elif schema_id not in wanted:
                wanted.append(schema_id)
        if not wanted:
            return {}
        if self.registry is None:
            return {i: (f"NoSchemaRegistry: the record is Confluent-framed (schema id {i}) but "
                        "this worker has no schema registry configured "
                        "(set SLUICE_SCHEMA_REGISTRY_URL, or send single-object encoding)")
                    for i in wanted}
        failed: dict[int, str] = {}
        deadline = self.clock() + self.wait_s
        down = ""
        looked_up = 0
        for schema_id in wanted:
            if down:  # the registry did not answer this batch: do not wait for it again
                failed[schema_id] = (f"RegistryUnavailable: schema id {schema_id} was not "
                                     f"looked up: {down}")
                continue
            if not self._remembered(schema_id):  # a lookup: within the bounds only
                limit = self._over_limit(looked_up)
                if limit:
                    failed[schema_id] = (f"SchemaLookupLimit: schema id {schema_id} was not "
                                         f"looked up: {limit}")
                    continue
                looked_up += 1
            reason = await self._resolve(self.registry, schema_id, deadline)
            if reason is not None:
                failed[schema_id] = reason
                if reason.startswith("RegistryUnavailable"):
                    down = reason.split(": ", 1)[1]
        return failed

    def _remembered(self, schema_id: int) -> bool:
        missing = self._missing.get(schema_id)
        return missing is not None and self.clock() < missing[0]

    def _over_limit(self, looked_up: int) -> str:
        """Why one more lookup may not be made now ("" when it may; it is then counted)."""
        if looked_up >= LOOKUPS_PER_BATCH:
            return f"more than {LOOKUPS_PER_BATCH} unknown schema ids in one batch"
        now = self.clock()
        self._tokens = min(float(LOOKUP_BURST),
                           self._tokens + (now - self._filled) * LOOKUPS_PER_S)
        self._filled = now
        if self._tokens < 1.0:
            return (f"the intake's registry lookups are spent ({LOOKUP_BURST}, then "
                    f"{LOOKUPS_PER_S:g} a second): try again later")
        self._tokens -= 1.0
        return ""

    async def _resolve(self, registry: SchemaRegistry, schema_id: int,
                       deadline: float) -> str | None:
        missing = self._missing.get(schema_id)
        if missing is not None and self.clock() < missing[0]:
            return missing[1]
        delay = 1.0
        while True:
            try:
                text, references = await asyncio.to_thread(
                    registry.schema_with_references, schema_id)
                break
            except UnknownSchemaIdError as exc:
                return self._remember(schema_id, f"UnknownSchemaId: schema id {schema_id} is "
                                                 f"not in the schema registry: {exc}")
            except RegistryUnavailableError as exc:
                if self.clock() + delay > deadline:
                    return (f"RegistryUnavailable: schema id {schema_id} could not be looked "
                            f"up within {self.wait_s:g}s: {exc}")
                log.warning("schema registry: %s; retrying in %.0fs", exc, delay)
                await self.sleep(delay)
                delay = min(delay * 2, 8.0)
            except RegistryError as exc:
                return self._remember(schema_id, f"ForeignSchema: schema id {schema_id}: {exc}")
        return self._learn(schema_id, text, references)

    def _learn(self, schema_id: int, text: str, references: dict[str, str]) -> str | None:
        try:
            name = _record_name(text)
            short = name.removeprefix("sluice.")
            if short not in self.codec.catalog.names:
                raise ValueError(f"{name!r} is not a Sluice record")
            self.codec.register_confluent_schema(schema_id, short, text, references)
        except Exception as exc:  # a registry's schema is outside input: any failure is named
            return self._remember(schema_id, f"ForeignSchema: schema id {schema_id}: "
                                             f"{type(exc).__name__}: {exc}")
        self._known[schema_id] = short
        log.info("schema registry: id %d is %s", schema_id, short)
        while len(self._known) > MAX_IDS:
            old, _ = self._known.popitem(last=False)
            self.codec.unregister_confluent_schema(old)
        return None

    def _remember(self, schema_id: int, reason: str) -> str:
        self._missing[schema_id] = (self.clock() + NEGATIVE_TTL_S, reason)
        if len(self._missing) > MAX_IDS:
            self._missing.pop(next(iter(self._missing)))
        return reason


def _record_name(text: str) -> str:
    raw = json.loads(text)
    if not isinstance(raw, dict) or raw.get("type") != "record":
        raise ValueError("the schema is not an Avro record")
    name = str(raw.get("name", ""))
    namespace = raw.get("namespace")
    return name if "." in name or not namespace else f"{namespace}.{name}"
