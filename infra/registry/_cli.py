"""``python -m infra.registry fetch|start|stop|status [--dir D] [--port P]``.

stdout carries only the useful value (the runner jar for ``fetch``, the Confluent-compatible URL
for ``start`` and ``status``), so scripts can write
``SLUICE_SCHEMA_REGISTRY_URL=$(python -m infra.registry start --dir D --port P)``; messages go
to stderr. Exit status: 0 on success, 1 if ``status`` finds nothing running, 2 on errors.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ._build import RegistryInfraError, ensure_build
from ._local import DEFAULT_START_TIMEOUT_S, LocalRegistry

DEFAULT_PORT = 8081


def default_dir() -> Path:
    """``$SLUICE_REGISTRY_DIR`` if set, else ``~/.local/state/sluice/registry``."""
    if override := os.environ.get("SLUICE_REGISTRY_DIR"):
        return Path(override).expanduser()
    return Path.home() / ".local" / "state" / "sluice" / "registry"


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m infra.registry",
        description="A local Apicurio Registry (Confluent-compatible REST API) without Docker.")
    parser.add_argument("command", choices=["fetch", "start", "stop", "status"])
    parser.add_argument("--dir", type=Path, default=None,
                        help="state directory (default: $SLUICE_REGISTRY_DIR or "
                             "~/.local/state/sluice/registry)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="HTTP port (127.0.0.1)")
    parser.add_argument("--heap", default="-Xmx512m", help="JVM heap flags")
    parser.add_argument("--timeout", type=float, default=DEFAULT_START_TIMEOUT_S,
                        help="seconds to wait for it to be ready")
    args = parser.parse_args(argv)
    directory = (args.dir or default_dir()).absolute()
    try:
        if args.command == "fetch":
            print(ensure_build())
            return 0
        if args.command == "start":
            registry = LocalRegistry.start(directory, args.port, heap=args.heap,
                                           timeout=args.timeout)
            print(f"registry in {directory}, pid file registry.pid", file=sys.stderr)
            print(registry.url)
            return 0
        found = LocalRegistry.running(directory)
        if args.command == "status":
            if found is None:
                print(f"no registry running in {directory}", file=sys.stderr)
                return 1
            print(found.url)
            return 0
        if found is None:
            print(f"no registry running in {directory}", file=sys.stderr)
            return 0
        found.stop()
        print(f"stopped the registry in {directory}", file=sys.stderr)
        return 0
    except RegistryInfraError as exc:
        print(f"infra.registry: {exc}", file=sys.stderr)
        return 2
