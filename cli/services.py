"""The long-running processes: ``sluice worker``, ``sluice projections``, ``sluice node``."""

from __future__ import annotations

import argparse
import gc
import logging
import os
import signal
import sys
import threading
from typing import Any

from streams.settings import Settings
from streams.state_dir import check_at_start, make_private
from streams.state_lock import hold_state_dir
from streams.topics import Topics

__all__ = ["add_parsers", "prepare_topics"]


def add_parsers(sub: Any) -> None:
    """Register worker, projections and node."""
    w = sub.add_parser("worker", help="run the faust worker (intake, shard scheduler, clock)")
    w.add_argument("--loglevel", default="warning")
    w.set_defaults(run=_worker)
    p = sub.add_parser("projections", help="run the views, their HTTP API and /metrics")
    p.add_argument("--rebuild", action="store_true", help="rebuild from the start of the ledger")
    p.set_defaults(run=_projections)
    n = sub.add_parser("node", help="run a node daemon (like slurmd)")
    n.add_argument("--name", required=True)
    n.add_argument("--cpus", type=int, default=0, help="default: this host's")
    n.add_argument("--mem", type=int, default=0, help="MB; default: this host's")
    n.add_argument("--gpus", type=int, default=0)
    n.add_argument("--gpu-type", default="")
    n.add_argument("--feature", action="append", default=[])
    n.add_argument("--heartbeat", type=float, default=0.0,
                   help="seconds between heartbeats (default: SLUICE_NODE_TIMEOUT / 3)")
    n.add_argument("--kill-wait", type=float, default=10.0, help="SIGTERM→SIGKILL grace")
    n.add_argument("--prolog", default="", help="script run before each run on this node")
    n.add_argument("--epilog", default="", help="script run after each run on this node")
    n.add_argument("--prolog-timeout", type=float, default=60.0)
    n.add_argument("--epilog-timeout", type=float, default=60.0)
    n.add_argument("--start-timeout", type=float, default=30.0,
                   help="seconds a batch command may take to enter its working directory and "
                        "open its output (a hung mount): then it fails StartTimedOut")
    n.add_argument("--proctrack", default=os.environ.get("SLUICE_PROCTRACK", "auto"),
                   choices=("auto", "cgroup", "pgid"),
                   help="auto (cgroup v2 where the host gives one), cgroup, or pgid")
    n.add_argument("--cgroup-parent", default=os.environ.get("SLUICE_CGROUP_PARENT", ""),
                   help="cgroup v2 directory for the runs (default: sluice/ under our own)")
    n.set_defaults(run=_node)


def prepare_topics(settings: Settings) -> Settings:
    """Wait for the broker, create any missing topic of the catalogue, and return the settings
    with the replication factor in force (``min(3, brokers)`` unless ``SLUICE_REPLICATION``)."""
    from streams.admin import (
        effective_replication,
        ensure_topics,
        wait_for_broker,
    )

    wait_for_broker(settings.bootstrap)
    settings = settings.with_(
        replication=effective_replication(settings.bootstrap, settings.replication))
    ensure_topics(settings.bootstrap, Topics(settings).catalogue(), settings.replication)
    return settings


def _worker(args: argparse.Namespace, settings: Settings) -> int:
    from agents.app import create_app
    from agents.log_repeats import quiet_repeats
    from agents.rate_limit import parse_rate_limits
    from agents.stop_deadline import DeadlineWorker

    try:  # the intake's rl_* limits: a bad one stops the worker here, named
        parse_rate_limits(settings.slurmctld_params)
    except ValueError as exc:
        print(f"sluice worker: {exc}", file=sys.stderr)
        return 2
    metrics = os.environ.get("SLUICE_WORKER_METRICS", "")
    if metrics:
        from agents.metrics import start_metrics_server

        host, _, port = metrics.rpartition(":")
        try:  # a second worker meets the first one's port here, before its directory's lock
            start_metrics_server(int(port), host or "127.0.0.1")
        except (OSError, ValueError) as exc:
            print(f"sluice worker: cannot serve metrics on {metrics} (SLUICE_WORKER_METRICS): "
                  f"{exc}", file=sys.stderr)
            return 2
    # read-only: one line, exit 2; full: waited out, said once a minute (streams.state_dir)
    make_private(settings.home / "worker")  # every job's script and command are in its store
    if check_at_start("sluice worker", settings.home / "worker") != 0:
        return 2
    if hold_state_dir("sluice worker", settings.home / "worker") != 0:
        return 2
    settings = prepare_topics(settings)
    if _keys_refused(settings):
        return 2
    quiet_repeats()  # aiokafka's reconnect errors: one line a minute each while the broker is away
    app = create_app(settings)
    worker = DeadlineWorker(app, loglevel=args.loglevel.upper(), quiet=True,
                            logfile=None, redirect_stdouts=False)
    # No terminal spinner: to spin it "for every log message", faust sets the root logger to
    # DEBUG for the worker's whole life (Worker._setup_spinner_handler), so every debug line
    # of aiokafka, faust and mode (several per Kafka request) was built as a record and
    # dropped by the handlers: ~5 % of a busy worker's CPU, on every request's path (issue 17).
    worker.spinner = None
    # Fewer young-generation collections: every request allocates a few hundred short-lived
    # objects (records, facts, faust events), and with the default threshold (700) the cyclic
    # collector ran every few requests; the long-lived shard state is frozen out of its sight
    # after recovery (shard_runner). The simulator uses the same thresholds.
    gc.set_threshold(50_000, 50, 100)
    worker.execute_from_commandline()
    return 0


def _keys_refused(settings: Settings) -> bool:
    """Print what :func:`agents.worker_keys.key_problems` found; True: do not start."""
    from agents.worker_keys import key_problems

    problems = key_problems(settings)
    for line in problems.warnings:
        print(f"sluice worker: warning: {line}", file=sys.stderr)
    for line in problems.refusals:
        print(f"sluice worker: {line}", file=sys.stderr)
    return bool(problems.refusals)


def _projections(args: argparse.Namespace, settings: Settings) -> int:
    from projections.api_auth import ApiViewer
    from projections.http import ApiServer
    from projections.service import ProjectionService

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    make_private(settings.home / "projections")  # every job's script and command are in its store
    if check_at_start("sluice projections", settings.home / "projections") != 0:
        return 2
    if hold_state_dir("sluice projections", settings.home / "projections") != 0:
        return 2
    settings = prepare_topics(settings)
    service = ProjectionService(settings, rebuild=args.rebuild)
    service.forget_another_ledger()  # a store kept while the broker was reset
    host, _, port = settings.api.rpartition(":")
    try:
        api = ApiServer(service, host or "127.0.0.1", int(port), ApiViewer(settings))
    except OSError as exc:  # a port taken, an address not this host's: one line, not a trace
        print(f"sluice projections: cannot serve the API at {settings.api} (SLUICE_API): "
              f"{exc.strerror or exc}", file=sys.stderr)
        service.store.close()
        return 2
    extras = _mount_extras(api, service, settings)
    api.start()
    signal.signal(signal.SIGTERM, lambda *_: service.stop())
    signal.signal(signal.SIGINT, lambda *_: service.stop())
    try:
        service.run()
    finally:
        api.stop()
        if extras is not None:
            extras.stop()  # the relay's queued requests get their delivery
    return 0


def _mount_extras(api: Any, service: Any, settings: Settings) -> Any:
    """Attach the optional projections (metrics, notifications, the request relay) if they
    are installed; the started parts (None when not installed)."""
    try:
        from projections.extras import mount
    except ImportError:
        return None
    return mount(api, service, settings)


def _node(args: argparse.Namespace, settings: Settings) -> int:
    from agents.health_watch import heartbeat_interval_s, node_timeout_s
    from agents.node.daemon import (
        FenceConfigError,
        NodeDaemon,
        NodeResources,
        ProctrackError,
        detect_resources,
    )
    from agents.node.runs import Scripts

    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {args.name} %(message)s")
    if check_at_start("sluice node", settings.home / "nodes" / args.name) != 0:
        return 2
    if hold_state_dir("sluice node", settings.home / "nodes" / args.name) != 0:
        return 2
    host = detect_resources()
    resources = NodeResources(
        cpus=args.cpus or host.cpus, mem_mb=args.mem or host.mem_mb, gpus=args.gpus,
        gpu_type=args.gpu_type, features=tuple(args.feature),
    )
    scripts = Scripts(args.prolog, args.epilog, args.prolog_timeout, args.epilog_timeout,
                      args.start_timeout)
    heartbeat_s = args.heartbeat if args.heartbeat > 0 else heartbeat_interval_s(node_timeout_s())
    again = True
    while again:  # again: the SLUID was another node's, a new daemon mints another
        try:
            daemon = NodeDaemon(settings, args.name, resources, heartbeat_s=heartbeat_s,
                                kill_wait_s=args.kill_wait, scripts=scripts,
                                proctrack=args.proctrack, cgroup_parent=args.cgroup_parent)
        except (ProctrackError, FenceConfigError) as exc:
            print(f"sluice node: {exc}", file=sys.stderr)
            return 2
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, lambda *_, d=daemon: d.stop())
        again = daemon.run()
    return 0
