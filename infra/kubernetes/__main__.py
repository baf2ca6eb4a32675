"""``python -m infra.kubernetes build|start|stop|status``: the local control plane from a shell."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from infra.kubernetes._build import PIECES, binaries, ensure_built
from infra.kubernetes._cluster import DEFAULT_PORT, start, stop
from infra.kubernetes._errors import KubernetesSetupError
from infra.kubernetes._process import alive, recorded


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m infra.kubernetes",
                                     description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    b = verbs.add_parser("build", help="build etcd, kube-apiserver, controller manager and kwok")
    b.add_argument("--with-scheduler", action="store_true",
                   help="also kube-scheduler (the baseline of benchmarks/bench_kube_bind.py)")
    s = verbs.add_parser("start", help="start the control plane and kwok nodes")
    s.add_argument("--dir", type=Path, required=True, help="state folder (e.g. /tmp/k8s-cp)")
    s.add_argument("--port", type=int, default=DEFAULT_PORT, help="API server port")
    s.add_argument("--nodes", type=int, default=8, help="kwok nodes to create")
    s.add_argument("--blocks", type=int, default=2, help="topology blocks they are split into")
    for verb in ("stop", "status"):
        v = verbs.add_parser(verb)
        v.add_argument("--dir", type=Path, required=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one verb; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        if args.verb == "build":
            ensure_built(say=True, optional=args.with_scheduler)
            for piece in PIECES:
                print(f"{piece.name} {piece.version}")
            for name, path in binaries().items():
                print(f"  {name}: {path}")
        elif args.verb == "start":
            cluster = start(args.dir, port=args.port, nodes=args.nodes, blocks=args.blocks)
            print(f"control plane up at {cluster.server}")
            print(f"export KUBECONFIG={cluster.kubeconfig}")
        elif args.verb == "stop":
            names = stop(args.dir)
            print(f"stopped {', '.join(names)}" if names else "nothing was running")
        else:
            pids = recorded(args.dir.resolve())
            for name, pid in pids.items():
                print(f"{name}: pid {pid} {'running' if alive(pid) else 'gone'}")
            return 0 if pids and all(alive(p) for p in pids.values()) else 1
    except KubernetesSetupError as exc:
        print(f"infra.kubernetes: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
