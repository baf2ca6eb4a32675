"""``python -m infra.kafka fetch|start|stop|status``.

stdout carries only the useful value (the libs path for ``fetch``, the bootstrap for ``start``
and ``status``), so scripts can write ``BOOTSTRAP=$(python -m infra.kafka start)``; messages go
to stderr. Exit status: 0 on success, 1 if ``status`` finds nothing running, 2 on errors.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from ._errors import KafkaInfraError
from ._jars import ensure_jars, kafka_version
from ._local import DEFAULT_START_TIMEOUT_S, LocalKafka
from ._lookup import running, stop


def default_data_dir() -> Path:
    """``$SLUICE_KAFKA_DIR`` if set, else ``~/.local/state/sluice/kafka``."""
    if override := os.environ.get("SLUICE_KAFKA_DIR"):
        return Path(override).expanduser()
    return Path.home() / ".local" / "state" / "sluice" / "kafka"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m infra.kafka", description="A local Apache Kafka (KRaft) without Docker."
    )
    parser.add_argument("command", choices=["fetch", "start", "stop", "status"])
    parser.add_argument(
        "--dir", type=Path, default=None,
        help="data directory (default: $SLUICE_KAFKA_DIR or ~/.local/state/sluice/kafka)",
    )
    parser.add_argument("--nodes", type=int, choices=[1, 3], default=1, help="cluster size")
    parser.add_argument("--port", type=int, default=None, help="client port of node 1")
    parser.add_argument("--secure", action="store_true",
                        help="SASL_SSL (SCRAM-SHA-512) with a local CA and ACLs")
    parser.add_argument("--heap", default=None, help='JVM heap flags, e.g. "-Xms1g -Xmx1g"')
    parser.add_argument(
        "--proxied", default=None, metavar="LISTEN:ADVERTISED",
        help="a second PLAINTEXT listener on port LISTEN that advertises port ADVERTISED, where "
             "a test's TCP proxy listens (to cut one client's path to the broker)",
    )
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_START_TIMEOUT_S, help="seconds to wait"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    return parser


def _status(data_dir: Path) -> int:
    cluster = running(data_dir)
    if cluster is None:
        from ._config import load_spec  # noqa: PLC0415 - only for the "not running" report

        spec = load_spec(data_dir)
        if spec is None:
            print(f"no Kafka in {data_dir}", file=sys.stderr)
            return 1
        partial = LocalKafka(data_dir, spec)
        for node in partial.status():
            print(
                f"node {node.node_id} {node.address} pid={node.pid} answering={node.answering}",
                file=sys.stderr,
            )
        print(f"Kafka in {data_dir} is not (fully) running", file=sys.stderr)
        return 1
    for node in cluster.status():
        print(f"node {node.node_id} {node.address} pid={node.pid}", file=sys.stderr)
    print(cluster.bootstrap)
    return 0


def _ports(text: str | None) -> tuple[int, int] | None:
    """``LISTEN:ADVERTISED`` as two ports (``--proxied``); SystemExit when it is not that."""
    if text is None:
        return None
    listen, _, advertised = text.partition(":")
    if not (listen.isdigit() and advertised.isdigit()):
        raise SystemExit(f"--proxied {text!r}: expected LISTEN:ADVERTISED, two port numbers")
    return int(listen), int(advertised)


def main(argv: list[str] | None = None) -> int:
    """Run one command; return the process exit status."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    data_dir = (args.dir or default_data_dir()).expanduser().resolve()
    try:
        if args.command == "fetch":
            print(ensure_jars())
            return 0
        if args.command == "start":
            cluster = LocalKafka.start(
                data_dir, nodes=args.nodes, port=args.port, heap=args.heap, timeout=args.timeout,
                secure=args.secure, proxied=_ports(args.proxied),
            )
            seconds = cluster.start_seconds or 0.0
            what = "already running" if cluster.was_running else f"started in {seconds:.1f}s"
            print(f"Kafka {kafka_version()} {what} in {data_dir}", file=sys.stderr)
            print(cluster.bootstrap)
            return 0
        if args.command == "stop":
            was = stop(data_dir)
            print(f"{'stopped' if was else 'nothing running in'} {data_dir}", file=sys.stderr)
            return 0
        return _status(data_dir)
    except KafkaInfraError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
