"""``sluice bridge`` (Sluice as the Kubernetes scheduler ``sluice``) and ``sluice operator``
(SluiceCluster resources reconciled into a running Sluice); see docs/kubernetes.md."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from streams.settings import Settings

__all__ = ["add_parsers"]


def add_parsers(sub: Any) -> None:
    """Register bridge and operator."""
    b = sub.add_parser("bridge", help="schedule Kubernetes pods (schedulerName: sluice)")
    b.add_argument("--kubeconfig", type=Path, default=None,
                   help="default: in-cluster, else KUBECONFIG / ~/.kube/config")
    b.add_argument("--scheduler-name", default="sluice")
    b.add_argument("--state-dir", type=Path, default=None,
                   help="default: $SLUICE_HOME/bridge")
    b.add_argument("--heartbeat", type=float, default=2.0,
                   help="seconds between the Kubernetes nodes' heartbeats")
    b.add_argument("--default-user", default="", metavar="USER",
                   help="whose jobs the pods of a namespace without the sluice.dev/user "
                        "annotation are (never root, the service user or the bridge's own "
                        "user); default: none, such pods are refused (NoSluiceUser)")
    b.set_defaults(run=_bridge)
    o = sub.add_parser("operator", help="reconcile SluiceCluster resources")
    o.add_argument("--kubeconfig", type=Path, default=None)
    o.add_argument("--namespace", default="", help="default: every namespace")
    o.add_argument("--interval", type=float, default=10.0, help="seconds between scaler checks")
    o.set_defaults(run=_operator)


def _kube(kubeconfig: Path | None, command: str) -> Any:
    from kubernetes.config import ConfigException

    from agents.bridge.kube import Kube

    if kubeconfig is not None and not kubeconfig.is_file():
        print(f"sluice {command}: no kubeconfig at {kubeconfig}", file=sys.stderr)
        return None
    try:
        return Kube(kubeconfig)
    except (ConfigException, OSError, ValueError) as exc:
        print(f"sluice {command}: cannot reach Kubernetes: {exc}", file=sys.stderr)
        return None


def _bridge(args: argparse.Namespace, settings: Settings) -> int:
    from agents.bridge.daemon import Bridge
    from agents.bridge.owner import DefaultUserError, check_default_user, privileged_users

    logging.basicConfig(level=logging.INFO, format="%(asctime)s bridge %(message)s")
    if args.default_user:
        try:
            check_default_user(args.default_user, privileged_users(settings))
        except DefaultUserError as exc:
            print(f"sluice bridge: --default-user {exc}", file=sys.stderr)
            return 2
    kube = _kube(args.kubeconfig, "bridge")
    if kube is None:
        return 1
    kube.scheduler_name = args.scheduler_name
    bridge = Bridge(settings, kube, args.state_dir or settings.home / "bridge",
                    heartbeat_s=args.heartbeat, default_user=args.default_user)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, lambda *_: bridge.stop())
    bridge.run()
    return 0


def _operator(args: argparse.Namespace, settings: Settings) -> int:
    from agents.operator.loop import Operator

    logging.basicConfig(level=logging.INFO, format="%(asctime)s operator %(message)s")
    kube = _kube(args.kubeconfig, "operator")
    if kube is None:
        return 1
    operator = Operator(settings, kube, namespace=args.namespace, interval_s=args.interval)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, lambda *_: operator.stop())
        signal.signal(signal.SIGTERM, lambda *_: operator.stop())
    operator.run()
    return 0
