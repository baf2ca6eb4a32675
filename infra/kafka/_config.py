"""Cluster layout on disk and the ``server.properties`` of each KRaft node.

A data directory looks like this::

    <dir>/cluster.json               ClusterSpec: cluster id, Kafka version, node ids and ports
    <dir>/.lock                      flock taken while starting or stopping
    <dir>/node-<id>/server.properties
    <dir>/node-<id>/broker.pid       PID of the running JVM (removed when it is stopped)
    <dir>/node-<id>/broker.log       the JVM's stdout and stderr
    <dir>/node-<id>/data/            log.dirs (meta.properties marks formatted storage)

Every node is ``broker,controller`` with a static quorum (``controller.quorum.voters``), so
formatting needs no ``--standalone`` and all nodes are formatted alike.
"""

from __future__ import annotations

import base64
import json
import resource
import socket
import uuid
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path

LOOPBACK = "127.0.0.1"
SPEC_FILE = "cluster.json"


@dataclass(frozen=True)
class NodeSpec:
    """One KRaft node: ``node.id``, its client (PLAINTEXT) port and its controller port."""

    node_id: int
    port: int
    controller_port: int
    host: str = LOOPBACK
    users_port: int = 0  # a secured cluster's PLAINTEXT users' listener (0: none)

    @property
    def address(self) -> str:
        """``host:port`` of the client listener."""
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class ClusterSpec:
    """What ``cluster.json`` records, so a restart reuses the same id, version and ports."""

    cluster_id: str
    version: str
    nodes: tuple[NodeSpec, ...]
    secure: bool = False  # SASL_SSL + ACLs (see infra/kafka/_tls.py)

    @property
    def bootstrap(self) -> str:
        """Comma-separated ``host:port`` of every node's client listener."""
        return ",".join(node.address for node in self.nodes)

    @property
    def users_bootstrap(self) -> str:
        """A secured cluster's users' listener (PLAINTEXT, principal ``ANONYMOUS``, held to
        what its ACLs allow), ``host:port`` of every node; ``""`` when it has none."""
        if not self.secure or not all(node.users_port for node in self.nodes):
            return ""
        return ",".join(f"{node.host}:{node.users_port}" for node in self.nodes)

    def node(self, node_id: int) -> NodeSpec:
        """The node with ``node.id == node_id``; ``ValueError`` if there is none."""
        for node in self.nodes:
            if node.node_id == node_id:
                return node
        known = [n.node_id for n in self.nodes]
        raise ValueError(f"no node {node_id} in this cluster (node ids: {known})")


def node_dir(data_dir: Path, node_id: int) -> Path:
    """``<data_dir>/node-<id>``."""
    return data_dir / f"node-{node_id}"


def new_cluster_id() -> str:
    """A Kafka cluster id: base64url of a random UUID without padding (as ``Uuid.randomUuid``)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):  # Kafka refuses ids that look like a command-line flag
            return text


def pick_free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """``count`` distinct ports the kernel reports free on ``host`` (all held until all picked)."""
    with ExitStack() as stack:
        ports: list[int] = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((host, 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


def plan_cluster(nodes: int, port: int | None, version: str, secure: bool = False) -> ClusterSpec:
    """A new cluster of ``nodes`` nodes; ``port`` (if given) is node 1's client port."""
    if nodes < 1:
        raise ValueError(f"nodes must be >= 1, got {nodes}")
    free = pick_free_ports((3 if secure else 2) * nodes)
    if port is not None:
        free = [p for p in free if p != port]
    specs = []
    for index in range(nodes):
        client = port if (index == 0 and port is not None) else free.pop()
        specs.append(NodeSpec(node_id=index + 1, port=client, controller_port=free.pop(),
                              users_port=free.pop() if secure else 0))
    return ClusterSpec(
        cluster_id=new_cluster_id(), version=version, nodes=tuple(specs), secure=secure
    )


def with_fresh_ports(spec: ClusterSpec, keep_port: int | None) -> ClusterSpec:
    """The same cluster on newly picked ports (node 1 keeps ``keep_port`` if given)."""
    fresh = plan_cluster(len(spec.nodes), keep_port, spec.version, spec.secure)
    return ClusterSpec(spec.cluster_id, spec.version, fresh.nodes, spec.secure)


def with_users_ports(spec: ClusterSpec) -> ClusterSpec:
    """A secured cluster recorded before it had a users' listener, given one on each node."""
    if not spec.secure or all(node.users_port for node in spec.nodes):
        return spec
    taken = {p for n in spec.nodes for p in (n.port, n.controller_port, n.users_port)}
    free = [p for p in pick_free_ports(len(spec.nodes) + 3) if p not in taken]
    nodes = tuple(
        node if node.users_port else NodeSpec(node.node_id, node.port, node.controller_port,
                                              node.host, free.pop())
        for node in spec.nodes)
    return ClusterSpec(spec.cluster_id, spec.version, nodes, spec.secure)


def with_client_port(spec: ClusterSpec, port: int) -> ClusterSpec:
    """The same cluster with node 1 listening for clients on ``port``."""
    first, *rest = spec.nodes
    moved = NodeSpec(first.node_id, port, first.controller_port, first.host)
    return ClusterSpec(spec.cluster_id, spec.version, (moved, *rest), spec.secure)


def save_spec(data_dir: Path, spec: ClusterSpec) -> None:
    """Write ``cluster.json`` atomically."""
    data_dir.mkdir(parents=True, exist_ok=True)
    tmp = data_dir / f".{SPEC_FILE}.tmp"
    tmp.write_text(json.dumps(asdict(spec), indent=2) + "\n", encoding="utf-8")
    tmp.replace(data_dir / SPEC_FILE)


def load_spec(data_dir: Path) -> ClusterSpec | None:
    """Read ``cluster.json``; ``None`` if the directory holds no cluster."""
    path = data_dir / SPEC_FILE
    if not path.exists():
        return None
    raw = json.loads(path.read_text(encoding="utf-8"))
    nodes = tuple(NodeSpec(**node) for node in raw["nodes"])
    return ClusterSpec(cluster_id=raw["cluster_id"], version=raw["version"], nodes=nodes,
                       secure=bool(raw.get("secure", False)))


def connection_limits(secure: bool, nofile: int | None = None) -> dict[str, int]:
    """Caps on the broker's open connections, under its file descriptor limit (``nofile``:
    the hard limit of the processes started here, which the JVM raises its own to).

    Any local user may open TCP connections to any listener, unauthenticated: 20,000 to the
    users' listener took every descriptor of the bundled broker (limit 20,000) and it died
    ("Too many open files" flushing the metadata log: a fatal fault; red team, 8 Dec 2026).
    Half the descriptors may be connections (the rest: log segments, indexes, jars); the users'
    listener may hold an eighth (at most 1,000), so a stranger filling it leaves the
    services' listener free, and what he holds blocks new users' connections only."""
    if nofile is None:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        nofile = 65536 if hard == resource.RLIM_INFINITY else int(hard)
    limits = {"max.connections": max(64, nofile // 2)}
    if secure:
        limits["listener.name.users.max.connections"] = max(16, min(1000, nofile // 8))
    return limits


def server_properties(
    spec: ClusterSpec, node: NodeSpec, log_dir: Path, secure: dict[str, object] | None = None,
    proxied: tuple[int, int] | None = None,
) -> str:
    """``server.properties`` of ``node``, sized for a small test machine (notes §5.3).

    ``secure`` (from ``_tls.secure_properties``) turns the client listener into SASL_SSL and
    the controller listener into mutual TLS, and adds the authorizer.

    ``proxied`` (listen port, advertised port; PLAINTEXT only) adds a second client listener
    that advertises another port: a client bootstrapped there is told to connect to the
    advertised port for everything, so a TCP proxy listening there carries all of that client's
    traffic and can cut it (tests of a node daemon cut off from the broker).

    One node: every internal topic has replication 1. Three or more: replication 3 and
    ``min.insync.replicas=2``, so one node can fail while ``acks=all`` still succeeds.
    """
    size = len(spec.nodes)
    replication = min(3, size)
    min_isr = 2 if size >= 3 else 1
    voters = ",".join(f"{n.node_id}@{n.host}:{n.controller_port}" for n in spec.nodes)
    client = "SASL_SSL" if secure else "PLAINTEXT"
    controller = "SSL" if secure else "PLAINTEXT"
    listeners = f"{client}://{node.host}:{node.port},CONTROLLER://{node.host}:{node.controller_port}"
    advertised = f"{client}://{node.host}:{node.port}"
    protocols = f"CONTROLLER:{controller},{client}:{client}"
    if secure and node.users_port:  # users: PLAINTEXT as ANONYMOUS, what the ACLs allow
        listeners += f",USERS://{node.host}:{node.users_port}"
        advertised += f",USERS://{node.host}:{node.users_port}"
        protocols += ",USERS:PLAINTEXT"
    if proxied is not None and not secure:
        listeners += f",PROXIED://{node.host}:{proxied[0]}"
        advertised += f",PROXIED://{node.host}:{proxied[1]}"
        protocols += ",PROXIED:PLAINTEXT"
    settings: dict[str, object] = {
        "process.roles": "broker,controller",
        "node.id": node.node_id,
        "controller.quorum.voters": voters,
        "listeners": listeners,
        "advertised.listeners": advertised,
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": client,
        "listener.security.protocol.map": protocols,
        "log.dirs": str(log_dir),
        "num.network.threads": 2,
        "num.io.threads": 2,
        "num.partitions": 1,
        "default.replication.factor": replication,
        "min.insync.replicas": min_isr,
        "offsets.topic.replication.factor": replication,
        "offsets.topic.num.partitions": 1,  # default 50: the first group join is much faster
        "transaction.state.log.replication.factor": replication,
        "transaction.state.log.min.isr": min_isr,
        "transaction.state.log.num.partitions": 1,
        "share.coordinator.state.topic.replication.factor": replication,
        "share.coordinator.state.topic.min.isr": min_isr,
        "group.initial.rebalance.delay.ms": 0,  # default 3000 delays every first join
        # A member speaking the consumer protocol (KIP-848) may not take over a classic group
        # that has members (Kafka 4's default, bidirectional, converts it and lets the broker's
        # assignor split its partitions with the newcomer): on the users' listener every client
        # is ANONYMOUS, and another user's librdkafka (group.protocol=consumer) took all the
        # job starts of a TypeScript client's group that way (red team, 8 Dec 2026).
        "group.consumer.migration.policy": "disabled",
        # Sluice commits no offset metadata; at Kafka's 4096 bytes a partition each, commits
        # into new groups (any name a principal may READ) held ~53 KB of heap a group: a local
        # user's 20,000 killed the bundled broker (OutOfMemoryError, red team 8 Dec 2026)
        "offset.metadata.max.bytes": 64,
        # workers may ask for a session timeout down to 2 s (SLUICE_WORKER_SESSION_TIMEOUT):
        # a SIGKILLed worker's shards move sooner (Kafka's default floor is 6 s)
        "group.min.session.timeout.ms": 2000,
        # a SIGKILLed node is fenced after 4 s instead of 9 s (failure tests wait less)
        "broker.heartbeat.interval.ms": 1000,
        "broker.session.timeout.ms": 4000,
        # Several nodes: no controlled shutdown. Stopping the whole cluster takes the controller
        # quorum away, and the last broker would then wait (minutes) for an approval that cannot
        # come. A stopped node is fenced after the session timeout instead; its logs stay clean.
        "controlled.shutdown.enable": "true" if size == 1 else "false",
        "auto.create.topics.enable": "false",  # faust declares its topics, tests use AdminClient
        "log.cleaner.dedupe.buffer.size": 32 * 1024 * 1024,  # default 128 MiB of heap
        "log.retention.hours": 168,
        "log.segment.bytes": 1073741824,
        **connection_limits(secure=bool(secure) and bool(node.users_port)),
        **(secure or {}),
    }
    lines = [f"# written by infra/kafka for node {node.node_id} of cluster {spec.cluster_id}"]
    lines += [f"{key}={value}" for key, value in settings.items()]
    return "\n".join(lines) + "\n"
