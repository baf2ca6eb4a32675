"""The broker a benchmark talks to, and the machine line each prints.

``KAFKA_BOOTSTRAP`` when set; otherwise a local single-node KRaft broker (Apache Kafka from the
Maven Central jars, ``infra.kafka``) started in a temporary home and stopped by :meth:`stop`.
"""

from __future__ import annotations

import os
import platform
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["BenchBroker", "machine_line"]


def machine_line() -> str:
    """``machine: <cpu>, <n> cores, Python <version>``."""
    return (f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}")


class BenchBroker:
    """A bootstrap address and a scratch home; the local broker, if one was started."""

    def __init__(self, bootstrap: str, home: Path, kafka: Any = None) -> None:
        self.bootstrap, self.home, self._kafka = bootstrap, home, kafka

    @classmethod
    def start(cls, prefix: str, heap: str | None = "-Xms1g -Xmx1g") -> BenchBroker:
        """``KAFKA_BOOTSTRAP``, else a local broker with ``heap`` (JVM flags) in a new home."""
        home = Path(tempfile.mkdtemp(prefix=prefix))
        bootstrap = os.environ.get("KAFKA_BOOTSTRAP")
        if bootstrap:
            return cls(bootstrap, home)
        from infra.kafka import LocalKafka

        kafka = LocalKafka.start(home / "kafka", heap=heap)
        return cls(kafka.bootstrap, home, kafka)

    def stop(self) -> None:
        """Stop the local broker, if this started one."""
        if self._kafka is not None:
            self._kafka.stop()
            self._kafka = None
