"""``sluice up`` and ``sluice down``: the whole system on one machine, and its end.

``up`` uses the broker at ``KAFKA_BOOTSTRAP`` if one answers there, otherwise starts a local
single-node KRaft broker from the Maven Central jars (``infra.kafka``); then it creates the
topics and starts the worker, the projections and N node daemons as background processes.
Their PIDs go to ``$SLUICE_HOME/run/*.pid`` and their logs to ``$SLUICE_HOME/logs/``. ``down``
stops exactly those PIDs (SIGTERM, then SIGKILL), node daemons first, and the broker only if
``up`` started it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from cli.client import Client
from streams.admin import wait_for_broker
from streams.settings import Settings, system_file_path
from streams.state_dir import make_private

__all__ = ["add_parsers", "start_process", "stop_process"]

_MARKER = "cli.main"


def add_parsers(sub: Any) -> None:
    """Register up and down."""
    u = sub.add_parser("up", help="start the whole system (broker if needed, worker, views, nodes)")
    u.add_argument("--nodes", type=int, default=4, help="local node daemons to start")
    u.add_argument("--cpus", type=int, default=4, help="CPUs per local node")
    u.add_argument("--mem", type=int, default=8192, help="MB per local node")
    u.add_argument("--gpus", type=int, default=0, help="GPUs per local node")
    u.add_argument("--timeout", type=float, default=180.0,
                   help="seconds to wait for every process to be ready (default: 180)")
    u.add_argument("--no-auth-required", dest="auth_required", action="store_false",
                   help="accept requests without a credential (insecure; docs/security.md)")
    u.add_argument("--brokers", type=int, choices=[1, 3], default=1,
                   help="size of the local KRaft cluster started when no broker answers "
                        "(3: topics get replication 3 and min.insync.replicas=2)")
    u.add_argument("--kafka-port", type=int, default=None,
                   help="client port of the local broker's first node (default: 9092)")
    u.add_argument("--api", default=None, help="HOST:PORT of the views' HTTP API "
                                               "(default: $SLUICE_API or 127.0.0.1:6817)")
    u.add_argument("--worker-metrics", default=None,
                   help="HOST:PORT of the worker's /metrics, or 'off' "
                        "(default: $SLUICE_WORKER_METRICS or 127.0.0.1:9108)")
    kafka = u.add_mutually_exclusive_group()
    kafka.add_argument("--secure", action="store_true",
                       help="the bundled broker with SASL_SSL, a local CA and ACLs, one "
                            "principal per process: the default when up starts the broker "
                            "(docs/security.md)")
    kafka.add_argument("--plaintext", action="store_true",
                       help="start the bundled broker PLAINTEXT, without ACLs: any local user "
                            "can then write every topic, the ledger too (tests, benchmarks)")
    u.add_argument("--registry", nargs="?", type=int, const=8081, default=None, metavar="PORT",
                   help="also start a schema registry on 127.0.0.1:PORT (default 8081) and "
                        "register every schema (Confluent framing)")
    u.set_defaults(run=_up)
    d = sub.add_parser("down", help="stop everything sluice up started")
    d.set_defaults(run=_down)


def run_dir(settings: Settings) -> Path:
    path = settings.home / "run"
    path.mkdir(parents=True, exist_ok=True)
    return path


def start_process(
    settings: Settings, name: str, argv: list[str], env: dict[str, str] | None = None
) -> int:
    """Start ``python -m cli.main ARGV`` in the background, logging to ``logs/NAME.log``."""
    logs = settings.home / "logs"
    make_private(logs)  # the logs name the paths a job's launch failed on
    env = {**os.environ, **settings.as_env(), **(env or {})}
    with (logs / f"{name}.log").open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", _MARKER, *argv], stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=env, start_new_session=True,
        )
    (run_dir(settings) / f"{name}.pid").write_text(f"{process.pid}\n")
    return process.pid


def _alive(pid: int) -> bool:
    """Is ``pid`` a live process of ours? A zombie is not; a process whose command line is
    empty is still being exec'ed (or is not readable yet) and counts as alive."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] in {"Z", "X"}:
        return False
    return not cmdline or _MARKER.encode() in cmdline


def _signal_all(pid_files: list[Path]) -> set[Path]:
    """SIGTERM every live process of ours named in ``pid_files`` (``stop_process`` then waits
    for each in turn); the pid files of those signalled."""
    signalled: set[Path] = set()
    for pid_file in pid_files:
        try:
            pid = int(pid_file.read_text().strip())
        except (OSError, ValueError):
            continue
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
                signalled.add(pid_file)
    return signalled


def stop_process(pid_file: Path, wait_s: float = 15.0) -> bool:
    """SIGTERM the process in ``pid_file`` (if it is still ours), then SIGKILL; remove the file."""
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        pid_file.unlink(missing_ok=True)
        return False
    stopped = False
    if _alive(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + wait_s
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
        stopped = True
    pid_file.unlink(missing_ok=True)
    return stopped


def _broker(
    settings: Settings, explicit: bool, brokers: int = 1, port: int | None = None
) -> tuple[str, bool]:
    """The bootstrap to use and whether ``up`` started it."""
    try:
        wait_for_broker(settings.bootstrap, timeout_s=3 if not explicit else 30,
                        quiet=not explicit)
        return settings.bootstrap, False
    except TimeoutError:
        if explicit:
            raise
    from infra.kafka import LocalKafka

    what = "a local Kafka (KRaft)" if brokers == 1 else f"a local {brokers}-node Kafka (KRaft)"
    print(f"no broker answers; starting {what} from the Maven Central jars …")
    kafka = LocalKafka.start(settings.home / "kafka", nodes=brokers, port=port)
    return kafka.bootstrap, True


def _secured_broker_dir(settings: Settings) -> bool:
    """Whether ``$SLUICE_HOME/kafka`` holds a secured bundled broker (``sluice up``'s default)."""
    from infra.kafka._config import load_spec

    try:
        spec = load_spec(settings.home / "kafka")
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return spec is not None and spec.secure


def _up(args: argparse.Namespace, settings: Settings) -> int:  # noqa: PLR0915 - the steps of up, in order
    explicit = "KAFKA_BOOTSTRAP" in os.environ
    if args.api:
        settings = settings.with_(api=args.api)
    metrics = args.worker_metrics or os.environ.get("SLUICE_WORKER_METRICS", "127.0.0.1:9108")
    metrics = "" if metrics == "off" else metrics
    run = run_dir(settings)
    fresh = _not_running(run)
    taken = _taken_ports(
        {"projections": settings.api, "worker": metrics}, fresh)
    if taken:
        for name, address in taken:
            print(f"sluice up: {address} (for the {name}) is already in use by another "
                  f"process; choose another with --{_PORT_FLAG[name]}", file=sys.stderr)
        return 1
    from infra.kafka import KafkaInfraError

    role: dict[str, dict[str, str]] = {}
    record: dict[str, Any] = {}
    if args.secure and explicit:
        print("sluice up --secure starts the bundled broker; for a cluster of your own "
              "unset KAFKA_BOOTSTRAP, or use sluice kafka acls apply", file=sys.stderr)
        return 2
    if not explicit and not args.plaintext:  # the bundled broker: secured unless asked not to
        from cli.up_secure import start_secure_broker

        try:
            bootstrap, secure = start_secure_broker(settings, args.brokers, args.kafka_port)
        except (TimeoutError, KafkaInfraError) as exc:
            print(f"sluice up: the broker did not start: {exc}", file=sys.stderr)
            if "holds a PLAINTEXT cluster" in str(exc):
                print("sluice up: that broker is an earlier `sluice up`'s, PLAINTEXT: keep it "
                      "with `sluice up --plaintext` (any local user can then write its "
                      "topics), or `sluice down` and move that directory away for a secured "
                      "one (docs/security.md)", file=sys.stderr)
            return 1
        started = True
        os.environ.update(secure.env("admin"))  # this process creates the topics
        role = {name: secure.env(name) for name in ("worker", "views", "node")}
        user = secure.security("user")
        record = {"kafka": {"security": user.protocol, "ca": user.ca, "user": user.user,
                            "password_file": user.password_file}}
        users = secure.users_bootstrap  # every user's CLI and client: PLAINTEXT, ANONYMOUS
        if users:
            record = {"users_bootstrap": users}
    else:
        if not explicit and _secured_broker_dir(settings):
            print(f"sluice up: {settings.home / 'kafka'} holds this system's secured broker: "
                  "run sluice up without --plaintext (or sluice down and move that directory "
                  "away for a PLAINTEXT one)", file=sys.stderr)
            return 1
        try:
            bootstrap, started = _broker(settings, explicit, args.brokers, args.kafka_port)
        except (TimeoutError, KafkaInfraError) as exc:
            print(f"sluice up: the broker did not start: {exc}", file=sys.stderr)
            return 1
    settings = settings.with_(bootstrap=bootstrap)
    if args.registry is not None:
        from cli.up_registry import start_registry

        try:
            url = start_registry(settings, args.registry)
        except RuntimeError as exc:
            print(f"sluice up: the schema registry did not start: {exc}", file=sys.stderr)
            return 1
        settings = settings.with_(schema_registry_url=url)
        record["schema_registry_url"] = url
        print(f"schema registry at {url} (every schema registered)")
    from agents.auth.node_keys import ensure_keys
    from cli.up_auth import setup_auth, write_client_conf

    ensure_keys(settings)  # node-command signing and sealed --export keys (docs/security.md)
    auth = setup_auth(settings)
    settings = settings.with_(auth=auth.kind, munge_socket=auth.munge_socket,
                              jwt_key=auth.jwt_key)
    if auth.note:
        print(f"sluice up: {auth.note}")
    users = str(record.get("users_bootstrap", ""))
    system_file_path(settings.home).write_text(
        json.dumps({"bootstrap": users or bootstrap, "started_kafka": started,
                    "auth": auth.kind, "munge_socket": auth.munge_socket,
                    "jwt_key": auth.jwt_key, "api": settings.api, **record}) + "\n"
    )
    conf = write_client_conf(settings.with_(bootstrap=users), auth, plaintext=True) if users \
        else write_client_conf(settings, auth)
    from cli.services import prepare_topics

    prepare_topics(settings)
    since_ms = int(time.time() * 1000)
    if "worker" in fresh:
        start_process(settings, "worker", ["worker"], env={"SLUICE_WORKER_METRICS": metrics,
                                                           **role.get("worker", {})})
    if "projections" in fresh:
        start_process(settings, "projections", ["projections"], env=role.get("views"))
    started_nodes: set[str] = set()
    for i in range(1, args.nodes + 1):
        name = f"node{i:02d}"
        if pid_alive(run / f"node-{name}.pid"):
            continue
        started_nodes.add(name)
        start_process(settings, f"node-{name}", [
            "node", "--name", name, "--cpus", str(args.cpus), "--mem", str(args.mem),
            "--gpus", str(args.gpus),
        ], env={**role.get("node", {}), **({"SLUICE_JOB_CONF": str(conf)} if users else {})})
    from cli.up_ready import wait_ready

    status = wait_ready(settings, args.nodes, args.timeout, started_nodes, since_ms, metrics)
    if status == 0 and args.auth_required:
        status = _require_auth(settings)
    if status == 0 and users:
        print(f"sluice up: the broker is secured: the system's processes connect to {bootstrap} "
              f"(SASL_SSL, one principal each); users and clients of any language to {users} "
              "(PLAINTEXT), where they may write requests (each carries its credential) and "
              "read the ledger and the job starts, nothing else (docs/security.md)")
    if status == 0:
        print(f"client configuration for other users: {conf} (copy to /etc/sluice/sluice.conf)")
    return status


AUTH_CONFIG = """\
# sluice up's cluster configuration: the embedded default, with credentials required
# (docs/security.md). Apply your own with 'sluice config apply'; keep AuthRequired in it.
AuthRequired: true
AuthNodeNames: ["node*"]
"""


def _require_auth(settings: Settings) -> int:
    """Apply :data:`AUTH_CONFIG` unless a cluster configuration is in force already."""
    import hashlib

    client = Client(settings)
    if client.get("/v1/config")["config"].get("cluster"):
        return 0
    sluid = client.sluids.new()
    client.send(sluid, "ApplyConfig", {"config_sluid": sluid, "kind": "cluster",
                                       "text": AUTH_CONFIG, "source": "sluice up"})
    digest = hashlib.sha256(AUTH_CONFIG.encode()).hexdigest()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if client.get("/v1/config")["config"].get("cluster", {}).get("digest") == digest:
            print("sluice up: AuthRequired is on: every request needs a credential")
            return 0
        denied = client.denials(sluid)
        if denied:
            print(f"sluice up: the configuration was refused: {denied[-1]['reason']}: "
                  f"{denied[-1]['detail']}", file=sys.stderr)
            return 1
        time.sleep(0.2)
    print("sluice up: the AuthRequired configuration was not applied in time", file=sys.stderr)
    return 1


_PORT_FLAG = {"projections": "api", "worker": "worker-metrics"}


def pid_alive(pid_file: Path) -> bool:
    try:
        return _alive(int(pid_file.read_text()))
    except (OSError, ValueError):
        return False


def _not_running(run: Path) -> set[str]:
    """Which of the worker and the projections ``up`` must start (not already running)."""
    return {name for name in ("worker", "projections") if not pid_alive(run / f"{name}.pid")}


def _taken_ports(addresses: dict[str, str], fresh: set[str]) -> list[tuple[str, str]]:
    """The (process, address) pairs whose port another process already listens on."""
    taken = []
    for name, address in addresses.items():
        if not address or name not in fresh:
            continue
        host, _, port = address.rpartition(":")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host or "127.0.0.1", int(port)))
            except OSError:
                taken.append((name, address))
            except ValueError:
                taken.append((name, address))
    return taken


def _down(args: argparse.Namespace, settings: Settings) -> int:
    run = run_dir(settings)
    nodes = sorted(run.glob("node-*.pid"))
    signalled = _signal_all(nodes)  # they stop together: each takes up to 2 s (its reader's wait)
    order = [*nodes, run / "projections.pid", run / "worker.pid"]
    for pid_file in order:
        if not pid_file.exists():
            continue
        if stop_process(pid_file) or pid_file in signalled:  # it may have ended already
            print(f"stopped {pid_file.stem}")
        else:
            print(f"{pid_file.stem} was not running (it had exited; see "
                  f"{settings.home}/logs/{pid_file.stem}.log)")
    from cli.up_auth import stop_munged

    if stop_munged(settings):
        print("stopped munged")
    from cli.up_registry import stop_registry

    if stop_registry(settings):
        print("stopped the schema registry")
    system = system_file_path(settings.home)
    started = False
    if system.exists():
        started = bool(json.loads(system.read_text()).get("started_kafka"))
        system.unlink()
    if started:
        from infra.kafka import stop

        if stop(settings.home / "kafka"):
            print("stopped the local Kafka broker")
    return 0
