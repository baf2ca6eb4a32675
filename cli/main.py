"""The ``sluice`` command: one entry point, one sub-command per module.

| command | module |
|---|---|
| up, down | ``cli.system`` |
| worker, projections, node | ``cli.services`` |
| submit, cancel, hold, release | ``cli.submit`` |
| drain, resume, requeue | ``cli.admin`` |
| queue, nodes, show, history | ``cli.views`` |
| sluid | ``cli.sluid`` |
| simulate | ``cli.simulate`` |
| topology, replay, audit, verify, watch | their own modules, when present |
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from streams.settings import Settings

__all__ = ["main"]

_MODULES = (
    "cli.system", "cli.services", "cli.submit", "cli.views", "cli.admin", "cli.sluid_cmd",
)
# Commands that parse their own arguments: name → module with run(argv) -> int.
_PASSTHROUGH = {
    "simulate": "cli.simulate",
    "topology": "cli.topology",
    "replay": "cli.audit",
    "audit": "cli.audit",
    "verify": "cli.audit",
    "watch": "cli.watch",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sluice", description="Sluice: an event-sourced scheduler for AI/GPU clusters"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in _MODULES:
        importlib.import_module(name).add_parsers(sub)
    for name in _PASSTHROUGH:
        sub.add_parser(name, help=f"see 'sluice {name} --help'", add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``sluice`` command; returns its exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] in _PASSTHROUGH:
        module = importlib.import_module(_PASSTHROUGH[args_list[0]])
        return int(module.run(args_list))
    args = _parser().parse_args(args_list)
    return int(args.run(args, Settings.from_env()))


if __name__ == "__main__":
    sys.exit(main())
