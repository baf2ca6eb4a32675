"""scontrol's global options and what ``show`` names (:func:`cli.slurm_cmds.scontrol`).

Options go anywhere on the line, as scontrol's getopt takes them: ``-o/--oneliner`` (each
record on one line, its fields joined by one space, as Slurm's ``line_end``), ``-d/--details``
(accepted: Sluice has no more to show), ``-a/--all``, ``-Q/--quiet`` (no "not found" line),
``-v/--verbose`` (accepted) and ``-h/--help``. ``show``'s entity is matched as scontrol
matches it, by a prefix of its keyword (``j``, ``job``, ``jobs``, ``jobid``, ``st``, ``steps``,
``pa``...), and may carry its value (``jobid=12``). ``show job 1 2`` is refused, as scontrol
refuses more than one value (:func:`cli.slurm_cmds.scontrol`). ``show step[s] [ID[.STEP]]``
prints the srun steps running now (``projections/step_rows.py``), in ``_sprint_step_info``'s
layout.
"""

from __future__ import annotations

import contextlib
import io
import pwd
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cli.client import ApiError, ApiUnavailableError, Client
from cli.formats import host_list, slurm_time
from streams.settings import Settings

__all__ = ["Options", "entity", "global_options", "one_line", "show_steps"]

_FLAGS = {"o": "oneliner", "d": "details", "a": "all", "Q": "quiet", "v": "verbose",
          "h": "help"}
_LONG = {f"--{name}": name for name in _FLAGS.values()}
_KEYWORDS = (("aliases", 1, "aliases"), ("config", 1, "config"), ("daemons", 1, "daemons"),
             ("hostnames", 5, "hostnames"), ("hostlist", 5, "hostlist"),
             ("jobs", 1, "job"), ("jobid", 1, "job"), ("nodes", 1, "node"),
             ("nodename", 5, "node"), ("partitions", 2, "partition"),
             ("partitionname", 2, "partition"), ("reservations", 1, "reservation"),
             ("reservationname", 1, "reservation"), ("steps", 2, "step"))
"""(keyword, shortest prefix, what it shows), in scontrol's order: the first match wins."""


@dataclass
class Options:
    """scontrol's global options found on the line."""

    oneliner: bool = False
    details: bool = False
    all: bool = False
    quiet: bool = False
    verbose: bool = False
    help: bool = False


def global_options(words: list[str]) -> tuple[Options, list[str]]:
    """The global options anywhere in ``words`` (``-od`` too), and the other words in order;
    ``--`` ends the options. A word that is no option of these is left for the verb."""
    options, rest = Options(), list[str]()
    for i, word in enumerate(words):
        if word == "--":
            return options, rest + words[i + 1:]
        if word in _LONG:
            setattr(options, _LONG[word], True)
        elif len(word) > 1 and word[0] == "-" and all(c in _FLAGS for c in word[1:]):
            for c in word[1:]:
                setattr(options, _FLAGS[c], True)
        else:
            rest.append(word)
    return options, rest


def entity(word: str) -> tuple[str, str | None]:
    """What ``show WORD`` names (``job``, ``node``, ``step``...; the word itself, lower case,
    when no keyword matches) and the value it carries (``jobid=12``: ``12``)."""
    tag, sep, value = word.partition("=")
    low = tag.lower()
    for keyword, shortest, shown in _KEYWORDS:
        if len(low) >= shortest and keyword.startswith(low):
            return shown, value if sep else None
    return low, value if sep else None


def one_line(text: str) -> str:
    """scontrol's ``-o``: each record (records are separated by a blank line) on one line."""
    records = [r for r in text.split("\n\n") if r.strip()]
    return "".join(" ".join(line.strip() for line in r.splitlines() if line.strip()) + "\n"
                   for r in records)


def captured(run: Callable[[], int]) -> tuple[int, str]:
    """What ``run`` prints on standard output, and its status."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = run()
    return status, out.getvalue()


def show_steps(ref: str | None, settings: Settings, quiet: bool) -> int:
    """``scontrol show step[s] [ID[.STEP]]``: the running srun steps (of one job, one step)."""
    client = Client(settings)
    job_ref, dot, step_id = (ref or "").partition(".")
    try:
        jobs = [client.job(job_ref)] if ref else client.get("/v1/jobs")["jobs"]
    except ApiUnavailableError:
        raise
    except ApiError:
        print(f"scontrol: error: scontrol_print_step: slurm_get_job_steps({ref}) failed: "
              "Invalid job id specified", file=sys.stderr)
        return 1
    from cli.queue_cmd import array_bases

    bases = array_bases(client, jobs)
    records = [_step_lines(job, step, bases) for job in jobs for step in job.get("steps", [])
               if step.get("state") == "RUNNING" and step.get("run_sluid") == job.get("run_sluid")
               and (not dot or str(step.get("step_id")) == step_id)]
    if records:
        print("\n\n".join("\n".join(lines) for lines in records))
        return 0
    if ref is None:
        print("No job steps in the system")
        return 0
    if not quiet:  # scontrol's words (stdout), the step part empty without one
        print(f"Job step {job_ref}.{step_id} not found")
    return 1


def _step_lines(job: Mapping[str, Any], step: Mapping[str, Any],
                bases: Mapping[str, int]) -> list[str]:
    from cli.job_fields import job_id_text

    nodes = list(step.get("nodes") or [])
    tasks = int(step.get("ntasks") or 1)
    cpus = tasks * int(step.get("cpus_per_task") or job.get("cpus_per_task") or 1)
    user = str(job.get("user", ""))
    try:
        uid = str(pwd.getpwnam(user).pw_uid)
    except KeyError:
        uid = user
    return [
        f"StepId={job_id_text(job, bases)}.{step.get('step_id')} UserId={uid} "
        f"StartTime={slurm_time(int(step.get('start_ms') or 0), 'Unknown')} "
        "TimeLimit=UNLIMITED",
        f"   State={step.get('state')} Partition={job.get('partition', '')} "
        f"NodeList={host_list(nodes) if nodes else '(null)'}",
        f"   Nodes={len(nodes)} CPUs={cpus} Tasks={tasks} Name={step.get('name') or '(null)'} "
        "Network=(null)",
        f"   TRES=cpu={cpus},node={len(nodes)}",
        "   ResvPorts=(null)",
        "   CPUFreqReq=Default",
    ]

