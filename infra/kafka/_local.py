"""``LocalKafka``: a 1- or 3-node KRaft cluster of local JVMs, started from Maven Central jars.

``LocalKafka.start(data_dir, nodes, port)`` does, holding ``<data_dir>/.lock``:

1. load ``cluster.json`` or plan a new cluster (free loopback ports unless ``port`` is given);
2. if every node's PID is alive and its client port answers, return at once (already running);
3. resolve the jars (``ensure_jars``), write each missing node's ``server.properties``, format
   storage where ``meta.properties`` is absent (all nodes in parallel), launch the JVMs;
4. wait until the bootstrap lists every node and a probe topic can be created and deleted,
   then create the group and transaction coordinators' topics (``warm_up``).

On failure the JVMs it launched are stopped and ``BrokerStartError`` carries the log tails.
``stop()`` signals exactly the PIDs in the node PID files (SIGTERM, wait, SIGKILL).

``secure=True`` (recorded in ``cluster.json``; a secured cluster stays secured) makes the CA,
broker keystore and admin password (``_tls.ensure_tls``), formats storage with the admin's
SCRAM-SHA-512 credential and runs SASL_SSL with StandardAuthorizer ACLs; ``client_config``
then carries the admin's librdkafka settings.
"""

from __future__ import annotations

import fcntl
import logging
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from ._config import (
    ClusterSpec,
    NodeSpec,
    load_spec,
    node_dir,
    plan_cluster,
    save_spec,
    server_properties,
    with_client_port,
    with_fresh_ports,
    with_users_ports,
)
from ._errors import BrokerNotReadyError, BrokerStartError, DataDirMismatchError
from ._jars import ensure_jars, kafka_version, require_tool
from ._process import (
    broker_command,
    format_command,
    launch,
    live_pid,
    log_tail,
    send,
    stop_pids,
    wait_gone,
)
from ._ready import wait_for_bootstrap, wait_in_sync, warm_up
from ._tls import ADMIN_USER, TlsFiles, admin_client_config, ensure_tls, secure_properties

log = logging.getLogger(__name__)

DEFAULT_START_TIMEOUT_S = 120.0
DEFAULT_STOP_TIMEOUT_S = 30.0
_FORMAT_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class NodeStatus:
    """What ``status`` reports for one node."""

    node_id: int
    address: str
    pid: int | None
    answering: bool


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def _port_answers(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


@contextmanager
def _dir_lock(data_dir: Path) -> Iterator[None]:
    data_dir.mkdir(parents=True, exist_ok=True)
    with (data_dir / ".lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class LocalKafka:
    """A local KRaft cluster rooted at ``data_dir`` (see the module doc for the layout)."""

    def __init__(
        self,
        data_dir: Path,
        spec: ClusterSpec,
        *,
        heap: str | None = None,
        tie_to_parent: bool = False,
        proxied: tuple[int, int] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.spec = spec
        self._proxied = proxied  # a second listener, advertised elsewhere (server_properties)
        self.start_seconds: float | None = None
        self.was_running = False
        self._heap = heap
        self._tie_to_parent = tie_to_parent
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    # --- starting -----------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        data_dir: str | Path,
        nodes: int = 1,
        port: int | None = None,
        *,
        heap: str | None = None,
        timeout: float = DEFAULT_START_TIMEOUT_S,
        tie_to_parent: bool = False,
        version: str | None = None,
        secure: bool = False,
        proxied: tuple[int, int] | None = None,
    ) -> LocalKafka:
        """Start (or adopt) the cluster in ``data_dir`` and return it once it is ready.

        ``port`` is node 1's client port (others are picked free and kept in ``cluster.json``).
        ``heap`` overrides the JVM heap flags (default ``-Xms256m -Xmx1g``).
        ``tie_to_parent`` makes the JVMs exit when the calling process dies (test sessions).
        ``proxied`` (listen port, advertised port): node 1 gets a second PLAINTEXT listener
        that advertises another port, where a test's TCP proxy listens (``server_properties``).
        """
        root = Path(data_dir).expanduser().resolve()
        begun = time.monotonic()
        with _dir_lock(root):
            spec, fresh = cls._resolve_spec(root, nodes, port, version or kafka_version(), secure)
            cluster = cls(root, spec, heap=heap, tie_to_parent=tie_to_parent, proxied=proxied)
            if cluster.all_answering():
                log.info("Kafka already running in %s: %s", root, spec.bootstrap)
                cluster.start_seconds = 0.0
                cluster.was_running = True
                return cluster
            try:
                cluster._boot(timeout)
            except BrokerStartError as exc:
                if not (fresh and port is None and "Address already in use" in str(exc)):
                    raise
                log.warning("port clash while starting %s; retrying on fresh ports", root)
                cluster.spec = with_fresh_ports(spec, None)
                cluster._boot(timeout)
        cluster.start_seconds = time.monotonic() - begun
        log.info(
            "Kafka %s ready in %.1fs: %s", spec.version, cluster.start_seconds, cluster.bootstrap
        )
        return cluster

    @staticmethod
    def _resolve_spec(
        root: Path, nodes: int, port: int | None, version: str, secure: bool = False
    ) -> tuple[ClusterSpec, bool]:
        spec = load_spec(root)
        if spec is None:
            return plan_cluster(nodes, port, version, secure), True
        if secure and not spec.secure:
            raise DataDirMismatchError(
                f"{root} holds a PLAINTEXT cluster: a secured one needs another directory"
            )
        if spec.secure and not secure:
            raise DataDirMismatchError(
                f"{root} holds a secured (SASL_SSL) cluster: a PLAINTEXT one needs another "
                "directory"
            )
        if len(spec.nodes) != nodes:
            raise DataDirMismatchError(
                f"{root} holds a {len(spec.nodes)}-node cluster, not {nodes}: "
                "use another directory or remove this one"
            )
        if _version_key(spec.version) > _version_key(version):
            raise DataDirMismatchError(
                f"{root} was formatted by Kafka {spec.version}; the jars are {version}, and "
                "storage is not forward-compatible: use another directory or newer jars"
            )
        if port is not None and port != spec.nodes[0].port:
            if live_pid(*_pid_and_props(root, spec.nodes[0])) is not None:
                raise DataDirMismatchError(
                    f"{root} is running on port {spec.nodes[0].port}; stop it to move to {port}"
                )
            spec = with_client_port(spec, port)
        if spec.version != version:
            spec = ClusterSpec(spec.cluster_id, version, spec.nodes, spec.secure)
        return with_users_ports(spec), False

    def _boot(self, timeout: float) -> None:
        """Launch every node that is not running and wait until the cluster is ready."""
        save_spec(self.data_dir, self.spec)
        if self.spec.secure:
            self.data_dir.chmod(0o700)  # the metadata log holds the SCRAM salted hashes
            ensure_tls(self.data_dir)
        libs = ensure_jars(self.spec.version)
        java = require_tool("java")
        missing = [n for n in self.spec.nodes if self._live_pid(n) is None]
        for node in missing:
            self._write_properties(node)
        self._format(java, libs, [n for n in missing if not self._formatted(n)])
        for node in missing:
            self._launch(java, libs, node)
        deadline = time.monotonic() + timeout
        try:
            wait_for_bootstrap(
                self.bootstrap, timeout, brokers=len(self.spec.nodes), died=self._death_report,
                client=self.client_config,
            )
            warm_up(self.bootstrap, max(5.0, deadline - time.monotonic()), self.client_config)
        except BrokerNotReadyError as exc:
            tails = self._log_tails([n.node_id for n in missing])
            self._stop_unlocked(DEFAULT_STOP_TIMEOUT_S, only={n.node_id for n in missing})
            raise BrokerStartError(f"{exc}\n{tails}") from exc

    def _write_properties(self, node: NodeSpec) -> None:
        directory = node_dir(self.data_dir, node.node_id)
        (directory / "data").mkdir(parents=True, exist_ok=True)
        secure = secure_properties(self.tls) if self.tls is not None else None
        proxied = self._proxied if node.node_id == self.spec.nodes[0].node_id else None
        text = server_properties(self.spec, node, directory / "data", secure, proxied)
        path = directory / "server.properties"
        path.touch(mode=0o600)
        path.chmod(0o600)  # a secured node's file holds the keystore and admin passwords
        path.write_text(text, encoding="utf-8")

    def _formatted(self, node: NodeSpec) -> bool:
        return (node_dir(self.data_dir, node.node_id) / "data" / "meta.properties").exists()

    def _format(self, java: str, libs: Path, nodes: list[NodeSpec]) -> None:
        """Run ``StorageTool format`` for ``nodes`` in parallel (about 1 s of JVM each)."""
        running: list[tuple[NodeSpec, subprocess.Popen[bytes]]] = []
        for node in nodes:
            directory = node_dir(self.data_dir, node.node_id)
            properties = directory / "server.properties"
            command = format_command(java, libs, properties, self.spec.cluster_id, self._scram())
            with (directory / "broker.log").open("ab") as out:
                proc = subprocess.Popen(
                    command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
                )
            running.append((node, proc))
        failed = []
        for node, proc in running:
            try:
                code = proc.wait(_FORMAT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            if code != 0:
                failed.append(node.node_id)
        if failed:
            raise BrokerStartError(f"formatting storage failed\n{self._log_tails(failed)}")

    def _scram(self) -> list[str]:
        """The admin's SCRAM credential for ``format`` (other principals: ``sluice kafka``)."""
        if self.tls is None:
            return []
        return [f"SCRAM-SHA-512=[name={ADMIN_USER},password={self.tls.admin_password()}]"]

    def _launch(self, java: str, libs: Path, node: NodeSpec) -> None:
        directory = node_dir(self.data_dir, node.node_id)
        command = broker_command(java, libs, directory / "server.properties", self._heap)
        self._children[node.node_id] = launch(
            command, directory / "broker.log", directory / "broker.pid",
            tie_to_parent=self._tie_to_parent,
        )

    def _death_report(self) -> str | None:
        dead = [
            f"node {node_id} exited with status {proc.returncode} during start-up"
            for node_id, proc in sorted(self._children.items())
            if proc.poll() is not None
        ]
        return "; ".join(dead) or None

    def _log_tails(self, node_ids: list[int]) -> str:
        parts = []
        for node_id in node_ids:
            path = node_dir(self.data_dir, node_id) / "broker.log"
            parts.append(f"--- tail of {path} ---\n{log_tail(path)}")
        return "\n".join(parts)

    # --- inspecting ---------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """``bootstrap.servers`` for clients: every node's ``127.0.0.1:port``."""
        return self.spec.bootstrap

    @property
    def users_bootstrap(self) -> str:
        """A secured cluster's users' listener (PLAINTEXT, ``ANONYMOUS``); ``""`` if none."""
        return self.spec.users_bootstrap

    @property
    def tls(self) -> TlsFiles | None:
        """The TLS files of a secured cluster (None for PLAINTEXT)."""
        return TlsFiles(self.data_dir / "tls") if self.spec.secure else None

    @property
    def client_config(self) -> dict[str, str] | None:
        """librdkafka settings of the super-user ``admin`` (None for PLAINTEXT)."""
        return admin_client_config(self.tls) if self.tls is not None else None

    @property
    def nodes(self) -> tuple[NodeSpec, ...]:
        """The nodes of this cluster (ids 1..N)."""
        return self.spec.nodes

    def _live_pid(self, node: NodeSpec) -> int | None:
        return live_pid(*_pid_and_props(self.data_dir, node))

    def pid(self, node_id: int) -> int | None:
        """PID of node ``node_id``'s JVM if it is running."""
        return self._live_pid(self.spec.node(node_id))

    def status(self) -> list[NodeStatus]:
        """PID and client-port reachability of every node."""
        return [
            NodeStatus(n.node_id, n.address, self._live_pid(n), _port_answers(n.host, n.port))
            for n in self.spec.nodes
        ]

    def all_answering(self) -> bool:
        return all(s.pid is not None and s.answering for s in self.status())

    def wait_in_sync(self, timeout: float = 60.0) -> None:
        """Block until every partition's ISR holds all its replicas."""
        wait_in_sync(self.bootstrap, timeout, self.client_config)

    # --- stopping and failure injection -------------------------------------------------

    def stop(self, timeout: float = DEFAULT_STOP_TIMEOUT_S) -> None:
        """Stop every node: SIGTERM to the PIDs in the PID files, wait ``timeout``, SIGKILL."""
        with _dir_lock(self.data_dir):
            self._stop_unlocked(timeout)

    def _stop_unlocked(self, timeout: float, only: set[int] | None = None) -> None:
        nodes = [n for n in self.spec.nodes if only is None or n.node_id in only]
        pids = {n.node_id: pid for n in nodes if (pid := self._live_pid(n)) is not None}
        killed = stop_pids(list(pids.values()), timeout)
        if killed:
            log.warning("SIGKILLed Kafka PIDs %s after %.0fs", killed, timeout)
        for node in nodes:
            self._forget(node.node_id)

    def _forget(self, node_id: int) -> None:
        (node_dir(self.data_dir, node_id) / "broker.pid").unlink(missing_ok=True)
        if (child := self._children.pop(node_id, None)) is not None:
            child.poll()

    def kill_node(self, node_id: int) -> None:
        """SIGKILL node ``node_id`` (a crash, no controlled shutdown) and wait until it is gone."""
        node = self.spec.node(node_id)
        with _dir_lock(self.data_dir):
            pid = self._live_pid(node)
            if pid is not None:
                send(pid, signal.SIGKILL)
                wait_gone(pid, 10.0)
            self._forget(node_id)

    def restart_node(self, node_id: int, timeout: float = 60.0) -> None:
        """Start node ``node_id`` again (stopping it first if it runs) and wait until it serves."""
        node = self.spec.node(node_id)
        with _dir_lock(self.data_dir):
            self._stop_unlocked(DEFAULT_STOP_TIMEOUT_S, only={node_id})
            libs = ensure_jars(self.spec.version)
            java = require_tool("java")
            self._write_properties(node)
            self._launch(java, libs, node)
            try:
                wait_for_bootstrap(
                    node.address, timeout, brokers=len(self.spec.nodes),
                    node_ids={node_id}, died=self._death_report, client=self.client_config,
                )
            except BrokerNotReadyError as exc:
                raise BrokerStartError(f"{exc}\n{self._log_tails([node_id])}") from exc

    # --- context manager ----------------------------------------------------------------

    def __enter__(self) -> LocalKafka:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"LocalKafka({str(self.data_dir)!r}, bootstrap={self.bootstrap!r})"


def _pid_and_props(data_dir: Path, node: NodeSpec) -> tuple[Path, Path]:
    directory = node_dir(data_dir, node.node_id)
    return directory / "broker.pid", directory / "server.properties"
