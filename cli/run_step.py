"""``sluice run`` (srun): a job step inside an allocation.

Run from a job (its batch script, or a task of it), ``sluice run [options] command [args…]``
starts ``-n`` tasks of the command over the job's nodes and waits for them:

1. the nodes: the job's (``-N k``: the first k, ``-w``: those named), in allocation order;
2. the tasks: ``--ntasks-per-node`` on each node, else ``-n`` (default: the job's
   ``SLURM_NTASKS``, at least one per node) spread as Slurm's block distribution;
3. a ``StartStep`` request, sealed with the user's credential like every request, saying
   which of the job's resources the step holds (``--exact``, ``--overlap``, ``--mem``,
   ``--gres``: :mod:`cli.step_shape`); the shard checks that the job runs and that the nodes
   are its own and answers ``StepStarted`` (the step id), ``StepPending`` (the job's other
   steps hold what it needs: srun says ``srun: Job N step creation temporarily disabled,
   retrying (Requested nodes are busy)``, then ``srun: Step created for StepId=N.M`` once the
   shard starts it; a signal meanwhile cancels it) or a refusal, printed as Slurm's srun
   prints it (``srun: error: Unable to create step for job N: …``, exit 1);
4. every task's output arrives on this process's socket (:mod:`agents.node.step_io`) and is
   printed as it comes, each line prefixed ``RANK: `` with ``-l``; srun's stdin goes back on
   it to the tasks that read it (``-i``/``--input``, ``--pty``: :mod:`cli.step_stdin`);
5. the exit status is the highest exit code of the tasks (128 + a signal when none exited
   non-zero, all were killed);
   a failed task ends the step, and the shard kills the rest; a failed node ends the step
   (``NODE_FAIL``, exit 1).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import queue
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from cli.client import ApiError, Client, RequestTooLargeError
from cli.step_signals import StepSignals
from cli.submit import real_user
from scheduler.jobs.task_layout import layout_tasks
from streams.settings import Settings

__all__ = ["add_parsers", "immediate_seconds", "optional_values", "plan_tasks", "refusal_lines",
           "start_step"]

_POLL_S = 1.0
_END_GRACE_S = 5.0  # output still arriving after the shard ended the step


def add_parsers(sub: Any) -> None:
    """Register ``run``."""
    p = sub.add_parser("run", help="run a job step inside an allocation (like srun)",
                       usage="sluice run [options] command [args...]")
    p.add_argument("-n", "--ntasks", type=int, default=0)
    p.add_argument("-N", "--nodes", type=int, default=0)
    p.add_argument("--ntasks-per-node", type=int, default=0)
    p.add_argument("-c", "--cpus-per-task", type=int, default=0)
    p.add_argument("-w", "--nodelist", default="", help="nodes of the job to run on")
    p.add_argument("-l", "--label", action="store_true", help="prefix lines with the task rank")
    p.add_argument("--export", default="ALL", help="ALL (default), NONE or NAME[,NAME=VALUE…]")
    p.add_argument("-J", "--job-name", default="", help="accepted for srun's sake")
    p.add_argument("-u", "--unbuffered", action="store_true", help="accepted (lines are sent "
                   "as they come)")
    p.add_argument("--mpi", default="", help="accepted; tasks get SLURM_PROCID and friends")
    p.add_argument("-K", "--kill-on-bad-exit", nargs="?", const="1", default="1",
                   help="accepted: a failed task always ends the step")
    p.add_argument("--pty", action="store_true",
                   help="task 0 in a pseudo-terminal, srun's terminal its own (srun --pty bash)")
    p.add_argument("-i", "--input", default="", help="which tasks read srun's stdin: all "
                   "(default), none, or a task id")
    p.add_argument("--quit-on-interrupt", action="store_true",
                   help="one Ctrl-C aborts the step (default: it reports the tasks; a second "
                        "within a second aborts)")
    from cli.step_shape import add_step_options

    add_step_options(p)
    add_allocation_options(p, "srun's own allocation outside a job; inside one --mem, --gres, "
                              "-G, --gpus-per-node and --exclusive are the step's")
    p.add_argument("command", nargs=argparse.REMAINDER)
    p.set_defaults(run=_run)


def add_allocation_options(p: Any, note: str) -> None:
    """The options of an allocation's resources and place: srun's for the one it makes when
    run outside a job (cli.run_alloc), salloc's (cli.alloc_cmd); ``note`` ends each help."""
    from cli.slurm_units import count, mem_mb

    def say(text: str) -> str:
        return f"{text} ({note})" if note else text

    p.add_argument("-t", "--time", default="", help=say("time limit"))
    p.add_argument("-p", "--partition", default="", help=say("partition"))
    p.add_argument("-A", "--account", default="", help=say("account"))
    p.add_argument("-q", "--qos", default="", help=say("QOS"))
    p.add_argument("--mem", type=mem_mb, default=0, help=say("memory per node"))
    p.add_argument("--mem-per-cpu", type=mem_mb, default=0, help=say("memory per CPU"))
    p.add_argument("--gres", default="", help=say("gpu[:type]:count per node"))
    p.add_argument("-G", "--gpus", type=count, default=0, help=say("GPUs in all"))
    p.add_argument("--gpus-per-node", type=count, default=0, help=say("GPUs per node"))
    p.add_argument("-C", "--constraint", default="", help=say("node features"))
    p.add_argument("-x", "--exclude", default="", help=say("nodes not to use"))
    p.add_argument("--exclusive", action="store_true", help=say("whole nodes"))
    p.add_argument("-I", "--immediate", default=None, metavar="SECONDS",
                   help=say("-I[SECONDS]: give up, cancelling the allocation, unless it starts "
                            "within SECONDS (none: at once)"))


def plan_tasks(nodes: list[str], ntasks: int, nnodes: int, per_node: int,
               cpus: dict[str, int] | None = None, cpus_per_task: int = 1,
               ) -> tuple[list[str], list[int]]:
    """The step's nodes and tasks on each (ValueError when impossible). ``cpus``: the CPUs
    the job holds on each node, when known: tasks are laid out over them as srun's block
    layout (a ``4,1`` allocation runs 4 tasks and 1), else as evenly as can be."""
    if nnodes > len(nodes):
        raise ValueError(f"-N {nnodes}: the job has {len(nodes)} node(s)")
    chosen = nodes[:nnodes] if nnodes else list(nodes)
    if per_node:
        counts = [per_node] * len(chosen)
        if ntasks:
            if ntasks > sum(counts):
                raise ValueError(f"-n {ntasks} is more than --ntasks-per-node {per_node} x "
                                 f"{len(chosen)} node(s)")
            counts = _fill(ntasks, counts)
    else:
        if ntasks and ntasks < len(chosen):
            chosen = chosen[:ntasks]  # as srun: fewer tasks than nodes use fewer nodes
        total = max(ntasks, len(chosen))
        held = [(cpus or {}).get(n, 0) for n in chosen]
        if all(held):
            counts = layout_tasks(total, held, cpus_per_task)
        else:
            base, extra = divmod(total, len(chosen))
            counts = [base + (1 if i < extra else 0) for i in range(len(chosen))]
    keep = [i for i, c in enumerate(counts) if c > 0]
    return [chosen[i] for i in keep], [counts[i] for i in keep]


def _held_cpus(job: dict[str, Any]) -> dict[str, int]:
    """The CPUs the job (its views row) holds on each of its nodes."""
    return {str(n): int(share[0]) for n, share in (job.get("alloc") or {}).items()
            if isinstance(share, list) and share}


def _fill(ntasks: int, limits: list[int]) -> list[int]:
    counts = [0] * len(limits)
    for i in range(len(limits)):
        counts[i] = min(limits[i], ntasks - sum(counts))
    return counts


_NODE_SET = ("SLURM_", "SLURMD_", "SLUICE_")
"""Variables the node and the step set for each task: never sent (nor a credential in them)."""


def _exported(spec: str) -> dict[str, str]:
    """srun's variables the tasks get (``--export``), without those the node sets and those
    that came sealed and are unchanged (each node of the step opens them again under these:
    ``agents.auth.sealed_tags``; sent, they were in the clear on every topic)."""
    env = {k: v for k, v in _chosen(spec).items() if not k.startswith(_NODE_SET)}
    tags = os.environ.get("SLUICE_SEALED_TAGS", "")
    if not tags:
        return env
    from agents.auth.sealed_tags import without_sealed  # a sealed job's srun only

    return without_sealed(env, tags)


def _chosen(spec: str) -> dict[str, str]:
    if spec == "ALL":
        return dict(os.environ)
    env: dict[str, str] = {}
    for item in spec.split(","):
        name, eq, value = item.partition("=")
        if name in ("ALL", "NONE", ""):
            if name == "ALL":
                env.update(os.environ)
            continue
        if eq:
            env[name] = value
        elif name in os.environ:
            env[name] = os.environ[name]
    return env


def _fail(message: str, status: int = 1) -> int:
    print(f"sluice run: {message}", file=sys.stderr)
    return status


def immediate_seconds(args: argparse.Namespace) -> float | None:
    """``-I[SECONDS]``/``--immediate[=SECONDS]`` (srun's and salloc's) as seconds, None when
    not given (a bare ``-I`` is ``--immediate=0``: :func:`optional_values`); ValueError for a
    value that is no whole number of seconds."""
    value = getattr(args, "immediate", None)
    if value is None:
        return None
    if not str(value).isdigit():
        raise ValueError(f"invalid --immediate {value!r}: a whole number of seconds")
    return float(value)


_OPTIONAL_VALUES = {"-I": "--immediate=0", "--immediate": "--immediate=0"}
"""srun's and salloc's options whose value is optional and only ever attached (getopt's
``-I5``, ``--immediate=5``): bare, they are these."""


def optional_values(options: dict[str, Any], words: list[str]) -> list[str]:
    """``words`` (a command's, after its name) with a bare ``-I``/``--immediate`` among its
    options made ``--immediate=0``, so argparse never takes the next word (the command of
    ``srun -I hostname``) for its value. The options end at the first word that is neither an
    option nor an option's value (``options``: the parser's option strings → actions)."""
    out: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--" or not word.startswith("-") or word == "-":
            break
        out.append(_OPTIONAL_VALUES.get(word, word))
        action = options.get(word)
        index += 1
        if action is not None and action.nargs is None and word not in _OPTIONAL_VALUES \
                and index < len(words):  # its value, a separate word
            out.append(words[index])
            index += 1
    return out + words[index:]


def _run(args: argparse.Namespace, settings: Settings) -> int:
    command = list(args.command[1:] if args.command[:1] == ["--"] else args.command)
    if not command:  # srun's own words and status; sluice run's usage status 2
        from cli.slurm_program import current

        return _fail("fatal: No command given to execute.", 1 if current() else 2)
    if min(args.ntasks, args.nodes, args.ntasks_per_node, args.cpus_per_task) < 0:
        return _fail("counts cannot be negative", 2)
    from cli.step_stdin import input_mode

    try:  # before any allocation is made for it
        input_mode(args.pty, args.input, args.ntasks or None)
    except ValueError as exc:
        return _fail(str(exc), 2)
    job_sluid = os.environ.get("SLUICE_JOB_SLUID", "")
    # a job's own processes carry SLUICE_RUN_SLUID; salloc's command only the Slurm name
    run_sluid = (os.environ.get("SLUICE_RUN_SLUID")
                 or os.environ.get("SLURM_JOB_SLUID", "")).partition(".")[0]
    if not job_sluid or not run_sluid:  # srun outside a job: its own allocation first
        from cli.run_alloc import run_allocated

        return run_allocated(args, settings, command)
    client = Client(settings)
    try:
        # the job starts in the cycle that queued it: wait (long poll) until the views have
        # folded that decision, or the first srun of a script asks before they know the job
        client.decisions([job_sluid], 10.0)
        job = client.get(f"/v1/jobs/{job_sluid}")["job"]
    except ApiError as exc:
        return _fail(str(exc))
    # the job's task count is the default only when no option shapes the step (as srun)
    default_tasks = int(os.environ.get("SLURM_NTASKS", "0") or 0) if not (
        args.nodes or args.nodelist or args.ntasks_per_node) else 0
    cpus = args.cpus_per_task or int(os.environ.get("SLURM_CPUS_PER_TASK", "1") or 1)
    return start_step(args, client, job, run_sluid, command, default_tasks, cpus, shaped=True)


def start_step(args: argparse.Namespace, client: Client, job: dict[str, Any], run_sluid: str,
               command: list[str], default_tasks: int, cpus: int,
               signals: StepSignals | None = None, shaped: bool = False) -> int:
    """Start one step of ``command`` in the running ``job`` (its views row) and wait for its
    tasks: their output printed as it comes, their exit status returned. Meanwhile the
    signals srun gets are passed on to the tasks, and two Ctrl-C abort the step
    (:mod:`cli.step_signals`; ``signals.aborted`` says so afterwards). ``shaped``: the step's
    share of the job comes from srun's options (:mod:`cli.step_shape`; srun's own allocation's
    step holds the whole job), and the shard picks its nodes when srun named none."""
    job_sluid = str(job["job_sluid"])
    nodes = list(job.get("nodes") or [])
    if args.nodelist:
        from scheduler.topology.hostlist import expand

        wanted = set(expand(args.nodelist))
        nodes = [n for n in nodes if n in wanted] + sorted(wanted - set(nodes))
    try:
        step_nodes, counts = plan_tasks(nodes, args.ntasks or default_tasks, args.nodes,
                                        args.ntasks_per_node, _held_cpus(job), cpus)
    except ValueError as exc:
        return _fail(str(exc), 2)
    if not step_nodes:
        return _fail(f"job {job.get('job_id')} holds no nodes (is it running?)")
    from cli.step_stdin import input_mode, raw_terminal, start_stdin

    try:
        mode = input_mode(getattr(args, "pty", False), getattr(args, "input", ""), sum(counts))
    except ValueError as exc:
        return _fail(str(exc), 2)
    from cli.step_shape import step_shape

    pick = shaped and not args.nodelist and mode in ("all", "none")
    try:
        shape = step_shape(args, len(step_nodes), pick) if shaped else {}
    except ValueError as exc:
        return _fail(str(exc), 2)
    listen_on = list(job.get("nodes") or step_nodes) if pick else step_nodes  # those it may get
    feed_later = pick and mode == "all"  # the shard picks its nodes: fed once they are known
    from agents.node.step_io import StepServer
    from cli.step_address import io_host, listen_addresses

    signals = signals or StepSignals(getattr(args, "quit_on_interrupt", False))
    host = io_host()
    addresses = listen_addresses(host, listen_on)  # what the nodes dial, not every interface
    for _ in range(_SLUID_TRIES):  # again: another srun of the job minted the same step SLUID
        token, step_sluid = secrets.token_hex(16), client.sluids.new()
        try:
            server = StepServer(token, step_sluid, addresses, nodes=frozenset(listen_on))
        except OSError as exc:
            return _fail(f"cannot listen for the step's nodes on {host}: {exc} (set "
                         "SLUICE_STEP_IO_HOST to the name they reach this host by, or "
                         "SLUICE_STEP_IO_BIND)")
        record = {
            "job_sluid": job_sluid, "run_sluid": run_sluid, "step_sluid": step_sluid,
            "user": real_user(), "nodes": step_nodes, "tasks_per_node": counts,
            "cpus_per_task": cpus, "command": command, "workdir": str(Path.cwd()),
            "env": _exported(args.export), "io_address": f"{host}:{server.port}",
            "io_token": token, "input": mode, **shape,
        }
        try:
            before = _send_start(client, job_sluid, record)
        except RequestTooLargeError as exc:
            server.close()
            return _fail(f"{exc}; export fewer variables (--export)")
        except (ApiError, ValueError) as exc:
            server.close()
            return _fail(str(exc))
        if not feed_later:
            start_stdin(server, mode, step_nodes, counts)
        fed = _Creation(job, (lambda names, s=server: start_stdin(s, mode, names, [1] * len(
            names))) if feed_later else None)
        try:
            with signals.installed(), raw_terminal(mode == "pty"):
                return _wait(client, server, job, step_sluid, before, sum(counts), args.label,
                             signals, fed)
        except _SluidTaken:
            continue
        finally:
            server.close()
    return _fail(f"no step SLUID of its own after {_SLUID_TRIES} tries")


_SLUID_TRIES = 5
"""Step SLUIDs srun mints before it gives up (each clashes with another srun's 1 in 512)."""


class _SluidTaken(Exception):  # noqa: N818 - a signal between two functions, not an error
    """The shard refused the step: its SLUID is another srun's (``StepSluidInUse``)."""


def _send_start(client: Client, job_sluid: str, record: dict[str, Any]) -> set[str]:
    """Send the ``StartStep``, its ``io_token`` and environment sealed to the nodes' key (every
    user may read the ledger: :mod:`agents.auth.io_token`); the job's denials before it."""
    from agents.auth.io_token import seal_io_token, seal_step_env

    step = str(record["step_sluid"])
    record = {**record,
              "io_token": seal_io_token(client.settings, str(record["io_token"]), job_sluid, step),
              "env": seal_step_env(client.settings, dict(record["env"]), job_sluid, step)}
    before = {d["event_sluid"] for d in client.denials(job_sluid)}
    client.send(job_sluid, "StartStep", record)
    return before


def _own_denial(denial: dict[str, Any], step_sluid: str) -> bool:
    """Whether a ``StartStep`` refusal is this srun's: its detail ends with its step SLUID
    (a shard from before that ends it with nothing: any refusal then)."""
    detail = str(denial.get("detail", ""))
    return detail.endswith(f"(step {step_sluid})") or "(step s" not in detail


def refusal_lines(denial: dict[str, Any], job_id: Any, step_sluid: str,
                  row: dict[str, Any] | None) -> list[str]:
    """srun's words for its refused step: ``Unable to create step for job N: …`` with the
    shard's reason. A job that has ended (``row``: its views row, for a ``NoSuchRun`` or
    ``JobNotRunning`` refusal) is Slurm's ``Job/step already completing or completed``, then how
    it ended: srun of its own allocation as root, whose run the node refused, said only ``job
    N is not running run … [NoSuchRun]``, not ``RootJobRefused`` (seen 2026-12-08)."""
    state = str((row or {}).get("state") or "")
    if row is not None and state not in ("", "PENDING", "RUNNING"):
        lines = [f"srun: error: Unable to create step for job {job_id}: Job/step already "
                 "completing or completed"]
        why = str(row.get("reason") or "")
        if why and why != "None":
            lines.append(f"srun: error: job {job_id} ended {state}: {why}")
        return lines
    detail = str(denial["detail"]).removesuffix(f" (step {step_sluid})")
    return [f"srun: error: Unable to create step for job {job_id}: {detail} [{denial['reason']}]"]


class _Creation:
    """What srun says of its step's creation, as Slurm's: a step that waits for the job's
    resources (``PENDING`` in the views), its start after the wait, one that ended before it
    started (its run ended, or srun cancelled it)."""

    def __init__(self, job: dict[str, Any], on_start: Any = None) -> None:
        self.job_id, self.on_start = job.get("job_id"), on_start
        self.waited = self.started = False

    def see(self, step: dict[str, Any]) -> int | None:
        """Say what changed; an exit status when the step ended before it was created."""
        if step["state"] == "PENDING":
            if not self.waited:
                self.waited = True
                print(f"srun: Job {self.job_id} step creation temporarily disabled, retrying "
                      "(Requested nodes are busy)", file=sys.stderr)
            return None
        if int(step.get("step_id", 0)) < 0:
            print(f"srun: error: Unable to create step for job {self.job_id}: Job/step already "
                  "completing or completed", file=sys.stderr)
            return 1
        if not self.started:
            self.started = True
            if self.waited:
                print(f"srun: Step created for StepId={self.job_id}.{step['step_id']}",
                      file=sys.stderr)
            if self.on_start is not None:
                self.on_start(list(step.get("nodes") or []))
        return None


def _created(client: Client, job_sluid: str, step_sluid: str, creation: _Creation) -> None:
    """A node of the step that waited spoke: say it was created (its id from the views),
    before its first line, however short the step is."""
    try:
        row = client.get(f"/v1/jobs/{job_sluid}")["job"]
    except ApiError:
        return
    step = next((s for s in row.get("steps", []) if s["step_sluid"] == step_sluid), None)
    if step is not None and step["state"] != "PENDING":
        creation.see(step)


def _wait(client: Client, server: Any, job: dict[str, Any], step_sluid: str, before: set[str],
          ntasks: int, label: bool, signals: StepSignals, creation: _Creation | None = None,
          ) -> int:
    job_sluid = str(job["job_sluid"])
    exits: dict[int, tuple[int, str]] = {}
    next_check, ended_at, step = 0.0, 0.0, None
    while len(exits) < ntasks:
        _pass_on(client, signals, job, step_sluid, step, exits, ntasks)
        try:
            message = server.messages.get(timeout=0.2)
        except queue.Empty:
            message = None
        if message is not None:
            if creation is not None and creation.waited and not creation.started:
                _created(client, job_sluid, step_sluid, creation)  # before its tasks' output
            _show(message, exits, label)
            continue
        now = time.monotonic()
        if now < next_check:
            continue
        next_check = now + _POLL_S
        try:
            denial = next((d for d in client.denials(job_sluid)
                           if d["event_sluid"] not in before and d["request"] == "StartStep"
                           and _own_denial(d, step_sluid)), None)
            if denial is not None and denial["reason"] == "StepSluidInUse":
                raise _SluidTaken
            if denial is not None:
                ended = client.get(f"/v1/jobs/{job_sluid}")["job"] if denial["reason"] in (
                    "NoSuchRun", "JobNotRunning") else None
                for line in refusal_lines(denial, job.get("job_id"), step_sluid, ended):
                    print(line, file=sys.stderr)
                return 1
            row = client.get(f"/v1/jobs/{job_sluid}")["job"]
        except ApiError:
            row = None  # the views restart: the tasks' own exits still come
        lost = client.contact.lost()
        if lost is not None and not server.connected():  # no task and no system: gone
            return _fail(f"{lost} ({ntasks - len(exits)} task(s) did not report)")
        if row is None:
            continue
        step = next((s for s in row.get("steps", []) if s["step_sluid"] == step_sluid), step)
        status = (creation or _Creation(job)).see(step) if step is not None else None
        if status is not None:
            return status
        if step is not None and step["state"] not in ("RUNNING", "PENDING"):
            ended_at = ended_at or now
            if now - ended_at > _END_GRACE_S:
                break
    if (step is not None and step["state"] == "NODE_FAIL") or len(exits) < ntasks:
        why = step["reason"] if step is not None else "its tasks stopped answering"
        return _fail(f"step ended {step['state'] if step else 'early'}: {why} "
                     f"({ntasks - len(exits)} task(s) did not report)")
    return _status(exits)


def _pass_on(client: Client, signals: StepSignals, job: dict[str, Any], step_sluid: str,
             step: dict[str, Any] | None, exits: dict[int, tuple[int, str]], ntasks: int,
             ) -> None:
    """Act on what srun received since the last look (:mod:`cli.step_signals`); while the step
    waits for resources any signal cancels it, as Slurm's srun gives up a pending step."""
    name = f"StepId={job['job_id']}.{step['step_id'] if step else '?'}"
    if step is not None and step["state"] == "PENDING" and not signals.aborted and (
            signals.report or signals.forward or signals.abort):
        signum = signals.forward[0] if signals.forward and not (
            signals.report or signals.abort) else 2
        signals.forward.clear()
        signals.report = signals.abort = False
        signals.aborted = True
        print(f"srun: Cancelled pending job step with signal {signum}", file=sys.stderr)
        with contextlib.suppress(ApiError, ValueError):
            client.send(str(job["job_sluid"]), "CancelJob", {
                "job_sluid": job["job_sluid"], "user": real_user(), "step_sluid": step_sluid})
        return
    if signals.report:
        signals.report = False
        running = sorted(set(range(ntasks)) - set(exits))
        print(f"srun: interrupt (one more within 1 sec to abort)\nsrun: {name} task(s) "
              f"{_ranks(running) or 'none'}: running; {_ranks(sorted(exits)) or 'none'}: "
              "exited", file=sys.stderr)
    sends = [{"signal": sig} for sig in signals.forward]
    signals.forward.clear()
    if signals.abort and not signals.aborted:
        signals.aborted = True
        print(f"srun: sending Ctrl-C to {name}\nsrun: Job step aborted: its tasks are being "
              "killed", file=sys.stderr)
        sends.append({})
    for extra in sends:
        record = {"job_sluid": job["job_sluid"], "user": real_user(), "step_sluid": step_sluid,
                  **extra}
        try:
            client.send(str(job["job_sluid"]), "CancelJob", record)
        except (ApiError, ValueError) as exc:
            _fail(f"could not pass a signal on to {name}: {exc}")


def _ranks(ranks: list[int]) -> str:
    """Task ranks as Slurm lists them: ``0-3,5``."""
    spans: list[list[int]] = []
    for rank in ranks:
        if spans and rank == spans[-1][1] + 1:
            spans[-1][1] = rank
        else:
            spans.append([rank, rank])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def _show(message: dict[str, Any], exits: dict[int, tuple[int, str]], label: bool) -> None:
    rank = int(message.get("t", 0))
    if "exit" in message:
        exits[rank] = (int(message["exit"]), str(message.get("node", "")))
        return
    if isinstance(message.get("b"), str):  # the task's terminal (--pty), as it comes
        from cli.step_stdin import write_terminal

        with contextlib.suppress(ValueError):
            write_terminal(base64.b64decode(message["b"]))
        return
    text = str(message.get("d", ""))
    stream = sys.stderr if message.get("fd") == 2 else sys.stdout
    stream.write(f"{rank}: {text}" if label else text)
    stream.flush()


def _status(exits: dict[int, tuple[int, str]]) -> int:
    """The highest exit code of the tasks; when none exited non-zero, 128 + the signal that
    ended one (tasks the step's end killed do not hide the failed task's code)."""
    codes, signals = [0], [0]
    for rank, (code, node) in sorted(exits.items()):
        if code == 0:
            continue
        how = f"Killed by signal {-code}" if code < 0 else f"Exited with exit code {code}"
        print(f"srun: error: {node}: task {rank}: {how}", file=sys.stderr)
        (signals if code < 0 else codes).append(abs(code))
    return max(codes) or (128 + max(signals) if max(signals) else 0)
