"""The ``sluice`` command: one entry point, one sub-command per module.

| command | module |
|---|---|
| up, down | ``cli.system`` |
| worker, projections, node | ``cli.services`` |
| submit, hold, release | ``cli.submit`` |
| cancel, update | ``cli.job_control`` |
| run (srun: a job step) | ``cli.run_step`` |
| slurm-path, scontrol (Slurm's command names) | ``cli.slurm_cmds`` |
| drain, resume, requeue | ``cli.admin`` |
| queue, nodes, show, history | ``cli.views`` |
| status | ``cli.status`` |
| sluid | ``cli.sluid`` |
| kafka acls apply/show | ``cli.kafka_cmd`` |
| bridge, operator | ``cli.kube_cmd`` |
| simulate | ``cli.simulate`` |
| topology, replay, audit, verify, watch | their own modules, when present |
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from streams.security import KafkaSecurityError
from streams.settings import ClientConfError, Settings

__all__ = ["main"]

_MODULES = (
    "cli.system", "cli.services", "cli.submit", "cli.views", "cli.status", "cli.admin",
    "cli.sluid_cmd", "cli.token_cmd", "cli.kafka_cmd", "cli.encode_cmd", "cli.run_step",
    "cli.slurm_cmds", "cli.schemas_cmd", "cli.kube_cmd", "cli.job_control",
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


# The commands a script calls in a loop: only their module is imported to parse them (the
# whole parser imports every command's module, confluent_kafka.admin among them: ~0.1 s).
_HOT = {"submit": "cli.submit", "cancel": "cli.job_control", "hold": "cli.submit",
        "release": "cli.submit", "node": "cli.services"}
"""Commands whose module alone is imported to parse them: the CLI's often-run calls, and the
node daemon (an idle daemon's memory is mostly what it imported, issue 17)."""


def _parser(command: str = "") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sluice", description="Sluice: an event-sourced scheduler for AI/GPU clusters"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if command in _HOT:
        importlib.import_module(_HOT[command]).add_parsers(sub)
        return parser
    for name in _MODULES:
        importlib.import_module(name).add_parsers(sub)
    for name in _PASSTHROUGH:
        sub.add_parser(name, help=f"see 'sluice {name} --help'", add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``sluice`` command; returns its exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    from cli.client import ApiError

    try:
        if args_list and args_list[0] in _PASSTHROUGH:
            module = importlib.import_module(_PASSTHROUGH[args_list[0]])
            return int(module.run(args_list))
        args = _parser(args_list[0] if args_list else "").parse_args(args_list)
        args.argv = args_list  # the words as given (submit re-reads them after #SBATCH lines)
        return int(args.run(args, Settings.from_env()))
    except KafkaSecurityError as exc:  # a bad SLUICE_KAFKA_* setting or password file
        print(f"sluice: {exc}", file=sys.stderr)
        return 2
    except (ApiError, ClientConfError) as exc:
        print(f"sluice {args_list[0]}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"sluice {args_list[0] if args_list else ''}: interrupted", file=sys.stderr)
        return 130
    except (OSError, ValueError, TimeoutError) as exc:  # a missing file, a bad value, no answer
        if os.environ.get("SLUICE_DEBUG"):
            raise
        print(f"sluice {args_list[0] if args_list else ''}: {_one_line(exc)}", file=sys.stderr)
        return 1


def _one_line(exc: BaseException) -> str:
    """What went wrong, in one line (set SLUICE_DEBUG=1 for the traceback)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, OSError) and exc.filename and str(exc.filename) not in text:
        text = f"{exc.filename}: {text}"
    return text


if __name__ == "__main__":
    sys.exit(main())
