"""``sluice show job|node`` in ``scontrol show``'s layout: ``Key=Value`` pairs, a few to a
line, continuation lines indented by three spaces, Slurm's time format (``2026-12-02T04:18:34``,
``Unknown``, ``N/A``) and its ``(null)`` for an empty value."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from cli.client import ApiError, Client
from cli.dependency_shown import shown_dependency
from cli.formats import elapsed, gres, host_list, mem_size, shown, slurm_time, time_limit
from cli.job_fields import job_cpus, job_mem_mb
from cli.nodes_cmd import no_respond
from projections.job_states import shown_reason, shown_state
from scheduler.jobs.signal_names import signal_name

__all__ = ["job_lines", "node_lines"]


def _null(value: Any) -> str:
    text = str(value) if value not in (None, "") else ""
    return text or "(null)"


def _lines(groups: list[list[tuple[str, Any]]]) -> list[str]:
    out = []
    for i, group in enumerate(groups):
        text = " ".join(f"{k}={shown(str(v))}" for k, v in group)
        out.append(text if i == 0 else "   " + text)
    return out


def _user_and_group(user: str) -> list[tuple[str, str]]:
    """scontrol's ``UserId=NAME(UID) GroupId=GROUP(GID)`` (this host's account database; a
    user it does not know: the name and ``(null)``)."""
    import grp
    import pwd

    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return [("UserId", user), ("GroupId", "(null)")]
    try:
        group = grp.getgrgid(entry.pw_gid).gr_name
    except KeyError:
        group = str(entry.pw_gid)
    return [("UserId", f"{user}({entry.pw_uid})"), ("GroupId", f"{group}({entry.pw_gid})")]


def _job_tres(row: Mapping[str, Any], cpus: int, nodes: list[str]) -> str:
    """``TRES=`` of a job: a running job's memory is what its nodes gave it (an ``--exclusive``
    job's: the nodes'), else what it asks; in scontrol's units (``mem=1G``, ``mem=200M``)."""
    gpus = int(row.get("gpus_per_node") or 0)
    tres = f"cpu={cpus},node={len(nodes) or row.get('nodes_min', 1)}"
    held = row.get("alloc") if nodes else None
    held_mem = sum(int(share[1]) for share in held.values()) if isinstance(held, dict) else 0
    job_mem = held_mem if held_mem > 0 else job_mem_mb(row)
    if job_mem:
        tres += f",mem={mem_size(job_mem)}"
    if gpus:
        tres += f",gres/gpu={gpus * (len(nodes) or int(row.get('nodes_min') or 1))}"
    return tres


def job_lines(row: Mapping[str, Any], now_ms: int, job_id: str) -> list[str]:
    """``scontrol show job``'s lines for one job row (``job_id``: ``ID`` or ``BASE_TASK``)."""
    state = shown_state(str(row["state"]), row.get("flags", []))
    detail = str(row.get("reason") or "None")  # an ended job's is free text: Reason is a word
    reason = shown_reason(str(row["state"]), detail, int(row.get("signal") or 0))
    start, end = int(row.get("start_ms") or 0), int(row.get("end_ms") or 0)
    limit = int(row.get("time_limit_s") or 0)
    run_s = ((end or now_ms) - start) // 1000 if start else 0
    if not end and start and limit:
        end_text = slurm_time(start + limit * 1000)
    else:
        end_text = slurm_time(end, "Unknown")
    nodes = list(row.get("nodes", []))
    cpus = job_cpus(row)  # what the nodes gave it, else what it asks (a CPU a node at least)
    mem = int(row.get("mem_per_node_mb") or 0)
    per_cpu = int(row.get("mem_per_cpu_mb") or 0)
    tres = _job_tres(row, cpus, nodes)
    array = []
    if int(row.get("array_task_id", -1)) >= 0:
        base = job_id.split("_", maxsplit=1)[0]
        array = [("ArrayJobId", base), ("ArrayTaskId", row["array_task_id"])]
        if int(row.get("array_limit") or 0):  # the array's %N, as each task shows it
            array.append(("ArrayTaskThrottle", row["array_limit"]))
    groups: list[list[tuple[str, Any]]] = [
        [("JobId", row["job_id"]), *array, ("JobName", row.get("name", ""))],
        [*_user_and_group(str(row.get("user", ""))), ("JobSluid", row.get("job_sluid", "")),
         *([("Submitter", row["submitter"])] if row.get("submitter") else [])],
        [("Priority", row.get("priority", 0)), ("Nice", row.get("nice", 0)),
         ("Account", _null(row.get("account"))), ("QOS", _null(row.get("qos")))],
        [("JobState", state), ("Reason", reason),
         ("Dependency", shown_dependency(row))],
        [("Requeue", 0 if row.get("requeue") == "no" else 1),
         ("Restarts", row.get("restart_count", 0)), ("BatchFlag", 1),
         ("ExitCode", f"{row.get('exit_code', 0)}:{row.get('signal', 0)}")],
        [("RunTime", elapsed(run_s)), ("TimeLimit", time_limit(limit, sacct=True)),
         ("TimeMin", "N/A")],
        [("SubmitTime", slurm_time(row.get("submit_ms", 0))),
         ("EligibleTime", slurm_time(max(int(row.get("begin_ms") or 0),
                                         int(row.get("submit_ms") or 0)), "Unknown"))],
        [("StartTime", slurm_time(start, "Unknown")), ("EndTime", end_text),
         ("Deadline", "N/A")],
        [("Partition", row.get("partition", "")),
         *([("Reservation", row["reservation"])] if row.get("reservation") else [])],
        [("ReqNodeList", _null(row.get("nodelist"))), ("ExcNodeList", _null(row.get("exclude")))],
        [("NodeList", host_list(nodes) if nodes else "(null)")],
        [("BatchHost", nodes[0] if nodes else "(null)")],
        [("NumNodes", len(nodes) or row.get("nodes_min", 1)), ("NumCPUs", cpus),
         ("NumTasks", row.get("ntasks", 1)), ("CPUs/Task", row.get("cpus_per_task", 1))],
        [("TRES", tres)],
        [("MinCPUsNode", row.get("cpus_per_node") or row.get("cpus_per_task", 1)),
         (f"MinMemory{'CPU' if per_cpu > 0 else 'Node'}", mem_size(per_cpu or mem)),
         ("MinTmpDiskNode", 0)],
        [("Features", _null(row.get("constraint"))), ("DelayBoot", "00:00:00")],
        [("OverSubscribe", "NO" if row.get("exclusive") else "OK"),
         ("Licenses", _null(row.get("licenses")))],
        [("Command", _null(" ".join(row.get("command", []))))],
        [("WorkDir", _null(row.get("workdir")))],
        [("StdErr", _shown_path(row, str(row.get("error") or row.get("output") or "")))],
        [("StdIn", "/dev/null")],
        [("StdOut", _shown_path(row, str(row.get("output") or "")))],
    ]
    if row.get("comment"):
        groups.append([("Comment", row["comment"])])
    if row.get("admin_comment"):
        groups.append([("AdminComment", row["admin_comment"])])
    if row.get("extra"):
        groups.append([("Extra", row["extra"])])
    words = [detail] if detail not in ("", "None", reason) else []  # Sluice's own: the
    if row.get("detail"):  # words Reason stands for; a rejection's detail (KeyMismatch: ...)
        words.append(str(row["detail"]))
    if words:
        groups.append([("ReasonDetail", ": ".join(words))])
    if row.get("signal_spec"):
        groups.append([("Signal", row["signal_spec"])])
    last = row.get("last_signal")
    if last:  # Sluice's own: the run's last signal (scancel -s, the --signal warning)
        groups.append([("LastSignal", f"{signal_name(int(last['signal']))}:{last['scope']}:"
                                      f"{last['reason']}@{slurm_time(int(last['time_ms']))}")])
    if row.get("mail_type"):
        groups.append([("MailType", _null(row.get("mail_type"))),
                       ("MailUser", _null(row.get("mail_user")))])
    if int(row.get("gpus_per_node") or 0):
        gpu = "gres/" + gres(row.get("gpu_type"), int(row["gpus_per_node"]))
        groups.append([("TresPerNode", gpu)])
    return _lines(groups)


def _shown_path(row: Mapping[str, Any], pattern: str) -> str:
    """StdOut/StdErr as the caller may know them: ``(null)`` when the views hide the job's
    output paths and working directory from the caller (``PrivateData=jobs``: the row has no
    ``output``), never the default path under a directory the caller was not shown."""
    return std_path(row, pattern) if "output" in row else "(null)"


def std_path(row: Mapping[str, Any], pattern: str) -> str:
    """The file an output pattern names, as scontrol shows StdOut and StdErr: expanded as the
    node expands it (no pattern: the node's default) and under the working directory."""
    from agents.node.environment import default_output, output_path

    nodes = list(row.get("nodes", []))
    path = output_path(pattern or default_output(row), {**row, "run_sluid": row.get(
        "run_sluid") or ""}, nodes[0] if nodes else "")
    workdir = str(row.get("workdir") or "")
    return path if path.startswith("/") or not workdir else f"{workdir.rstrip('/')}/{path}"


def node_lines(row: Mapping[str, Any], client: Client | None = None) -> list[str]:
    """``scontrol show node``'s lines for one node row (``client``: to sum what its jobs hold)."""
    alloc = [0, 0, 0]
    for job_id in row.get("jobs", []):
        if client is None:
            break
        try:
            job = client.job(str(job_id))
        except ApiError:
            continue
        held = job.get("alloc", {}).get(row["name"]) if isinstance(job.get("alloc"), dict) \
            else None
        if held:
            alloc = [a + int(h) for a, h in zip(alloc, held, strict=False)]
    gpus = int(row.get("gpus") or 0)
    state = str(row.get("state", "UNKNOWN"))
    if state == "DRAIN":  # scontrol: what the node does, then +DRAIN (sinfo's drain or drng)
        cpus = int(row.get("cpus") or 0)
        state = ("IDLE" if not row.get("jobs") else "ALLOCATED" if cpus and alloc[0] >= cpus
                 else "MIXED") + "+DRAIN"
    if row.get("resv") and state in ("IDLE", "MIXED", "ALLOCATED"):
        state += f"+{row['resv']}"  # in an active reservation (cli.nodes_cmd.mark_reservations)
    state += "*" if no_respond(row) else ""
    features = ",".join(row.get("features", [])) or "(null)"
    # TRES as slurmctld prints them: mem in its units (8G), a zero count left out
    cfg = f"cpu={row.get('cpus', 0)},mem={mem_size(int(row.get('mem_mb') or 0))}"
    if gpus:
        cfg += f",gres/gpu={gpus}"
    held_tres = f"cpu={alloc[0]}" + (f",mem={mem_size(alloc[1])}" if alloc[1] else "") \
        + (f",gres/gpu={alloc[2]}" if alloc[2] else "")
    groups: list[list[tuple[str, Any]]] = [
        [("NodeName", row["name"]), ("NodeSluid", row.get("node_sluid", ""))],
        [("CPUAlloc", alloc[0]), ("CPUEfctv", row.get("cpus", 0)), ("CPUTot", row.get("cpus", 0))],
        [("AvailableFeatures", features)],
        [("ActiveFeatures", features)],
        [("Gres", gres(row.get("gpu_type"), gpus) if gpus else "(null)")],
        [("RealMemory", row.get("mem_mb", 0)), ("AllocMem", alloc[1])],
        [("State", state), ("Weight", 1)],
        [("Partitions", ",".join(row.get("partitions", [])) or "(null)")],
        [("BootTime", slurm_time(int(row.get("registered_ms") or 0))),
         ("LastStateChange", slurm_time(int(row.get("state_ms") or 0)))],
        [("CfgTRES", cfg)],
        [("AllocTRES", held_tres if alloc[0] else "")],
        [("Jobs", ",".join(str(j) for j in row.get("jobs", [])) or "(null)")],
    ]
    if row.get("reason"):  # scontrol's Reason=TEXT [USER@TIME] when who set it is known
        by = f" [{row['reason_by']}@{slurm_time(int(row.get('state_ms') or 0))}]" if row.get(
            "reason_by") else ""
        groups.append([("Reason", f"{row['reason']}{by}")])
    elif row.get("suspect"):  # Sluice's suspected partition: the node is NO_RESPOND, and why
        groups.append([("Reason", row["suspect"])])
    return _lines(groups)


def now_ms() -> int:
    """This host's clock, in ms (the shell's, for run times)."""
    return int(time.time() * 1000)
