"""Slurm's command names, opt-in: ``sluice slurm-path`` and ``sluice scontrol``.

``cli/slurm_compat/bin`` holds thin ``sbatch srun salloc squeue sinfo sacct scancel
scontrol`` commands that run ``sluice submit``, ``run``, ``alloc``, ``queue``, ``nodes``,
``history``, ``cancel`` and ``scontrol``. They are not on anybody's ``PATH`` by default (a
machine may have real Slurm too): ``export PATH="$(sluice slurm-path):$PATH"`` puts them
first. Inside a job the node daemon puts them first on the job's ``PATH``, so a batch
script's ``srun`` is Sluice's.

``sluice scontrol`` maps the scontrol verbs batch scripts use: ``show job [ID]``, ``show node
[NAME|LIST]`` (``jobs``/``jobid``/``nodes`` alike; no name: every one; two names are refused,
as scontrol refuses them: ``too many arguments for keyword:show``), ``show step[s]
[ID[.STEP]]``, ``show hostnames [LIST]`` (one
name a line; default ``$SLURM_JOB_NODELIST``), ``show hostlist NAMES``, ``write batch_script ID
[FILE|-]``, ``hold``, ``uhold``, ``release``, ``requeue`` and ``requeuehold`` of a job list
(``12,13 14``), ``top`` (:mod:`cli.top_cmd`), and ``update``: ``update JobId=ID
Key=Value…`` is ``sluice update``, and ``update NodeName=LIST State=DRAIN|DOWN|RESUME|IDLE
[Reason=…]`` is ``sluice drain`` (with ``--down``) or ``sluice resume`` (scontrol, too, refuses
DRAIN or DOWN without a reason). ``create reservation …``, ``update ReservationName=…``,
``delete ReservationName=…`` and ``show reservation[s] [NAME]`` are the advanced reservations'
(:mod:`cli.reservations_cmd`). Its global options (``-o``, ``-d``, ``-Q``…) go anywhere on
the line (:mod:`cli.scontrol_show`).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from pathlib import Path
from typing import Any

from agents.node.environment import COMPAT_BIN
from streams.settings import Settings

__all__ = ["add_parsers", "scontrol"]

_USAGE = ("scontrol: sluice maps show job|node|step|partition|reservation|hostnames|hostlist, "
          "ping, write batch_script, hold, uhold, release, requeue, requeuehold, top, update "
          "job|node|reservation, create reservation, delete reservation")


def add_parsers(sub: Any) -> None:
    """Register ``slurm-path`` and ``scontrol``."""
    p = sub.add_parser("slurm-path", help="the directory of Slurm's command names (sbatch, srun"
                       ", …) mapped onto sluice: put it first on PATH to use them")
    p.set_defaults(run=_slurm_path)
    s = sub.add_parser("scontrol", help="the scontrol verbs batch scripts use",
                       add_help=False, prefix_chars="\x00",  # every word is scontrol's:
                       # its options go anywhere on the line (cli.scontrol_show)
                       usage="sluice scontrol show job|node|hostnames|hostlist … | "
                             "write batch_script ID [FILE] | hold|release|requeue ID…")
    s.add_argument("words", nargs=argparse.REMAINDER)
    s.set_defaults(run=lambda args, settings: scontrol(list(args.words), settings))


def _slurm_path(args: argparse.Namespace, settings: Settings) -> int:
    del args, settings
    print(COMPAT_BIN)
    return 0


def _sluice(argv: list[str]) -> int:
    from cli.main import main

    return main(argv)


def scontrol(words: list[str], settings: Settings) -> int:
    """Run one scontrol command line (see the module docstring): its global options anywhere
    (``-o``: each record on one line; :mod:`cli.scontrol_show`), then its verb."""
    from cli.scontrol_show import captured, global_options, one_line

    options, words = global_options(words)
    if options.help:
        print(_USAGE.replace("scontrol: sluice maps", "sluice scontrol [-o] [-d] [-Q]: maps"))
        return 0
    if not options.oneliner:
        return _scontrol(words, settings, options.quiet)
    status, text = captured(lambda: _scontrol(words, settings, options.quiet))
    sys.stdout.write(one_line(text))
    return status


def _scontrol(words: list[str], settings: Settings, quiet: bool) -> int:
    verb, rest = (words[0].lower(), words[1:]) if words else ("", [])
    if verb == "reconfigure" or (verb == "show" and [w.lower() for w in rest] == ["config"]):
        print(f"scontrol: {' '.join(words)}: Sluice has no slurm.conf: the cluster file takes "
              "effect when applied ('sluice config apply FILE', docs/configuration.md); "
              "'sluice config show' prints the configurations in force", file=sys.stderr)
        return 1
    if verb == "ping":
        from cli.partition_show import ping

        return ping(settings)
    if verb == "show" and rest:
        from cli.scontrol_show import entity

        what, value = entity(rest[0])
        names = ([value] if value else []) + rest[1:]
        if len(names) > 1:  # scontrol's _show_it: one value at most, whatever the entity
            if not quiet:
                print(f"too many arguments for keyword:{words[0]}", file=sys.stderr)
            return 1
        if what == "partition":
            from cli.partition_show import show_partitions

            return show_partitions(names, settings)
        if what == "reservation":
            from cli.reservations_cmd import show_reservations

            return show_reservations(names, settings)
        if what in ("job", "node"):  # no name: every one, as scontrol
            return _show_each(what, names, quiet)
        if what == "step":
            from cli.scontrol_show import show_steps

            return show_steps(names[0] if names else None, settings, quiet)
        if what == "hostnames":
            from scheduler.topology.hostlist import expand

            text = names[0] if names else os.environ.get("SLURM_JOB_NODELIST", "")
            try:
                print("\n".join(expand(text)))
            except ValueError as exc:
                print(f"scontrol: {exc}", file=sys.stderr)
                return 1
            return 0
        if what == "hostlist" and names:
            from scheduler.topology.hostlist import compress

            print(compress(names[0].split(","), sort=False))
            return 0
    if verb == "write" and len(rest) >= 2 and rest[0].lower() == "batch_script":
        return _write_script(rest[1], rest[2] if len(rest) > 2 else f"slurm-{rest[1]}.sh")
    if verb in _JOB_LIST_VERBS and rest:
        return _sluice([*_JOB_LIST_VERBS[verb], *_job_list(verb, rest)])
    if verb == "top" and rest:
        from cli.top_cmd import top

        return top(rest, settings, quiet)
    if verb in ("create", "update", "delete") and rest:
        return _reservation(verb, rest, settings)
    print(_USAGE, file=sys.stderr)
    return 2


_RESERVATION = ("reservation", "reservations", "res")
_JOB_LIST_VERBS = {"hold": ["hold"], "uhold": ["hold", "--uhold"], "release": ["release"],
                   "requeue": ["requeue"], "requeuehold": ["requeue", "--hold"]}
"""scontrol's verbs that take a job list, and the sluice command each is."""


def _job_list(verb: str, words: list[str]) -> list[str]:
    """The job ids of scontrol's ``job_list`` words: comma-separated, as many words as given
    (``12,13 14``; a comma inside ``ID_[1,3]`` is the array's, whose tasks it names: ``12_1``,
    ``12_3``), without ``requeuehold``'s
    ``State=SpecialExit`` (Sluice holds the job, it has no SPECIAL_EXIT state)."""
    ids: list[str] = []
    for word in words:
        if verb == "requeuehold" and word.lower() == "state=specialexit":
            continue
        depth, start = 0, 0
        for i, char in enumerate(word + ","):
            depth += (char == "[") - (char == "]")
            if char == "," and depth <= 0:
                if word[start:i]:
                    ids.extend(_tasks(word[start:i]))
                start = i + 1
    return ids


def _tasks(ref: str) -> list[str]:
    """An array's task range ``12_[1-3,7]`` as its tasks (scontrol takes it, as scancel does);
    any other id as it is (one the views do not know is said then)."""
    if "_[" not in ref:
        return [ref]
    from cli.job_control import expand_job_refs

    try:
        return expand_job_refs([ref])
    except ValueError:
        return [ref]


def _show_each(kind: str, names: list[str], quiet: bool) -> int:
    """``show job|node`` of the one name, of every one without a name; one the views do not
    have is said in scontrol's words (``slurm_load_jobs error: Invalid job id specified`` on
    standard error, ``Node NAME not found`` on standard output), nothing with ``-Q``; exit 1."""
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        status = _sluice(["show", kind, *names])
    text = said.getvalue()
    missing = status != 0 and names and (f"no {kind} " in text or "no such" in text)
    if missing and not quiet:
        if kind == "job":  # scontrol_print_job checks the id's characters first
            print(_job_not_found(names[0]), file=sys.stderr)
        else:
            print(f"Node {names[0]} not found")
    elif text and not (missing and quiet):
        sys.stderr.write(text)
    return status


def _job_not_found(name: str) -> str:
    """scontrol's line for a job id it cannot show: a malformed one (``35_[1-2]``: Slurm's
    ``show job`` takes no array expression), a task an existing array lacks (``Job 35_9 not
    found``), else a job it does not know."""
    if _malformed_job_id(name):
        return "scontrol_print_job error: Invalid job id specified"
    base, _, task = name.partition("_")
    if task.isdigit() and base.isdigit() and "+" not in name:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            known = _sluice(["show", "job", base]) == 0
        if known:
            return f"Job {int(base)}_{int(task)} not found"
    return "slurm_load_jobs error: Invalid job id specified"


def _malformed_job_id(text: str) -> bool:
    """Not scontrol's job id: digits, ``_`` and ``+`` (``12``, ``12_3``), or a SLUID."""
    sluid = text[:1] == "s" and text[1:].isalnum()
    return not sluid and not (text and all(c.isdigit() or c in "_+" for c in text))


def _reservation(verb: str, rest: list[str], settings: Settings) -> int:
    """``create reservation …``, ``update ReservationName=…``, ``delete ReservationName=…``;
    any other ``update`` is a job's or a node's."""
    from cli import reservations_cmd as resv

    if verb == "create":
        if rest[0].lower() not in _RESERVATION:
            print("scontrol: sluice creates reservations only: create reservation KEY=VALUE…",
                  file=sys.stderr)
            return 2
        return resv.change_reservation(rest[1:], settings, update=False)
    keys = {w.partition("=")[0].lower() for w in rest}
    if verb == "delete":
        return resv.delete_reservation(rest, settings)
    if "reservationname" in keys:  # (a job's Reservation= goes with its JobId=)
        return resv.change_reservation(rest, settings, update=True)
    return _update(rest)


_NODE_STATES = {"drain": ["drain"], "down": ["drain", "--down"], "resume": ["resume"],
                "idle": ["resume"], "undrain": ["resume"]}
"""``scontrol update NodeName=… State=…`` as the sluice command that does it."""


def _update(words: list[str]) -> int:
    """``scontrol update``: a job's fields (``sluice update``) or a node's state."""
    fields = {k.lower(): v for k, sep, v in (w.partition("=") for w in words) if sep}
    if "partitionname" in fields:
        print(f"scontrol: PartitionName={fields['partitionname']}: a partition's settings "
              "(State, MaxTime, Nodes, ...) change with the cluster file: edit it, then "
              "'sluice config apply FILE' (docs/configuration.md)", file=sys.stderr)
        return 1
    if "nodename" not in fields and "node" not in fields:
        return _sluice(["update", *words])
    nodes = fields.get("nodename") or fields.get("node", "")
    state = fields.get("state", "").lower()
    unknown = sorted(set(fields) - {"nodename", "node", "state", "reason"})
    if state not in _NODE_STATES or unknown or not nodes:
        print("scontrol: update NodeName=LIST State=DRAIN|DOWN|RESUME|IDLE [Reason=TEXT]"
              + (f" (not {', '.join(unknown)})" if unknown else ""), file=sys.stderr)
        return 2
    from scheduler.topology.hostlist import expand

    try:
        names = expand(nodes)
    except ValueError as exc:
        print(f"scontrol: NodeName={nodes}: {exc}", file=sys.stderr)
        return 1
    command = _NODE_STATES[state]
    if command[0] == "drain":
        if not fields.get("reason"):
            print(f"scontrol: you must specify a reason when setting a node {state.upper()}",
                  file=sys.stderr)
            return 1
        return _sluice([*command, "-r", fields["reason"], *names])
    return _sluice([*command, *names])


def _write_script(job: str, target: str) -> int:
    """``scontrol write batch_script``: to ``target`` (``-``: standard output)."""
    if target == "-":
        return _sluice(["show", "job", job, "--script"])
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        status = _sluice(["show", "job", job, "--script"])
    if status == 0:
        Path(target).write_text(captured.getvalue())
        print(f"batch script for job {job} written to {target}")
    return status
