"""``sluice submit`` (sbatch), ``sluice hold`` / ``release`` (``cancel`` is ``cli.job_control``)."""

from __future__ import annotations

import argparse
import functools
import gc
import os
import pwd
import sys
import time
from _socket import gethostname  # socket.gethostname itself, without the socket module
from pathlib import Path

from cli.batch_script import (
    BatchScript,
    ScriptError,
    ScriptUsageError,
    from_stdin,
    load,
    not_a_script,
    parse_options,
    wrap_script,
)
from cli.client import (
    PATIENT_POLL_S,
    ApiError,
    ApiUnavailableError,
    Client,
    Decision,
    NoSuchJobError,
    RequestTooLargeError,
    request_subject,
)
from cli.export import job_environment, seal_spec_env
from cli.slurm_units import (
    begin_ms,
    count,
    mail_types,
    mem_mb,
    node_counts,
    node_range,
    signal_spec,
)
from cli.submit_options import add_submit_options, gpu_request, memory_env, open_mode_env
from cli.timefmt import parse_time_limit
from schemas.ranges import spec_range_problem
from schemas.request_keys import request_key
from streams.settings import Settings

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, BinaryIO

__all__ = ["add_parsers", "build_spec", "spec_problem", "with_script"]


def add_parsers(sub: Any) -> None:
    """Register submit, hold and release."""
    p = sub.add_parser("submit", help="submit a batch job (like sbatch)",
                       usage="sluice submit [options] script [args...] | --wrap CMD | "
                             "-- command [args...]")
    p.add_argument("-N", "--nodes", default=None, type=node_range,
                   help="node count, or min-max")
    p.add_argument("-n", "--ntasks", type=count, default=1)
    p.add_argument("-c", "--cpus-per-task", type=count, default=1)
    p.add_argument("--ntasks-per-node", type=count, default=0)
    p.add_argument("-p", "--partition", default="")
    p.add_argument("-q", "--qos", default="")
    p.add_argument("-A", "--account", default="")
    p.add_argument("-J", "--job-name", default="")
    p.add_argument("-t", "--time", default="0", help="time limit (minutes, HH:MM:SS, D-HH…)")
    p.add_argument("-G", "--gpus", default="", metavar="[TYPE:]N", help="GPUs for the whole job")
    p.add_argument("--gpus-per-node", default="", metavar="[TYPE:]N")
    p.add_argument("--gres", default="", help="gpu[:type][:count] (per node)")
    p.add_argument("--mem", type=mem_mb, default=0, help="memory per node (K/M/G/T; M)")
    p.add_argument("--mem-per-cpu", type=mem_mb, default=0, help="memory per CPU (K/M/G/T)")
    p.add_argument("-C", "--constraint", default="", help="node features: a&b, a|b")
    p.add_argument("-w", "--nodelist", default="", help="nodes to run on (hostlist)")
    p.add_argument("-x", "--exclude", default="", help="nodes not to run on (hostlist)")
    p.add_argument("--signal", type=signal_spec, default="", help="[B:]SIG[@SECONDS]")
    _add_owner_and_mail(p)
    p.add_argument("--exclusive", nargs="?", const="node", default="",
                   choices=["", "node", "topo", "user", "mcs"],
                   help="whole nodes (=user and =mcs too: no sharing at all is stricter than "
                        "Slurm's, never looser); --exclusive=topo for whole base blocks")
    p.add_argument("-o", "--output", default="")
    p.add_argument("-e", "--error", default="")
    p.add_argument("-D", "--chdir", default="")
    p.add_argument("--requeue", nargs="?", const="yes", default="",
                   choices=["yes", "expedite"], help="requeue on failure (=expedite)")
    p.add_argument("--no-requeue", action="store_const", const="no", dest="requeue")
    p.add_argument("-b", "--begin", type=begin_ms, default=0,
                   help="now+1hour, 2026-12-24T08:00, tomorrow, 16:00...")
    p.add_argument("-d", "--dependency", default="")
    p.add_argument("--nice", type=int, default=0)
    p.add_argument("-H", "--hold", action="store_true")
    p.add_argument("-a", "--array", default="")
    p.add_argument("-L", "--licenses", default="")
    p.add_argument("--resources", default="")
    p.add_argument("--segment", type=int, default=0)
    p.add_argument("--spread-segments", action="store_true")
    p.add_argument("--consolidate-segments", action="store_true")
    p.add_argument("--switches", default="", help="N[@max-wait]")
    p.add_argument("--hot-swap", default="", choices=["", "yes", "no"])
    p.add_argument("--comment", default="")
    p.add_argument("--export", action="append", default=[], metavar="ALL|NONE|NAME[=VALUE],...",
                   help="the job's environment, as Slurm's (default ALL: this shell's, "
                        "without SLUICE_*/KAFKA_*); sealed for the nodes (docs/security.md)")
    _add_answer_options(p)
    p.add_argument("--wrap", default="", metavar="CMD",
                   help="run CMD under /bin/sh as the batch script")
    p.add_argument("--from", dest="source", default="", metavar="FILE",
                   help="submit one job per line of FILE (- for stdin): cli/submit_file.py")
    p.add_argument("--sbatch", action="store_true", help=argparse.SUPPRESS)  # as sbatch: the
    # positional argument is a batch script, never a command (cli/slurm_compat/bin/sbatch)
    p.add_argument("command", nargs=argparse.REMAINDER)
    p.set_defaults(run=_submit, submit_parser=p, parser=p)
    _add_job_verbs(sub)


def _add_answer_options(p: Any) -> None:
    """What submit prints and waits for."""
    p.add_argument("-W", "--wait", action="store_true", help="wait for the job to end")
    p.add_argument("--timeout", type=float, default=0.0,
                   help="seconds to wait with -W (default 0: until the job ends, as sbatch)")
    p.add_argument("--parsable", action="store_true", help="print only the job id")
    p.add_argument("-Q", "--quiet", action="store_true",
                   help="no 'Submitted batch job N' line (errors only), as sbatch -Q")
    p.add_argument("--test-only", action="store_true",
                   help="validate the job and say when and where it would start; nothing is "
                        "submitted (as sbatch --test-only)")


def _add_owner_and_mail(p: Any) -> None:
    p.add_argument("--uid", default="", metavar="USER",
                   help="submit the job for USER (administrators, as sbatch --uid is "
                        "root's, and users SubmitFor lists for USER; the job is USER's and "
                        "its JobQueued names you)")
    p.add_argument("--mail-type", type=mail_types, default="")
    p.add_argument("--mail-user", default="")
    p.add_argument("--reservation", default="", metavar="NAME",
                   help="run in the advanced reservation NAME (scontrol create reservation): "
                        "only inside its window, on its nodes")
    add_submit_options(p)


def _add_job_verbs(sub: Any) -> None:
    for verb, helptext in (("hold", "hold pending jobs"), ("release", "release held jobs")):
        q = sub.add_parser(verb, help=helptext)
        q.add_argument("jobs", nargs="+", help="job ids or SLUIDs")
        if verb == "hold":
            q.add_argument("--uhold", action="store_true",
                           help="a user hold, which the job's owner may release (scontrol "
                                "uhold); an operator's hold is otherwise an admin hold")
        q.set_defaults(run=_job_verb, verb=verb, uhold=False)


def build_spec(args: argparse.Namespace) -> dict[str, Any]:
    """The JobSpec record for parsed ``submit`` arguments (raises ValueError on bad input); a
    plain record, so the CLI imports no core (see schemas.ranges for the checks it makes)."""
    nodes_min, nodes_max = node_counts(args.nodes)
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    ntasks = _ntasks(args, nodes_min)
    gpus, gpu_type, job_gpus = gpu_request(args, ntasks)
    switches, _, wait = str(args.switches).partition("@")
    script: BatchScript | None = getattr(args, "batch_script", None)
    default_name = Path(command[0]).name if command else ""
    if script is not None:
        default_name = Path(script.path).name if script.path else "wrap"
    env = job_environment(args.export, os.environ)
    open_mode_env(getattr(args, "open_mode", None) or "", env)
    memory_env(int(args.mem or 0), int(args.mem_per_cpu or 0), env)
    return {
        "name": args.job_name or default_name,
        "user": getattr(args, "uid", "") or real_user(), "account": args.account,
        "partition": args.partition,
        "qos": args.qos, "nodes_min": nodes_min, "nodes_max": nodes_max,
        "ntasks": ntasks, "cpus_per_task": args.cpus_per_task,
        "gpus_per_node": gpus,
        "gpu_type": gpu_type, "mem_per_node_mb": args.mem,
        "time_limit_s": parse_time_limit(args.time),
        "exclusive": args.exclusive in ("node", "user", "mcs"),
        "command": command, "workdir": str(Path(args.chdir or Path.cwd()).resolve()), "env": env,
        "output": args.output or _sbatch_output(args), "error": args.error,
        "requeue": args.requeue or "",
        "begin_time_ms": args.begin, "dependency": args.dependency, "nice": args.nice,
        "hold": args.hold, "array": args.array, "licenses": args.licenses,
        "resources": args.resources, "segment": args.segment,
        "spread_segments": args.spread_segments,
        "consolidate_segments": args.consolidate_segments,
        "exclusive_topo": args.exclusive == "topo", "switches": int(switches or 0),
        "switches_max_wait_s": parse_time_limit(wait) if wait else 0,
        "hot_swap": args.hot_swap, "comment": args.comment,
        "script": script.text if script is not None else "", "submit_host": gethostname(),
        "gpus": job_gpus, "ntasks_per_node": args.ntasks_per_node,
        "mem_per_cpu_mb": args.mem_per_cpu, "constraint": args.constraint,
        "nodelist": args.nodelist, "exclude": args.exclude, "signal": args.signal,
        "mail_type": args.mail_type, "mail_user": args.mail_user,
        "reservation": getattr(args, "reservation", ""),
        "kill_on_invalid_dep": bool(getattr(args, "kill_on_invalid_dep", False)),
    }


def _sbatch_output(args: argparse.Namespace) -> str:
    """sbatch's own default output file, ``slurm-%j.out`` (``slurm-%A_%a.out`` for an array),
    for a job sent by the ``sbatch`` command; "" (the node's ``sluice-%j.out``) otherwise: a
    Slurm user's script that reads ``slurm-$SLURM_JOB_ID.out`` finds it."""
    if not getattr(args, "sbatch", False):
        return ""
    return "slurm-%A_%a.out" if args.array else "slurm-%j.out"


def _ntasks(args: argparse.Namespace, nodes_min: int) -> int:
    """``-n``; with ``--ntasks-per-node`` and no larger ``-n``, that many on each node."""
    if args.ntasks_per_node and args.ntasks <= 1:
        return int(args.ntasks_per_node) * max(nodes_min, 1)
    return int(args.ntasks)


def with_script(args: argparse.Namespace, stdin: BinaryIO | None = None) -> argparse.Namespace:
    """``args`` with the batch script it names (or ``--wrap``, or piped on ``stdin`` when
    neither a script nor a command is given, as sbatch reads it) read, and the script's
    ``#SBATCH`` options parsed before the command line's (which win); unchanged when the
    command is no script. Raises ScriptError (see :mod:`cli.batch_script`)."""
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if args.wrap:
        if command:
            raise ScriptUsageError("--wrap and a script or command cannot both be given")
        script = BatchScript("", wrap_script(args.wrap), ())
    elif not command and stdin is not None:
        script = from_stdin(stdin)
    else:
        found = load(command[0], Path.cwd()) if command else None
        if found is None and command and getattr(args, "sbatch", False):
            raise ScriptError(not_a_script(command[0], Path.cwd())
                              or f"{command[0]}: not a batch script")
        if found is None:
            return args
        script = found
    parser: argparse.ArgumentParser = args.submit_parser
    if script.options:
        shown = f"{command[0] if command else 'wrap'}: #SBATCH"
        alone = parse_options(parser, [*script.options], shown)
        if alone.command:
            raise ScriptUsageError(f"{shown}: unexpected argument {alone.command[0]!r}")
        tokens = list(getattr(args, "argv", None) or [])[1:]  # main() keeps them: after "submit"
        given = tokens[:len(tokens) - len(args.command)] if tokens else []
        args = parse_options(parser, [*script.options, *given, *args.command], "sluice submit")
    args.batch_script = script
    args.command = [script.path, *command[1:]] if script.path else []
    return args


def spec_problem(spec: dict[str, Any]) -> str:
    """Why the shard would refuse ``spec`` whatever its configuration ("" when it would not):
    the ranges of :mod:`schemas.ranges` (the core's own check; other rules, such as a node
    count below 1, are left to the shard, which answers with a named rejection)."""
    problem = spec_range_problem(spec)
    return f"{problem[0]}: {problem[1]}" if problem else ""


def _submit(args: argparse.Namespace, settings: Settings) -> int:
    prog = "sbatch" if getattr(args, "sbatch", False) else "sluice submit"  # as sbatch says it
    fail = f"{prog}: error:" if prog == "sbatch" else f"{prog}:"  # sbatch's error() lines
    if args.source or args.wait:  # a long run: the collector back on (cli.main, _FAST_EXIT)
        gc.enable()
    if args.source and args.test_only:
        print(f"{fail} --test-only tests one job, not a --from file", file=sys.stderr)
        return 2
    if args.source:
        from cli.submit_file import submit_from

        return submit_from(args, settings, build_spec, spec_problem)
    piped = not args.command and not args.wrap and not sys.stdin.isatty()
    try:
        args = with_script(args, sys.stdin.buffer if piped else None)
    except ScriptError as exc:
        print(f"{fail} {exc}", file=sys.stderr)
        return 2 if isinstance(exc, ScriptUsageError) else 1
    if not args.command and getattr(args, "batch_script", None) is None:
        print(f"{fail} nothing to run: give a batch script, --wrap CMD or -- command "
              "(or pipe a script on stdin)", file=sys.stderr)
        return 2
    try:
        spec = seal_spec_env(build_spec(args), settings)
    except ValueError as exc:
        print(f"{fail} {exc}", file=sys.stderr)
        return 2
    problem = spec_problem(spec)
    if problem:
        print(f"{fail} {problem}", file=sys.stderr)
        return 1
    client = Client(settings)
    if not settings.relay:  # through the relay (the default) the CLI opens no producer
        client.connect()  # the broker connection opens while the request is signed
    try:
        decision = client.test_only(spec) if args.test_only else client.submit(spec)
    except RequestTooLargeError as exc:
        print(f"{fail} refused: RequestTooLarge: {exc}; shorten the command, "
              "environment or comment", file=sys.stderr)
        return 2
    except ValueError as exc:  # a value the record cannot hold (EncodeError names the field)
        print(f"{fail} {exc}", file=sys.stderr)
        return 2
    if not decision.accepted:
        if args.test_only and decision.state == "UNKNOWN":  # nothing was queued: say so
            print(f"{fail} no answer to the test {decision.job_sluid} within the "
                  f"wait ({decision.detail}); nothing was submitted", file=sys.stderr)
            return 1
        print(f"{prog}: {_refusal(decision)}", file=sys.stderr)
        return 1
    if args.test_only:  # Slurm's will-run line, on stderr as sbatch's info()
        print(will_run_line(prog, decision.row), file=sys.stderr)
        return 0
    if args.parsable or not args.quiet:  # sbatch -Q: the line is info, --parsable's is not
        print(submitted_line(args, decision))
    if not args.wait:
        return 0
    if decision.tasks:
        return _wait_array(client, decision, args, prog)
    ended = client.wait_ended(decision.job_sluid, wait_limit(args.timeout), Retrying(prog))
    if ended.state == "UNKNOWN":
        print(f"{prog}: job {decision.job_id} did not end within {args.timeout:g} s",
              file=sys.stderr)
        return 1
    job = ended.row
    if _says_ends(args):
        print(ended_line(job))
    return wait_status(job)


def _says_ends(args: argparse.Namespace) -> bool:
    """Whether ``-W`` prints a line as each job ends: ``sluice submit`` does; sbatch prints
    nothing after ``Submitted batch job N`` (scripts take that line's last word), nor with
    ``--parsable``."""
    return not args.parsable and not getattr(args, "sbatch", False)


def submitted_line(args: argparse.Namespace, decision: Decision) -> str:
    """What a submission prints: the job id alone with ``--parsable``; from ``sbatch`` Slurm's own
    line, exactly (``Submitted batch job 42``: scripts take its last word); from ``sluice submit``
    the same line with the job's SLUID after it."""
    if args.parsable:
        return str(decision.job_id)
    if getattr(args, "sbatch", False):
        return f"Submitted batch job {decision.job_id}"
    return f"Submitted batch job {decision.job_id} ({decision.job_sluid})"


def _wait_array(client: Client, decision: Decision, args: argparse.Namespace, prog: str) -> int:
    """``-W`` for an array: until every task has ended; the highest task status (sbatch(1))."""
    from urllib.parse import quote

    deadline = time.monotonic() + wait_limit(args.timeout)
    ended: dict[str, dict[str, Any]] = {}
    retrying = Retrying(prog)
    while True:
        try:
            tasks = client.get(f"/v1/jobs?array={quote(decision.job_sluid, safe='')}")["jobs"]
        except ApiUnavailableError as exc:
            if time.monotonic() >= deadline:
                raise
            if client.contact.lost():
                retrying(str(exc))
            time.sleep(PATIENT_POLL_S if client.contact.lost() else 0.5)
            continue
        waiting = [t["job_sluid"] for t in tasks if t["job_sluid"] not in ended]
        if not waiting and len(tasks) >= decision.tasks:
            break
        left = deadline - time.monotonic()
        if left <= 0:
            print(f"{prog}: {decision.tasks - len(ended)} task(s) of job {decision.job_id} did "
                  f"not end within {args.timeout:g} s", file=sys.stderr)
            return 1
        if not waiting:  # tasks the views do not show yet
            time.sleep(min(left, 0.5))
            continue
        for sluid, answer in client.decisions(waiting, min(left, 55.0), ended=True,
                                              patient=retrying).items():
            done = Decision.from_answer(sluid, answer)
            if done.state != "UNKNOWN":
                ended[sluid] = done.row
                if _says_ends(args):
                    print(ended_line(done.row))
    return array_wait_status(list(ended.values()))


class Retrying:
    """What ``-W`` says while the system is away: Slurm's sbatch --wait line ("Currently unable
    to load job state information, retrying"), at most once every :data:`RETRY_SAY_S`; the
    wait goes on, as sbatch's does, until the job has ended (or ``--timeout``)."""

    __slots__ = ("_prog", "_said")

    def __init__(self, prog: str) -> None:
        self._prog = prog
        self._said = -RETRY_SAY_S

    def __call__(self, why: str) -> None:
        now = time.monotonic()
        if now - self._said >= RETRY_SAY_S:
            self._said = now
            print(f"{self._prog}: error: Currently unable to load job state information, "
                  f"retrying: {why}", file=sys.stderr, flush=True)


RETRY_SAY_S = 60.0


def wait_limit(timeout: float) -> float:
    """How long ``-W`` waits: ``--timeout`` seconds, or (0, the default) until the job ends, as
    sbatch --wait does (a limit of an hour gave up on longer jobs with status 1)."""
    return timeout if timeout > 0 else float("inf")


def array_wait_status(tasks: list[Mapping[str, Any]]) -> int:
    """sbatch --wait's exit status for an array: the highest of its tasks' (sbatch(1))."""
    return max((wait_status(t) for t in tasks), default=0)


def ended_line(job: Mapping[str, Any]) -> str:
    """The line ``-W`` prints when the job has ended (its reason unless it is ``None``)."""
    reason = job.get("reason")
    why = f": {reason}" if job["state"] != "COMPLETED" and reason and reason != "None" else ""
    task = int(job.get("array_task_id", -1))
    name = f"{job['array_job_id']}_{task}" if task >= 0 and job.get("array_job_id") else (
        job["job_id"])
    return (f"Job {name} ended {job['state']} (exit code {job['exit_code']}"
            f"{', signal ' + str(job['signal']) if job.get('signal') else ''}){why}")


def wait_status(job: Mapping[str, Any]) -> int:
    """sbatch --wait's exit status: the job's exit code; 1 when a signal ended it or it ended
    other than ``COMPLETED`` without an exit code (Slurm's sbatch(1), ``--wait``)."""
    if job["state"] == "COMPLETED":
        return 0
    code = int(job.get("exit_code") or 0)
    return 1 if job.get("signal") or not 0 < code < 256 else code


def will_run_line(prog: str, answer: dict[str, Any]) -> str:
    """sbatch --test-only's line about a ``JobTestAnswered`` (its start in local time, as
    Slurm prints times)."""
    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(answer["start_ms"] / 1000))
    return (f"{prog}: Job {answer['job_id']} to start at {when} using {answer['cpus']} "
            f"processors on nodes {answer['nodes']} in partition {answer['partition']}")


def _refusal(decision: Decision) -> str:
    if decision.state == "UNKNOWN":
        why = "" if decision.detail == "not decided in time" else f" ({decision.detail})"
        return (f"no decision about {decision.job_sluid} within the wait{why}; it was sent "
                f"and may be queued: sluice show job {decision.job_sluid} before submitting "
                "again")
    # sbatch's words ("Batch job submission failed: <Slurm's reason>"), then the name
    return f"error: Batch job submission failed: {decision.detail} [{decision.reason}]"


_ACTIVE = frozenset({"PENDING", "RUNNING", "SUSPENDED", "COMPLETING"})


def _job_verb(args: argparse.Namespace, settings: Settings) -> int:
    client = Client(settings)
    status = 0
    for ref in args.jobs:
        try:
            job = client.job(ref)
        except NoSuchJobError:  # scontrol's words
            print(f"Invalid job id specified for job {ref}", file=sys.stderr)
            status = 1
            continue
        except ApiError as exc:
            print(f"sluice {args.verb}: {ref}: {exc}", file=sys.stderr)
            status = 1
            continue
        name = {"cancel": "CancelJob", "hold": "HoldJob", "release": "ReleaseJob"}[args.verb]
        subject = request_subject(job, ref)  # an array's id: every task, as Slurm
        if name != "CancelJob" and job.get("state") not in _ACTIVE and (
                subject == job.get("job_sluid") or _every_task_ended(client, subject)):
            # ended (and maybe purged by the shard: no answer); an array's id once every task
            print(f"Job has already finished for job {ref} (JobFinished: job is "
                  f"{job.get('state')})", file=sys.stderr)
            status = 1
            continue
        record: dict[str, Any] = {"job_sluid": subject, "user": real_user()}
        if name == "HoldJob":
            record["admin"] = admin_hold(args.uhold, os.getuid(), real_user(), client)
        from cli.job_control import refusal_line  # (it imports this module)

        say = functools.partial(refusal_line, ref=ref, verb=args.verb)
        if not decided(client, args.verb, ref, subject, name, record, say,
                       watch=str(job.get("job_sluid") or "")):
            status = 1
    return status


def _every_task_ended(client: Client, array_sluid: str) -> bool:
    from cli.job_control import every_task_ended  # (it imports this module)

    return every_task_ended(client, array_sluid)


def admin_hold(uhold: bool, uid: int, me: str, client: Client) -> bool:
    """Whether ``sluice hold`` (scontrol hold) asks for Slurm's administrator hold: from root
    or an operator or administrator of the configuration in force, unless ``--uhold`` (scontrol
    uhold). An admin hold only an operator may release; a user hold, the job's owner too."""
    if uhold:
        return False
    if uid == 0:
        return True
    cluster = client.get("/v1/config")["config"].get("cluster", {})
    return me in (cluster.get("privileged") or ())


def decided(client: Client, verb: str, ref: str, subject: str, name: str,
            record: dict[str, Any], say: Any = None, watch: str = "") -> bool:
    """Send a request about ``subject`` and wait for its answer: False (and why, printed:
    ``say(denial)`` when given, else ``sluice VERB: REF: refused: REASON: DETAIL``) when it was
    refused. The row changing, or no refusal within the wait, counts as done. ``watch``: the
    job whose refusal and row tell the answer, when ``subject`` is an array's SLUID (the shard
    answers for each task: its first task's, the row the id named)."""
    if not subject:  # nothing the views know (an unknown node): send, nothing to wait for
        client.send(request_key(name, record), name, record)
        return True
    target = watch or subject
    before = {d["event_sluid"] for d in client.denials(target)}
    path = f"/v1/nodes/{ref}" if name in ("DrainNode", "ResumeNode") else f"/v1/jobs/{target}"
    old = _row(client, path)
    client.send(request_key(name, record), name, record)  # the key the intake checks
    denial = client.await_decision(target, name, before, lambda: _row(client, path) != old)
    if denial is None:
        return True
    line = say(denial) if say is not None else (
        f"sluice {verb}: {ref}: refused: {denial['reason']}: {denial['detail']}")
    print(line, file=sys.stderr)
    return False


def _row(client: Client, path: str) -> Any:
    try:
        answer = client.get(path)
    except ApiError:
        return None
    return answer.get("job") or answer.get("node")


def real_user() -> str:
    """The calling process's Unix user (by uid, not ``$USER``: what a credential proves)."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())
