"""Test support against a real broker: write a built ledger, run the projections in-process.

The projections are the real ones (``ProjectionService``, ``ApiServer``, ``projections.extras``)
reading a ledger these helpers write with a transactional producer, as the shard does, so the
projection side can be tested without the scheduling core.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition
from fastavro import parse_schema, schemaless_reader

from cli.services import prepare_topics
from projections.extras import Extras, mount
from projections.http import ApiServer
from projections.service import ProjectionService
from schemas import encode
from streams.clients import transactional_producer
from streams.settings import Settings
from streams.topics import Topics

Fact = tuple[str, dict[str, Any]]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def subject(record: Mapping[str, Any]) -> str:
    for key in ("job_sluid", "node_sluid", "config_sluid"):
        if record.get(key):
            return str(record[key])
    return str(record["shard"])


def settings_for(bootstrap: str, home: Path, prefix: str, partitions: int = 3) -> Settings:
    settings = Settings(bootstrap=bootstrap, prefix=prefix, cluster=prefix, partitions=partitions,
                        home=home, api=f"127.0.0.1:{free_port()}")
    prepare_topics(settings)
    return settings


class LedgerWriter:
    """Writes facts to a system's ledger, one transaction per call, like the shard."""

    def __init__(self, settings: Settings) -> None:
        self.topic = Topics(settings).events
        self.producer = transactional_producer(settings.bootstrap, f"{settings.prefix}.test")
        self.producer.init_transactions(30)

    def write(self, facts: Sequence[Fact]) -> None:
        self.producer.begin_transaction()
        for name, record in facts:
            self.producer.produce(self.topic, encode(name, record), subject(record).encode())
        self.producer.commit_transaction(30)


@dataclass
class Running:
    """An in-process projections service with its API and extras."""

    service: ProjectionService
    api: ApiServer
    extras: Extras
    thread: threading.Thread

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.api.port}"

    def get(self, path: str) -> bytes:
        with urllib.request.urlopen(self.url + path, timeout=10) as answer:
            return bytes(answer.read())

    def get_json(self, path: str) -> dict[str, Any]:
        return dict(json.loads(self.get(path)))

    def wait_applied(self, shard: str, seq: int, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.service.lock:
                if self.service.views.shard_seq.get(shard, 0) >= seq:
                    return
            time.sleep(0.05)
        raise AssertionError(f"projections did not reach {shard}:{seq}")


@contextmanager
def running_projections(settings: Settings, env: Mapping[str, str] | None = None,
                        rebuild: bool = False) -> Iterator[Running]:
    """Start the projections on ``settings``; stop them (cleanly) on exit."""
    service = ProjectionService(settings, rebuild=rebuild)
    api = ApiServer(service, "127.0.0.1", 0)
    extras = mount(api, service, settings, env=env or {})
    api.start()
    thread = threading.Thread(target=service.run, name="projections", daemon=True)
    thread.start()
    try:
        yield Running(service, api, extras, thread)
    finally:
        extras.stop()
        service.stop()
        thread.join(30)
        api.stop()


SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"


class SchemaOnlyConsumer:
    """What a user writes from docs/records.md and the two .avsc files, nothing of Sluice's."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        named: dict[str, Any] = {}
        parse_schema(json.loads((SCHEMAS / "Segment.avsc").read_text()), named_schemas=named)
        self.schema = parse_schema(
            json.loads((SCHEMAS / "JobStartNotification.avsc").read_text()), named_schemas=named)
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"user-{topic}",
                                  "isolation.level": "read_committed",
                                  "auto.offset.reset": "earliest", "enable.partition.eof": True})
        meta = self.consumer.list_topics(topic, timeout=10).topics[topic]
        self.consumer.assign([TopicPartition(topic, p, 0) for p in meta.partitions])
        self.parts = set(meta.partitions)

    def read_all(self, settle_s: float = 1.0) -> list[tuple[dict[str, Any], dict[str, bytes]]]:
        """Everything committed so far (until every partition is at its end for settle_s)."""
        out: list[tuple[dict[str, Any], dict[str, bytes]]] = []
        at_end: set[int] = set()
        quiet_since = time.monotonic()
        while time.monotonic() - quiet_since < settle_s or at_end != self.parts:
            messages: list[Any] = self.consumer.consume(num_messages=500, timeout=0.2)
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        at_end.add(message.partition())
                    continue
                at_end.discard(message.partition())
                quiet_since = time.monotonic()
                value = message.value()
                assert value[:2] == b"\xc3\x01", "single-object encoding"
                record: dict[str, Any] = schemaless_reader(  # type: ignore[assignment]
                    BytesIO(value[10:]), self.schema, None)
                out.append((record, dict(message.headers() or [])))
        return out

    def close(self) -> None:
        self.consumer.close()
