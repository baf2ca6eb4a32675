"""``sluice submit --from FILE``: one job per line, sent in bursts at the API's rate.

Each line holds what would follow ``sluice submit`` for one job (``-N 2 -t 10 -- train.sh``,
or only the command); blank lines and lines starting with ``#`` are skipped; ``-`` reads
standard input. Options given on the command line beside ``--from`` are every line's defaults.
Every line is parsed and checked before anything is sent: a line in error is named
(``FILE:LINE: …``) and nothing is submitted (exit 2). The jobs then go out in bursts of
:data:`BURST` (one flush each) and the decisions come back through one long poll per burst;
one line is printed per job, in file order, and a refused job is named on standard error
(exit 1 when any was refused).
"""

from __future__ import annotations

import argparse
import copy
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from cli.client import Client, Decision
from streams.settings import Settings

__all__ = ["BURST", "read_jobs", "submit_from"]

BURST = 1000
"""Jobs produced per flush (and decided per round of long polls)."""


class LineError(ValueError):
    """A line of the file that is not a valid submission."""


def read_jobs(lines: list[str], parser: argparse.ArgumentParser, defaults: argparse.Namespace,
              build: Callable[[argparse.Namespace], dict[str, Any]],
              problem: Callable[[dict[str, Any]], str]) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, JobSpec record)`` for every job of ``lines``; LineError names the first
    line in error (``LINE: why``)."""
    def refuse(message: str) -> NoReturn:
        raise LineError(message)

    jobs = []
    original = parser.error
    parser.error = refuse  # type: ignore[method-assign] # a bad line is named, not exited on
    try:
        for number, line in enumerate(lines, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            try:
                namespace = _fresh(defaults)
                args = parser.parse_args(shlex.split(text), namespace=namespace)
                if getattr(args, "source", ""):
                    raise LineError("--from cannot be nested")
                if not [c for c in args.command if c != "--"]:
                    raise LineError("no command")
                spec = build(args)
            except (LineError, ValueError) as exc:
                raise LineError(f"{number}: {exc}") from exc
            except SystemExit as exc:  # --help on a line
                raise LineError(f"{number}: not a submission") from exc
            why = problem(spec)
            if why:
                raise LineError(f"{number}: {why}")
            jobs.append((number, spec))
    finally:
        parser.error = original  # type: ignore[method-assign]
    return jobs


def _fresh(defaults: argparse.Namespace) -> argparse.Namespace:
    """A line's own namespace: ``defaults`` with every list and dict copied (argparse's
    ``append`` actions copy before they add, but a line must never see another's values).
    Not ``copy.deepcopy``: the namespace holds the parser itself (``submit_parser``), and
    copying it for each line took 85 % of a 1,000-line file's time."""
    namespace = argparse.Namespace(**{
        key: copy.deepcopy(value) if isinstance(value, (list, dict, set)) else value
        for key, value in vars(defaults).items()})
    namespace.command = []
    return namespace


def submit_from(args: argparse.Namespace, settings: Settings,
                build: Callable[[argparse.Namespace], dict[str, Any]],
                problem: Callable[[dict[str, Any]], str]) -> int:
    """Run ``sluice submit --from FILE``; the exit status."""
    if args.command or args.wait:
        print("sluice submit: --from takes no command and no -W (the commands are the file's "
              "lines)", file=sys.stderr)
        return 2
    try:
        if args.source == "-":
            lines = sys.stdin.read().splitlines()
        else:
            lines = Path(args.source).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"sluice submit: cannot read {args.source}: {exc}", file=sys.stderr)
        return 1
    defaults = argparse.Namespace(**{
        k: copy.deepcopy(v) for k, v in vars(args).items()
        if k not in ("parser", "run", "submit_parser")})
    defaults.source = ""
    try:
        jobs = read_jobs(lines, args.parser, defaults, build, problem)
    except LineError as exc:
        print(f"sluice submit: {args.source}:{exc}; nothing was submitted", file=sys.stderr)
        return 2
    client = Client(settings)
    client.connect()
    refused = 0
    for start in range(0, len(jobs), BURST):
        burst = jobs[start:start + BURST]
        decisions = client.submit_many([spec for _number, spec in burst])
        for (number, _spec), decision in zip(burst, decisions, strict=True):
            refused += _report(args, number, decision)
    return 1 if refused else 0


def _report(args: argparse.Namespace, number: int, decision: Decision) -> int:
    if decision.accepted:
        from cli.submit import submitted_line

        if args.parsable or not getattr(args, "quiet", False):
            print(submitted_line(args, decision))
        return 0
    print(f"sluice submit: {args.source}:{number}: {decision.state.lower()}: "
          f"{decision.reason or decision.detail}: {decision.detail if decision.reason else ''}"
          .rstrip(": "), file=sys.stderr)
    return 1
