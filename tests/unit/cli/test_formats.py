"""Slurm's output formats (``cli.formats``, ``cli.job_fields``, the queue, history, nodes and
show layouts) on rows as the views' API gives them."""

from __future__ import annotations

from typing import Any

import pytest

from cli.formats import elapsed, parse_field_list, parse_percent, render, time_limit
from cli.history_cmd import SACCT_FIELDS, history_rows
from cli.job_fields import SQUEUE_CODES, SQUEUE_FIELDS, job_values, state_filter
from cli.nodes_cmd import REASONS_FORMAT, SINFO_CODES, SUMMARY_FORMAT, node_lines
from cli.queue_cmd import DEFAULT_FORMAT
from cli.show_cmd import job_lines

NOW = 1_800_000_000_000


def job(**fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "job_id": 12, "job_sluid": "s0000000000012", "name": "train", "user": "alice",
        "account": "ml", "partition": "gpu", "qos": "normal", "state": "RUNNING", "flags": [],
        "reason": "None", "nodes": ["gpu01", "gpu02"], "nodes_min": 2, "ntasks": 4,
        "cpus_per_task": 2, "time_limit_s": 3600, "submit_ms": NOW - 200_000,
        "start_ms": NOW - 125_000, "end_ms": 0, "array_job_sluid": "", "array_task_id": -1,
        "runs": [{"run_sluid": "r1", "state": "RUNNING", "start_ms": NOW - 125_000,
                  "end_ms": 0, "exit_code": 0, "signal": 0, "nodes": ["gpu01", "gpu02"]}],
        "exit_code": 0, "signal": 0, "mem_per_node_mb": 4096, "gpus_per_node": 0,
    }
    return {**row, **fields}


def squeue(rows: list[dict[str, Any]], fmt: str = DEFAULT_FORMAT,
           bases: dict[str, int] | None = None) -> list[str]:
    layout = parse_percent(fmt, SQUEUE_CODES, "-o")
    return render([job_values(r, NOW, bases or {}) for r in rows], layout)


def test_squeue_default_layout() -> None:
    pending = job(job_id=13, name="a-very-long-name", state="PENDING", reason="Resources",
                  nodes=[], start_ms=0, runs=[])
    assert squeue([job(), pending]) == [
        "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)",
        "                12       gpu    train    alice  R       2:05      2 gpu[01-02]",
        "                13       gpu a-very-l    alice PD       0:00      2 (Resources)",
    ]


def test_a_requeued_pending_job_has_used_no_time_as_squeue_shows_it() -> None:
    requeued = job(state="PENDING", reason="BeginTime", start_ms=NOW - 60_000, end_ms=0)
    completing = job(state="PENDING", flags=["COMPLETING"], start_ms=NOW - 60_000, end_ms=0)
    assert [line.split()[5] for line in squeue([requeued, completing])[1:]] == ["0:00", "1:00"]


def test_squeue_codes_and_array_ids() -> None:
    task = job(array_job_sluid="sA", array_task_id=3, job_id=15)
    assert squeue([task], "%i %A %F %K %t %T %l %L %C %m", {"sA": 12}) == [
        "JOBID JOBID ARRAY_JOB_ID ARRAY_TASK_ID ST STATE TIME_LIMIT TIME_LEFT CPUS MIN_MEMORY",
        "12_3 15 12 3 R RUNNING 1:00:00 57:55 8 4G",  # Slurm's convert_num_unit: 4096M
    ]


def test_squeue_field_list_pads_to_twenty() -> None:
    columns = parse_field_list("JobID,State:.9,ReasonList", SQUEUE_FIELDS, "-O", ":")
    lines = render([job_values(job(), NOW, {})], list(columns))
    assert lines[0] == "JOBID                   STATENODELIST(REASON)    "
    assert lines[1] == "12                    RUNNINGgpu[01-02]          "


@pytest.mark.parametrize(
    ("text", "names"),
    [("PD,R", {"PENDING", "RUNNING"}), ("running,cg", {"RUNNING", "COMPLETING"}),
     ("CD,F,TO,NF,CA", {"COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "CANCELLED"}),
     ("RD", {"RESV_DEL_HOLD"})],
)
def test_state_filters_take_short_and_long_names(text: str, names: set[str]) -> None:
    assert state_filter(text, "-t") == names


def test_unknown_codes_fields_and_states_are_refused() -> None:
    with pytest.raises(ValueError, match="%Q"):
        parse_percent("%i %Q", {"i": ("job_id", "JOBID")}, "-o")
    with pytest.raises(ValueError, match="Colour"):
        parse_field_list("JobID,Colour", SACCT_FIELDS, "--format", "%")
    with pytest.raises(ValueError, match="XX"):
        state_filter("R,XX", "-t")


def sacct(rows: list[dict[str, Any]], fmt: str, steps: bool = True, **kw: Any) -> list[str]:
    layout: list[Any] = []
    for column in parse_field_list(fmt, SACCT_FIELDS, "--format", "%"):
        layout += [" ", column] if layout else [column]
    return render(history_rows(rows, NOW, {}, False, steps), layout, cut_mark="+",
                  dashes=True, end=" ", **kw)


def test_sacct_layout_widths_and_truncation() -> None:
    ended = job(state="COMPLETED", end_ms=NOW - 5_000, name="a-long-jobname",
                runs=[{"run_sluid": "r1", "state": "COMPLETED", "start_ms": NOW - 125_000,
                       "end_ms": NOW - 5_000, "exit_code": 0, "signal": 0,
                       "nodes": ["gpu01"]}])
    assert sacct([ended], "JobID,JobName,State,Elapsed,ExitCode") == [
        "JobID           JobName      State    Elapsed ExitCode ",
        "------------ ---------- ---------- ---------- -------- ",
        "12           a-long-jo+  COMPLETED   00:02:00      0:0 ",
        "12.batch          batch  COMPLETED   00:02:00      0:0 ",  # sacct's batch step
    ]
    assert sacct([ended], "JobID,JobName%-20,AllocCPUS", steps=False) == [
        "JobID        JobName               AllocCPUS ",
        "------------ -------------------- ---------- ",
        "12           a-long-jobname                8 ",
    ]


def test_sacct_counts_each_line_s_own_tasks_and_cpus() -> None:
    """The allocation: what its nodes gave (cpus_per_node each); the batch step: one task on
    the batch host's CPUs; a step: its own tasks times its own CPUs a task."""
    row = job(cpus_per_node=4, steps=[
        {"step_id": 0, "step_sluid": "s0", "run_sluid": "r1", "state": "COMPLETED",
         "start_ms": NOW - 100_000, "end_ms": NOW - 90_000, "exit_code": 0, "signal": 0,
         "nodes": ["gpu01", "gpu02"], "ntasks": 3, "cpus_per_task": 1, "name": "hostname"},
        {"step_id": 1, "step_sluid": "s1", "run_sluid": "r1", "state": "RUNNING",
         "start_ms": NOW - 50_000, "end_ms": 0, "exit_code": 0, "signal": 0,
         "nodes": ["gpu02"], "ntasks": 1, "name": "train"}])  # (a row from before cpus_per_task)
    assert sacct([row], "JobID,NTasks,AllocCPUS,NNodes") == [
        "JobID          NTasks  AllocCPUS   NNodes ",
        "------------ -------- ---------- -------- ",
        "12                             8        2 ",
        "12.batch            1          4        1 ",
        "12.0                3          3        2 ",
        "12.1                1          2        1 ",
    ]


def test_sacct_parsable_and_every_run() -> None:
    rows = history_rows([job()], NOW, {}, False, False)  # -X: allocations only
    columns = parse_field_list("JobID,State,NodeList", SACCT_FIELDS, "--format", "%")
    assert render(rows, list(columns), delimiter="|") == [
        "JobID|State|NodeList", "12|RUNNING|gpu[01-02]"]
    assert render(rows, list(columns), delimiter="|", trailing=True, header=False) == [
        "12|RUNNING|gpu[01-02]|"]
    requeued = job(runs=[{"run_sluid": "r0", "state": "NODE_FAIL", "start_ms": NOW - 900_000,
                          "end_ms": NOW - 800_000, "exit_code": 0, "signal": 9,
                          "nodes": ["gpu09"]}, *job()["runs"]])
    every = history_rows([requeued], NOW, {}, True, True)
    assert [(r["job_id"], r["state"], r["exit_code"], r["nodelist"]) for r in every] == [
        ("12", "NODE_FAIL", "0:9", "gpu09"), ("12.batch", "NODE_FAIL", "0:9", "gpu09"),
        ("12", "RUNNING", "0:0", "gpu[01-02]"), ("12.batch", "RUNNING", "0:0", "gpu01")]


def test_times_as_slurm_prints_them() -> None:
    assert [elapsed(s) for s in (5, 3_725, 90_061)] == ["00:00:05", "01:02:05", "1-01:01:01"]
    assert [time_limit(s) for s in (0, 1_800, 3_600, 86_400)] == [
        "UNLIMITED", "30:00", "1:00:00", "1-00:00:00"]
    assert time_limit(1_800, sacct=True) == "00:30:00"


def test_sinfo_groups_nodes_by_the_printed_fields() -> None:
    nodes = [{"name": f"n{i}", "state": state, "cpus": 4, "mem_mb": 8192, "gpus": 0,
              "features": [], "jobs": []}
             for i, state in ((1, "IDLE"), (2, "IDLE"), (3, "ALLOCATED"), (10, "IDLE"))]
    parts = [{"name": "batch", "default": True, "state": "UP", "max_time_s": 86_400,
              "nodes": None},
             {"name": "debug", "default": False, "state": "DRAIN", "max_time_s": 1800,
              "nodes": ["n1"]}]
    layout = parse_percent("%#P %.5a %.10l %.6D %.6t %N", SINFO_CODES, "-o")
    keys = [c.key for c in layout if not isinstance(c, str)]
    assert render(node_lines(nodes, parts, keys, False), layout) == [
        "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST",
        "batch*       up 1-00:00:00      3   idle n[1-2,10]",
        "batch*       up 1-00:00:00      1  alloc n3",
        "debug     drain      30:00      1   idle n1",
    ]


def test_sinfo_summarizes_partitions_and_lists_the_reasons_of_nodes_out_of_service() -> None:
    nodes = [{"name": f"n{i}", "state": state, "cpus": 4, "mem_mb": 8192, "features": [],
              "jobs": [], "reason": reason, "state_ms": 1_796_500_000_000 if reason else 0}
             for i, state, reason in ((1, "IDLE", ""), (2, "MIXED", ""),
                                      (3, "DOWN", "Not responding"), (4, "DRAIN", "disk"))]
    parts = [{"name": "batch", "default": True, "state": "UP", "max_time_s": 0, "nodes": None}]
    summary = parse_percent(SUMMARY_FORMAT, SINFO_CODES, "-o")
    keys = [c.key for c in summary if not isinstance(c, str)]
    assert render(node_lines(nodes, parts, keys, False), summary) == [
        "PARTITION AVAIL  TIMELIMIT   NODES(A/I/O/T) NODELIST",
        "batch*       up   infinite          1/1/2/4 n[1-4]",
    ]
    reasons = parse_percent(REASONS_FORMAT, SINFO_CODES, "-o")
    keys = [c.key for c in reasons if not isinstance(c, str)]
    lines = node_lines(nodes, parts, keys, False)
    by_node = {line["nodelist"]: (line["reason"], line["reason_user"]) for line in lines}
    assert by_node["n3"] == ("Not responding", "slurm") and by_node["n4"] == ("disk", "(null)")
    assert all(line["reason_time"] != "Unknown" for line in lines if line["nodelist"] == "n3")
    nodes[3]["reason_by"] = "olga"  # release v4: the operator who drained it
    lines = node_lines(nodes, parts, keys, False)
    assert {line["nodelist"]: line["reason_user"] for line in lines}["n4"] == "olga"


def test_scontrol_show_node_names_who_set_the_reason_and_when() -> None:
    from cli.show_cmd import node_lines as show_node

    row = {"name": "n4", "state": "DRAIN", "cpus": 4, "mem_mb": 8192, "reason": "disk",
           "state_ms": 1_796_500_000_000}
    assert show_node(row)[-1] == "   Reason=disk"  # not recorded: scontrol's form without it
    shown = show_node({**row, "reason_by": "olga"})[-1]
    assert shown.startswith("   Reason=disk [olga@20") and shown.endswith("]"), shown
    assert "   State=IDLE+DRAIN Weight=1" in show_node(row)  # scontrol's, not State=DRAIN
    assert "   State=MIXED+DRAIN Weight=1" in show_node({**row, "jobs": [20]})  # draining
    suspected = {**row, "state": "IDLE", "reason": "",
                 "suspect": "Suspected partition: 5 of 8 nodes silent at once (no heartbeat)"}
    assert "   State=IDLE* Weight=1" in show_node(suspected)
    assert show_node(suspected)[-1] == (
        "   Reason=Suspected partition: 5 of 8 nodes silent at once (no heartbeat)")


def test_scontrol_show_job_layout() -> None:
    lines = job_lines(job(), NOW, "12")
    assert lines[0] == "JobId=12 JobName=train"
    assert all(line.startswith("   ") for line in lines[1:])
    text = "\n".join(lines)
    for pair in ("JobState=RUNNING", "RunTime=00:02:05", "TimeLimit=01:00:00",
                 "NodeList=gpu[01-02]", "NumNodes=2 NumCPUs=8 NumTasks=4 CPUs/Task=2",
                 "Account=ml QOS=normal", "Dependency=(null)", "EndTime="):
        assert pair in text, pair


def test_scontrol_show_job_counts_the_cpus_the_nodes_gave_and_expands_the_output() -> None:
    """Found trying Sluice as a new user: ``sbatch -N 2 -o out-%j-%x.txt`` showed
    ``NumCPUs=1``, ``TRES=cpu=1`` and ``StdOut=out-%j-%x.txt`` (sacct said AllocCPUS=2)."""
    two = job(ntasks=1, cpus_per_task=1, nodes=["n1", "n2"], workdir="/home/alice/w",
              alloc={"n1": [1, 0, 0], "n2": [1, 0, 0]}, output="out-%j-%x.txt", error="")
    text = "\n".join(job_lines(two, NOW, "12"))
    assert "NumNodes=2 NumCPUs=2 " in text and "TRES=cpu=2,node=2" in text, text
    assert "StdOut=/home/alice/w/out-12-train.txt" in text
    assert "StdErr=/home/alice/w/out-12-train.txt" in text  # no -e: with the output
    pending = job(ntasks=1, cpus_per_task=1, nodes=[], nodes_min=2, state="PENDING",
                  workdir="/w", output="", error="/logs/%x.err")
    text = "\n".join(job_lines(pending, NOW, "12"))
    assert "NumCPUs=2 " in text and "StdOut=/w/sluice-12.out" in text, text
    assert "StdErr=/logs/train.err" in text


@pytest.mark.parametrize("fmt", ["JobID%99999999999", "JobID%\u00b2", "JobID%.100000"])
def test_a_sacct_field_size_that_is_not_a_sane_whole_number_is_refused_by_name(fmt: str) -> None:
    # a size of 99999999999 made sacct pad every cell to 100 GB (MemoryError and a traceback)
    with pytest.raises(ValueError, match="the size must be a whole number"):
        parse_field_list(fmt, SACCT_FIELDS, "--format", "%")


@pytest.mark.parametrize("fmt", ["%99999999999i", "%.100000i"])
def test_a_squeue_field_size_too_large_is_refused_by_name(fmt: str) -> None:
    with pytest.raises(ValueError, match="the size must be a whole number"):
        parse_percent(fmt, SQUEUE_CODES, "-o")


def test_scontrol_show_job_names_the_user_and_group_with_their_ids_as_scontrol() -> None:
    """scontrol prints ``UserId=NAME(UID) GroupId=GROUP(GID)``; scripts that cut the uid out
    of it found only the name."""
    import grp
    import pwd

    root = pwd.getpwuid(0)
    group = grp.getgrgid(root.pw_gid).gr_name
    lines = job_lines(job(user=root.pw_name), NOW, "12")
    assert lines[1].startswith(f"   UserId={root.pw_name}(0) GroupId={group}({root.pw_gid}) "), \
        lines[1]
    unknown = job_lines(job(user="no-such-user-here"), NOW, "12")[1]
    assert unknown.startswith("   UserId=no-such-user-here GroupId=(null) "), unknown


def test_a_node_down_for_not_responding_is_marked_as_slurm_marks_no_respond() -> None:
    """Slurm shows a node that does not answer with ``*`` (NO_RESPOND): ``down*`` in sinfo,
    ``State=DOWN*`` in scontrol; a node an operator took down is plain ``down``."""
    from cli.show_cmd import node_lines as show_node

    silent = {"name": "n3", "state": "DOWN", "cpus": 4, "mem_mb": 8192, "features": [],
              "jobs": [], "reason": "Not responding (no heartbeat for 10.2 s)",
              "state_ms": 1_796_500_000_000}
    taken = {**silent, "name": "n4", "reason": "psu swap", "reason_by": "root"}
    parts = [{"name": "batch", "default": True, "state": "UP", "max_time_s": 0, "nodes": None}]
    lines = node_lines([silent, taken], parts, ["nodelist", "state", "state_long"], True)
    assert [(r["nodelist"], r["state"], r["state_long"]) for r in lines] == [
        ("n3", "down*", "down*"), ("n4", "down", "down")]
    assert "   State=DOWN* Weight=1" in show_node(silent)
    assert "   State=DOWN Weight=1" in show_node(taken)
