"""``sluice cancel`` (scancel, with its filters; ``-s SIG [-b|-f]`` sends a signal instead)
and ``sluice update job`` (``scontrol update job``): which jobs a filter names is read from
the views; each request's answer is awaited and a refusal printed, exit 1.

``sluice update job ID Key=Value...`` (or ``sluice update JobId=ID Key=Value...``) takes
scontrol's names: ``TimeLimit``, ``Partition``, ``QOS``, ``Name``/``JobName``, ``Account``,
``Nice``, ``Comment``, ``Dependency``, ``NumNodes``, ``NumTasks``, ``MinMemoryNode``,
``Features``, ``ReqNodeList``, ``ExcNodeList``, ``StartTime``, ``Priority`` (alone: an
operator's; ``Priority=0`` holds the job, as scontrol's). As in Slurm a user may lower
the time limit, and only an operator raise it (the shard decides), also of a running job
(its only field that may change); ``TimeLimit=+TIME``/``-TIME`` is relative to the job's
current limit, as scontrol's.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import sys
from datetime import datetime
from typing import Any
from urllib.parse import quote

from cli.client import ApiError, Client, NoSuchJobError, request_subject
from cli.job_fields import ended, state_filter
from cli.queue_cmd import matches_state
from cli.slurm_units import mail_types, mem_mb, node_range, parse_begin, signal_number
from cli.submit import decided, real_user
from cli.timefmt import parse_time_limit
from scheduler.topology.hostlist import HostlistError, expand
from schemas.request_keys import request_key
from streams.settings import Settings

__all__ = ["UPDATE_FIELDS", "add_parsers", "relative_limit", "update_changes"]

_SIGKILL = 9  # scancel -s KILL is a cancel (scheduler.jobs.signal_names.SIGKILL)


def _seconds(text: str) -> str:
    """Seconds as text; scontrol's ``+TIME``/``-TIME`` (relative to the job's current limit)
    stay signed until the job is known (:func:`relative_limit`)."""
    sign = text[:1] if text[:1] in ("+", "-") else ""
    if sign and text[1:2] in ("+", "-", "="):
        raise ValueError("Invalid syntax, variations of +=- are not accepted.")
    try:
        return sign + str(parse_time_limit(text[len(sign):]))
    except ValueError:
        raise ValueError("Invalid TimeLimit value") from None


def relative_limit(changes: dict[str, str], current_s: int) -> dict[str, str]:
    """``changes`` with a ``+S``/``-S`` time limit made absolute from the job's current limit
    (seconds; 0 = UNLIMITED), as scontrol does before it sends the update; ValueError with
    scontrol's words when it cannot be."""
    text = changes.get("time_limit_s", "")
    if text[:1] not in ("+", "-"):
        return changes
    delta = int(text[1:])
    if current_s <= 0:
        raise ValueError("Cannot increment/decrement TimeLimit when set to UNLIMITED.")
    if text[0] == "-" and delta > current_s:
        raise ValueError(f"TimeLimit decrement larger than current time limit "
                         f"({delta} s > {current_s} s)")
    return {**changes, "time_limit_s": str(current_s + delta if text[0] == "+"
                                            else current_s - delta)}


def _mem(text: str) -> str:
    return str(mem_mb(text))


def _nodes(text: str) -> str:
    return str(node_range(text)[0])


def _begin(text: str) -> str:
    return str(parse_begin(text, datetime.now().astimezone()))


def _priority(text: str) -> str:
    """scontrol's ``Priority=``: a whole number, 0 (a hold) to 2^32-2."""
    value = text.strip()
    if not value.isascii() or not value.isdigit() or int(value) >= 2**32 - 1:
        raise ValueError(f"Invalid Priority value: {text}")
    return str(int(value))


def _same(text: str) -> str:
    return text


def _requeue(text: str) -> str:
    """scontrol's ``Requeue=0|1`` (any positive number is 1, as slurmctld's) as the spec's
    ``no``/``yes``."""
    value = text.strip()
    if not value.isascii() or not value.isdigit():
        raise ValueError(f"Invalid Requeue value: {text}")
    return "yes" if int(value) else "no"


def _throttle(text: str) -> int:
    """scontrol's ``ArrayTaskThrottle=``: how many tasks may run at once, 0 for no limit."""
    value = text.strip()
    if not value.isascii() or not value.isdigit() or int(value) >= 2**31:
        raise ValueError(f"Invalid ArrayTaskThrottle value: {text}")
    return int(value)


UPDATE_FIELDS: dict[str, tuple[str, Any]] = {
    "timelimit": ("time_limit_s", _seconds), "partition": ("partition", _same),
    "qos": ("qos", _same), "name": ("name", _same), "jobname": ("name", _same),
    "account": ("account", _same), "nice": ("nice", _same), "comment": ("comment", _same),
    "admincomment": ("admin_comment", _same), "extra": ("extra", _same),
    "dependency": ("dependency", _same), "numnodes": ("nodes_min", _nodes),
    "numtasks": ("ntasks", _same), "minmemorynode": ("mem_per_node_mb", _mem),
    "features": ("constraint", _same), "reqnodelist": ("nodelist", _same),
    "excnodelist": ("exclude", _same), "starttime": ("begin_time_ms", _begin),
    "priority": ("priority", _priority), "reservation": ("reservation", _same),
    "arraytaskthrottle": ("array", lambda text: f"%{_throttle(text)}"),
    "mailtype": ("mail_type", mail_types), "mailuser": ("mail_user", _same),
    "requeue": ("requeue", _requeue),
}
"""scontrol's field name (lower case) → (JobSpec field, value translation)."""


def add_parsers(sub: Any) -> None:
    """Register cancel and update."""
    c = sub.add_parser("cancel", help="cancel jobs (like scancel)")
    c.add_argument("jobs", nargs="*", help="job ids or SLUIDs; ID.STEP for one step")
    c.add_argument("-u", "--user", default="", help="the jobs of this user")
    c.add_argument("--me", action="store_true", help="my jobs")
    c.add_argument("-n", "--name", "--jobname", dest="name", default="")
    c.add_argument("-t", "--state", default="", help="PENDING, RUNNING or SUSPENDED")
    c.add_argument("-p", "--partition", default="")
    c.add_argument("-A", "--account", default="")
    c.add_argument("-q", "--qos", default="")
    c.add_argument("-s", "--signal", type=signal_number, default=0, metavar="SIG",
                   help="send this signal (USR1, TERM, 10...) instead of cancelling; the job "
                        "keeps running (KILL: cancel)")
    c.add_argument("-w", "--nodelist", default="", help="the jobs on these nodes (host list)")
    c.add_argument("-R", "--reservation", default="", help="the jobs of this reservation")
    c.add_argument("-Q", "--quiet", action="store_true", help="no error messages (as scancel)")
    c.add_argument("-v", "--verbose", action="count", default=0, help="accepted")
    c.add_argument("-H", "--hurry", action="store_true",
                   help="accepted: no burst buffer to stage out")
    scope = c.add_mutually_exclusive_group()
    scope.add_argument("-b", "--batch", action="store_true",
                       help="with -s: signal only the batch shell")
    scope.add_argument("-f", "--full", action="store_true",
                       help="with -s: signal the batch shell, its children and all steps")
    c.set_defaults(run=_cancel)
    u = sub.add_parser("update", help="change a pending job, or a running job's time limit "
                                      "(like scontrol update job)",
                       usage="sluice update job ID Key=Value... | sluice update JobId=ID ...")
    u.add_argument("words", nargs="+", metavar="job ID Key=Value")
    u.set_defaults(run=_update)


def _cancel(args: argparse.Namespace, settings: Settings) -> int:
    """scancel: ``-Q`` says nothing of what fails, as scancel's (the exit status stays)."""
    if not args.quiet:
        return _cancel_jobs(args, settings)
    with contextlib.redirect_stderr(io.StringIO()):
        return _cancel_jobs(args, settings)


def _cancel_jobs(args: argparse.Namespace, settings: Settings) -> int:
    try:
        states = state_filter(args.state, "-t") if args.state else None
    except ValueError as error:
        print(f"sluice cancel: {error}", file=sys.stderr)
        return 2
    user = real_user() if args.me else args.user
    filtered = bool(user or args.name or args.state or args.partition or args.account
                    or args.qos or args.nodelist or args.reservation)
    if not args.jobs and not filtered:
        print("sluice cancel: no job identification provided (job ids, or -u/-n/-t/-p/-A/-q/"
              "-w/-R)", file=sys.stderr)
        return 1
    try:
        args.nodes_named = frozenset(expand(args.nodelist)) if args.nodelist else frozenset()
    except HostlistError:
        print(f"sluice cancel: -w: invalid host list {args.nodelist!r}", file=sys.stderr)
        return 1
    try:
        given = expand_job_refs(args.jobs)
    except ValueError as error:
        print(f"sluice cancel: {error}", file=sys.stderr)
        return 1
    client = Client(settings)
    if given:
        refs = given
        if filtered:  # ids and filters: the ids that match (scancel's rule)
            rows = client.get("/v1/jobs")["jobs"]
            refs = [ref for r in refs for ref in _matching_refs(r, rows, args, user, states)]
    else:
        refs = [_task_ref(j) for j in client.get("/v1/jobs")["jobs"]
                if _matches(j, args, user, states)]
    status = 0
    for ref in refs:
        if not _cancel_one(client, args, ref):
            status = 1
    return status


def _cancel_one(client: Client, args: argparse.Namespace, ref: str) -> bool:
    """Cancel (or signal) the job, task or step ``ref`` names; False (and why, printed in
    scancel's words) when it could not be."""
    try:
        job = client.job(_job_part(ref))
    except NoSuchJobError:  # scancel's words
        print(f"sluice cancel: Kill job error on job id {ref}: Invalid job id specified",
              file=sys.stderr)
        return False
    except ApiError as exc:
        print(f"sluice cancel: {ref}: {exc}", file=sys.stderr)
        return False
    subject = request_subject(job, ref)  # an array's id: every task (scancel's rule)
    if ref == _job_part(ref) and "state" in job and ended(job) and (
            subject == job.get("job_sluid") or every_task_ended(client, subject)):
        print(f"sluice cancel: Kill job error on job id {ref}: Job/step already completing "
              f"or completed", file=sys.stderr)  # scancel's words (ESLURM_ALREADY_DONE)
        return False
    record = {"job_sluid": subject, "user": real_user(), **_signal_fields(args)}
    if ref != _job_part(ref):  # scancel ID.STEP: that step alone
        step = _running_step(job, ref.rpartition(".")[2])
        if step is None:
            print(f"sluice cancel: {ref}: Invalid job id specified: job {job['job_id']} "
                  f"runs no step {ref.rpartition('.')[2]}", file=sys.stderr)
            return False
        record = {**record, "job_sluid": job["job_sluid"], "step_sluid": step["step_sluid"],
                  "signal_scope": ""}
    return bool(decided(client, "cancel", ref, record["job_sluid"], "CancelJob", record,
                        functools.partial(kill_refusal_line, ref=ref)))


def every_task_ended(client: Client, array_sluid: str) -> bool:
    """True when every task of the array has ended (the views keep ended tasks: the shard may
    have purged them, and then answers nothing); False when the views do not say."""
    try:
        tasks = client.get(f"/v1/jobs?array={quote(array_sluid, safe='')}")["jobs"]
    except (ApiError, KeyError):
        return False
    return bool(tasks) and all("state" in task and ended(task) for task in tasks)


_MAX_REFS = 0xFFFF  # scancel's own bound on the ids of one call


def expand_job_refs(words: list[str]) -> list[str]:
    """scancel's job ids: ``12``, ``12.3`` (a step), ``12_4``, ``12_*`` (the whole array:
    ``12``), ``12_[1-3,7]`` (those tasks), a SLUID, and several of them in one word with
    commas (``12,13_[1-2]``); ValueError ``Invalid job id …`` for anything else."""
    refs: list[str] = []
    for word in words:
        try:
            items = expand(word)
        except HostlistError:
            raise ValueError(f"Invalid job id {word}") from None
        for item in items:
            ref = item[:-2] if item.endswith("_*") else item
            job, _, step = ref.partition(".")
            head, under, task = job.partition("_")
            numbered = head.isdigit() and (not under or task.isdigit())
            if not ref or not (numbered or (head.startswith("s") and head.isalnum()
                                            and not task)) or (step and not step.isdigit()):
                raise ValueError(f"Invalid job id {word}")
            refs.append(ref)
            if len(refs) > _MAX_REFS:
                raise ValueError(f"more than {_MAX_REFS} job ids in one call")
    return refs


def _task_ref(job: dict[str, Any]) -> str:
    """The reference that names the job ``job`` (a views row) alone: an array task's
    ``ARRAYID_TASK``, as scancel's filters signal each task they match; its bare id would be
    the array's for the first task (every task cancelled, running ones too, by ``-t PD``) and
    an error for the others once the array's id had cancelled them."""
    task = int(job.get("array_task_id", -1))
    if task >= 0 and job.get("array_job_id"):
        return f"{job['array_job_id']}_{task}"
    return str(job["job_id"])


def _matching_refs(ref: str, rows: list[dict[str, Any]], args: argparse.Namespace, user: str,
                   states: frozenset[str] | None) -> list[str]:
    """Of the job, task or step ``ref`` names, what the filters match: an array's id names
    each of its tasks that match (as scancel's ``-t PD 37``: the pending tasks alone)."""
    part = _job_part(ref)
    if ref == part and part.isdecimal():
        tasks = [j for j in rows if int(j.get("array_task_id", -1)) >= 0
                 and str(j.get("array_job_id")) == part]
        if tasks:
            return [_task_ref(j) for j in tasks if _matches(j, args, user, states)]
    named = [j for j in rows if part in (str(j["job_id"]), _task_ref(j), j.get("job_sluid"))]
    return [ref] if named and _matches(named[0], args, user, states) else []


def _job_part(ref: str) -> str:
    """The job of a reference: ``12`` of ``12.3`` (scancel's ID.STEP), the whole otherwise."""
    return ref.rpartition(".")[0] if "." in ref else ref


def _running_step(job: dict[str, Any], step_id: str) -> dict[str, Any] | None:
    """The running step ``step_id`` of the job's current run (its views row), or None."""
    return next((s for s in job.get("steps") or []
                 if str(s.get("step_id")) == step_id and s.get("state") == "RUNNING"
                 and s.get("run_sluid") == job.get("run_sluid")), None)


def _signal_fields(args: argparse.Namespace) -> dict[str, Any]:
    """A signal other than KILL (scancel's cancel) and its scope: the steps (scancel's
    default), the batch shell alone (-b) or everything (-f); none: a cancel."""
    if not args.signal or args.signal == _SIGKILL:
        return {}
    scope = "FULL" if args.full else "BATCH" if args.batch else "STEPS"
    return {"signal": args.signal, "signal_scope": scope}


def _matches(job: dict[str, Any], args: argparse.Namespace, user: str,
             states: frozenset[str] | None) -> bool:
    return ((not user or job.get("user") in user.split(","))
            and (not args.name or job.get("name") in args.name.split(","))
            and (not args.partition or job.get("partition") in args.partition.split(","))
            and (not args.account or job.get("account") in args.account.split(","))
            and (not args.qos or job.get("qos") in args.qos.split(","))
            and (not args.reservation or job.get("reservation") == args.reservation)
            and (not args.nodelist or not args.nodes_named.isdisjoint(job.get("nodes") or ()))
            and matches_state(job, states))


def update_changes(words: list[str]) -> tuple[str, dict[str, str]]:
    """The job reference and the JobSpec changes of ``job ID Key=Value...`` (or ``JobId=ID
    Key=Value...``); ValueError names an unknown field or a value that does not parse."""
    items = list(words)
    ref = ""
    if items and items[0].lower() == "job":
        if len(items) < 2:
            raise ValueError("usage: sluice update job ID Key=Value...")
        ref, items = items[1], items[2:]
    changes: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"{item!r}: expected Key=Value")
        if key.lower() in ("jobid", "job"):
            ref = value
            continue
        known = UPDATE_FIELDS.get(key.lower())
        if known is None:
            raise ValueError(f"{key}: not a field sluice can update (use "
                             f"{', '.join(sorted(UPDATE_FIELDS))}, any case)")
        field, translate = known
        try:
            changes[field] = translate(value)
        except (ValueError, argparse.ArgumentTypeError) as error:
            raise ValueError(f"{key}={value}: {error}") from None
    if not ref:
        raise ValueError("no job named (sluice update job ID Key=Value...)")
    if not changes:
        raise ValueError("nothing to update (Key=Value...)")
    return ref, changes


def _update(args: argparse.Namespace, settings: Settings) -> int:
    try:
        ref, changes = update_changes(args.words)
    except ValueError as error:
        print(f"sluice update: {error}", file=sys.stderr)
        return 2
    client = Client(settings)
    try:
        job = client.job(ref)
    except NoSuchJobError:  # scontrol's words
        print(f"Invalid job id specified for job {ref}", file=sys.stderr)
        return 1
    except ApiError as exc:
        print(f"sluice update: {ref}: {exc}", file=sys.stderr)
        return 1
    subject = request_subject(job, ref)
    if subject != job.get("job_sluid") and changes.get("time_limit_s", "")[:1] in ("+", "-"):
        print("sluice update: TimeLimit increment/decrement not supported for job arrays",
              file=sys.stderr)
        return 1
    try:
        changes = relative_limit(changes, int(job.get("time_limit_s") or 0))
    except ValueError as error:
        print(f"sluice update: {error}", file=sys.stderr)
        return 1
    record = {"job_sluid": subject, "user": real_user(), "changes": changes}
    if set(changes) == {"array"}:  # ArrayTaskThrottle: the tasks take it, no answer to wait
        if not job.get("array_job_sluid"):  # for (an ended first task gives none)
            print(f"sluice update: {ref}: ArrayTaskThrottle: job {job.get('job_id')} is no "
                  "job array", file=sys.stderr)
            return 1
        if subject != job["array_job_sluid"]:  # one task named: Slurm's refusal
            print(f"Requested operation not supported on this job for job {ref} (Update of "
                  "ArrayTaskThrottle is only allowed on ArrayJobId)", file=sys.stderr)
            return 1
        client.send(request_key("UpdateJob", record), "UpdateJob", record)
        return 0
    say = functools.partial(refusal_line, ref=ref)
    return 0 if decided(client, "update", ref, subject, "UpdateJob", record, say,
                        watch=str(job.get("job_sluid") or "")) else 1


_SLURM_WORDS = {"NotOwner": "Access/permission denied", "NotOperator": "Access/permission denied",
                "NotAdministrator": "Access/permission denied",
                "RequeueDisabled": "Requested operation is presently disabled"}
"""The authorization refusals' Slurm text (the core's ``JobRejected`` details start with it)."""


def _constant(name: str) -> str:
    """``AccessDenied`` → ``ACCESS_DENIED``: a reason's constant in RejectionReason."""
    return "".join(f"_{c}" if c.isupper() and i else c for i, c in enumerate(name)).upper()


def slurm_words(denial: dict[str, Any]) -> tuple[str, str]:
    """A refusal's Slurm text (``Access/permission denied``; "" when it has none) and the rest
    of its detail (the core's ``JobRejected`` details start with the text)."""
    reason, detail = str(denial.get("reason", "")), str(denial.get("detail", ""))
    words = _SLURM_WORDS.get(reason, "")
    if reason == "JobNotRunning":  # a requeue: scontrol's ESLURM_JOB_PENDING or _ALREADY_DONE
        pending = detail == "job is PENDING"
        words = "Job is pending execution" if pending else (
            "Job/step already completing or completed")
    if not words:
        from scheduler.shard.reasons import RejectionReason  # only when refused

        rejection = getattr(RejectionReason, _constant(reason), None)
        slurm = getattr(rejection, "slurm", "")
        if slurm and detail.startswith(f"{slurm}: "):
            words, detail = slurm, detail.removeprefix(f"{slurm}: ")
    return words, detail


def refusal_line(denial: dict[str, Any], ref: str, verb: str = "update") -> str:
    """A refused update (hold, release, requeue) as scontrol prints one, ``Access/permission
    denied for job 12``, then Sluice's named reason and detail: ``(AccessDenied: alice may
    lower the time limit, …)``."""
    reason = str(denial.get("reason", ""))
    words, detail = slurm_words(denial)
    if not words:
        return f"sluice {verb}: {ref}: refused: {reason}: {detail}"
    return f"{words} for job {ref} ({reason}: {detail})"


def kill_refusal_line(denial: dict[str, Any], ref: str) -> str:
    """A refused cancel as scancel prints one: ``Kill job error on job id 12:
    Access/permission denied`` (through the shim ``scancel: error: …``), then Sluice's reason."""
    reason = str(denial.get("reason", ""))
    words, detail = slurm_words(denial)
    return (f"sluice cancel: Kill job error on job id {ref}: {words or reason} "
            f"({reason}: {detail})")
