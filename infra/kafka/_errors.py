"""Errors raised by the local Kafka tooling.

Hierarchy::

    KafkaInfraError (RuntimeError)      anything below; catch this one in callers
    ├── ToolMissingError                java or mvn is not on PATH
    ├── JarsUnavailableError            Maven could not resolve the broker classpath
    ├── BrokerStartError                a node exited early or never became ready (has the log tail)
    ├── BrokerNotReadyError             an existing bootstrap did not answer in time
    └── DataDirMismatchError            the data dir holds another cluster shape or a newer format
"""

from __future__ import annotations


class KafkaInfraError(RuntimeError):
    """Base class of every error raised by ``infra.kafka``."""


class ToolMissingError(KafkaInfraError):
    """A required executable (``java``, ``mvn``) is not on ``PATH``."""


class JarsUnavailableError(KafkaInfraError):
    """``mvn dependency:copy-dependencies`` failed; the message carries Maven's output tail."""


class BrokerStartError(KafkaInfraError):
    """A node exited during start-up or did not become ready before the timeout."""


class BrokerNotReadyError(KafkaInfraError):
    """A bootstrap address did not list the expected brokers, or refused a probe topic, in time."""


class DataDirMismatchError(KafkaInfraError):
    """The data directory was made for a different cluster (node count, Kafka version)."""
