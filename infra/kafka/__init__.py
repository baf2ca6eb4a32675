"""A real Apache Kafka (KRaft) broker without Docker: jars from Maven Central, local JVMs.

Public API (see docs/kafka.md)::

    ensure_jars(version=None) -> Path                 resolve the broker classpath once (mvn)
    LocalKafka.start(data_dir, nodes=1, port=None)    start or adopt a 1- or 3-node cluster
        .bootstrap  .stop()  .kill_node(id)  .restart_node(id)  .status()  .wait_in_sync()
    running(data_dir) -> LocalKafka | None            the cluster there, if it is up
    stop(data_dir) -> bool                            stop it by its PID files
    wait_for_bootstrap(bootstrap, timeout, brokers=1) wait until any Kafka answers
    warm_up(bootstrap)                                create the offsets and transaction topics
    default_data_dir() -> Path                        $SLUICE_KAFKA_DIR or ~/.local/state/...

Command line: ``python -m infra.kafka fetch|start|stop|status [--dir D] [--nodes 1|3] [--port P]``.
"""

from ._cli import default_data_dir
from ._config import ClusterSpec, NodeSpec
from ._errors import (
    BrokerNotReadyError,
    BrokerStartError,
    DataDirMismatchError,
    JarsUnavailableError,
    KafkaInfraError,
    ToolMissingError,
)
from ._jars import ensure_jars, kafka_version, libs_dir, pom_kafka_version
from ._local import LocalKafka, NodeStatus
from ._lookup import running, stop
from ._ready import wait_for_bootstrap, wait_in_sync, warm_up

__all__ = [
    "BrokerNotReadyError",
    "BrokerStartError",
    "ClusterSpec",
    "DataDirMismatchError",
    "JarsUnavailableError",
    "KafkaInfraError",
    "LocalKafka",
    "NodeSpec",
    "NodeStatus",
    "ToolMissingError",
    "default_data_dir",
    "ensure_jars",
    "kafka_version",
    "libs_dir",
    "pom_kafka_version",
    "running",
    "stop",
    "wait_for_bootstrap",
    "wait_in_sync",
    "warm_up",
]
