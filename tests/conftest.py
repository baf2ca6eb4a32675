"""Shared fixtures. Nothing here starts a broker unless a test asks for ``kafka_bootstrap``.

``kafka_bootstrap`` (session scope) takes the first that applies:

1. ``$KAFKA_BOOTSTRAP``: an external cluster; waits until it lists a broker;
2. a Docker engine that answers ``ping`` (and ``SLUICE_KAFKA_TESTCONTAINERS`` is not ``0``):
   testcontainers ``confluentinc/cp-kafka:7.6.0`` in KRaft mode (warmed up like the local one);
3. otherwise the local Apache Kafka of ``infra.kafka`` (jars from Maven Central, JVM in a temp
   dir), tied to this process so an aborted session leaves no JVM behind.

It is started once per session and stopped at its end. The terminal summary names the backend.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

_BACKEND_KEY = pytest.StashKey[str]()
_CP_KAFKA_IMAGE = "confluentinc/cp-kafka:7.6.0"


def _docker_answers() -> bool:
    if os.environ.get("SLUICE_KAFKA_TESTCONTAINERS", "1") == "0":
        return False
    try:
        import docker

        docker.from_env(timeout=2).ping()
    except Exception:  # no socket, no daemon, no permission: all mean "no Docker"
        return False
    return True


@pytest.fixture(scope="session")
def kafka_bootstrap(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """``bootstrap.servers`` of a real Kafka broker for this test session."""
    from infra.kafka import KafkaInfraError, LocalKafka, wait_for_bootstrap, warm_up

    stash = request.config.stash
    if external := os.environ.get("KAFKA_BOOTSTRAP"):
        seconds = wait_for_bootstrap(external, timeout=60.0, probe=False)
        stash[_BACKEND_KEY] = f"external KAFKA_BOOTSTRAP={external} (answered in {seconds:.1f}s)"
        yield external
        return
    if _docker_answers():
        from testcontainers.community.kafka import KafkaContainer

        began = time.monotonic()
        with KafkaContainer(_CP_KAFKA_IMAGE).with_kraft() as container:
            bootstrap = str(container.get_bootstrap_server())
            wait_for_bootstrap(bootstrap, timeout=60.0)
            warm_up(bootstrap)
            took = time.monotonic() - began
            stash[_BACKEND_KEY] = f"testcontainers {_CP_KAFKA_IMAGE} at {bootstrap} ({took:.1f}s)"
            yield bootstrap
        return
    data_dir = tmp_path_factory.mktemp("kafka")
    try:
        cluster = LocalKafka.start(data_dir, nodes=1, tie_to_parent=True)
    except KafkaInfraError as exc:
        pytest.fail(
            "no Kafka for this test: set KAFKA_BOOTSTRAP, run a Docker engine, or let "
            f"infra.kafka start a local broker (needs java 17+ and mvn): {exc}",
            pytrace=False,
        )
    stash[_BACKEND_KEY] = (
        f"local Apache Kafka {cluster.spec.version} at {cluster.bootstrap} "
        f"(started in {cluster.start_seconds or 0.0:.1f}s, data in {data_dir})"
    )
    try:
        yield cluster.bootstrap
    finally:
        cluster.stop()


class UniqueNames(str):
    """A suffix no other test (or earlier run against the same broker) uses.

    It is a ``str`` (``f"orders-{unique}"`` works), and ``unique("orders")`` gives
    ``"orders-<suffix>"``, the same string every time within one test.
    """

    __slots__ = ()

    @property
    def suffix(self) -> str:
        """The suffix as a plain ``str``."""
        return str.__str__(self)

    def __call__(self, prefix: str) -> str:
        return f"{prefix}-{self.suffix}"


@pytest.fixture
def unique(request: pytest.FixtureRequest) -> UniqueNames:
    """Unique topic / group / transactional-id names for one test (see ``UniqueNames``)."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", request.node.name).strip("-").lower()[:40]
    return UniqueNames(f"{slug}-{uuid.uuid4().hex[:10]}")


def pytest_configure(config: pytest.Config) -> None:
    """A session stopped with SIGTERM (CI's ``timeout``, ``kill``) stops as Ctrl-C does, so
    the fixtures' teardown stops the systems the tests started (their own process groups)."""
    del config
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupted)


def _interrupted(signum: int, frame: object) -> None:
    del frame
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say which Kafka the session used, if any test asked for one."""
    backend = terminalreporter.config.stash.get(_BACKEND_KEY, None)
    if backend is not None:
        terminalreporter.write_line(f"kafka: {backend}")


@pytest.fixture(scope="session")
def schema_registry_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real schema registry with the Confluent REST API for this test session.

    ``$SLUICE_SCHEMA_REGISTRY_URL`` if set; otherwise ``infra.registry`` starts Apicurio Registry
    (built from Maven Central on first use, minutes) on a free port, tied to this process.
    """
    if external := os.environ.get("SLUICE_SCHEMA_REGISTRY_URL"):
        yield external
        return
    yield from _local_registry(tmp_path_factory)


@pytest.fixture
def own_schema_registry_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A registry of this test alone, for a test that registers versions other tests must not
    see as their subject's latest (an old client's schema)."""
    yield from _local_registry(tmp_path_factory)


def _local_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import socket

    from infra.registry import LocalRegistry, RegistryInfraError

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    try:
        registry = LocalRegistry.start(tmp_path_factory.mktemp("registry"), port,
                                       tie_to_parent=True)
    except RegistryInfraError as exc:
        pytest.fail(f"no schema registry for this test: set SLUICE_SCHEMA_REGISTRY_URL or let "
                    f"infra.registry build and start one (needs java 17+ and mvn): {exc}",
                    pytrace=False)
    try:
        yield registry.url
    finally:
        registry.stop()
