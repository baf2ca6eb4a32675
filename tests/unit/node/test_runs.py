"""The node daemon's run table on real child processes (no Kafka)."""

from __future__ import annotations

import os
import pwd
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from agents.node.environment import compress_hostlist, default_output, output_path
from agents.node.proctrack import CgroupTree
from agents.node.runs import Phase, RunTable, Scripts
from tests.unit.node.procs import alive_with, supervisors_of, token, wait_count, wait_gone

Report = tuple[str, dict[str, Any]]
ME = pwd.getpwuid(os.getuid()).pw_name  # jobs run as their owner: this test's own user


def _launch(
    tmp_path: Path, command: list[str], batch: bool = True, run: str = "sRUN"
) -> dict[str, Any]:
    return {
        "job_sluid": "sJOB", "job_id": 7, "run_sluid": run, "node_sluid": "sNODE",
        "node_name": "n01", "batch_host": batch, "nodes": ["n01", "n02"], "segments": [],
        "restart_count": 0, "previous_run_sluid": "", "user": ME, "partition": "main",
        "name": "t", "command": command, "workdir": str(tmp_path), "env": {"FOO": "bar"},
        "output": "", "error": "", "time_limit_s": 0, "issued_ms": 0,
    }


def _table(tmp_path: Path, reports: list[Report], **scripts: Any) -> RunTable:
    def report(name: str, _launch: dict[str, Any], fields: dict[str, Any]) -> None:
        reports.append((name, fields))

    return RunTable("n01", tmp_path, 1.0, report, Scripts(**scripts), allow_root=True)


def _until(table: RunTable, reports: list[Report], count: int, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while len(reports) < count and time.monotonic() < deadline:
        table.poll()
        time.sleep(0.02)
    assert len(reports) >= count, reports


def _script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def test_the_batch_host_runs_the_command_with_the_job_environment_and_reports_its_exit(
    tmp_path: Path,
) -> None:
    reports: list[Report] = []
    table = _table(tmp_path, reports)

    script = 'echo "$SLURM_JOB_ID $SLURM_JOB_NODELIST $FOO"; exit 3'
    table.launch(_launch(tmp_path, ["sh", "-c", script]))
    _until(table, reports, 1)

    assert reports == [("ReportJobExit", {"exit_code": 3, "signal": 0, "detail": ""})]
    assert (tmp_path / "sluice-7.out").read_text() == "7 n[01-02] bar\n"
    assert table.phase("sRUN") is Phase.HELD  # the node holds the run until TERMINATE
    assert table.running() == ["sRUN"]
    assert table.exited() == ["sRUN"]  # its heartbeat says the command has exited


@pytest.mark.parametrize(("output", "name"), [("\\", "t"), ("%x", ""), ("\\", "")])
def test_an_output_pattern_that_expands_to_nothing_is_never_the_daemons_own_output(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], output: str, name: str,
) -> None:
    """``-o '\\'`` (a backslash: taken as written, less the backslashes) or ``%x`` of a job
    without a name expands to "": the job must not inherit the descriptors of its supervisor
    (the daemon's log: the owner could write into root's file, or truncate it). It writes to
    the default file, as a job without ``-o``."""
    reports: list[Report] = []
    table = _table(tmp_path, reports)
    launch = {**_launch(tmp_path, ["sh", "-c", "echo LEAKED; echo LEAKED >&2"]),
              "output": output, "error": output, "name": name}
    table.launch(launch)
    _until(table, reports, 1)
    assert reports == [("ReportJobExit", {"exit_code": 0, "signal": 0, "detail": ""})]
    captured = capfd.readouterr()
    assert "LEAKED" not in captured.out + captured.err
    assert (tmp_path / "sluice-7.out").read_text() == "LEAKED\nLEAKED\n"


def test_a_run_whose_command_still_runs_is_not_listed_as_exited(tmp_path: Path) -> None:
    reports: list[Report] = []
    table = _table(tmp_path, reports)
    table.launch(_launch(tmp_path, ["sleep", "30"]))
    table.launch(_launch(tmp_path, ["true"], batch=False, run="sOTHER"))  # holds the allocation
    table.poll()
    assert table.running() == ["sRUN", "sOTHER"]
    assert table.exited() == []
    table.kill("sRUN", "CANCELLED")
    _until(table, reports, 1)
    assert reports[0][0] == "ReportJobExit"
    assert table.exited() == ["sRUN"]  # killed and its exit reported, not answered yet


def test_terminate_runs_the_epilog_and_reports_it(tmp_path: Path) -> None:
    reports: list[Report] = []
    epilog = _script(tmp_path, "epilog", 'echo "$SLURM_JOB_ID" > "$0.ran"')
    table = _table(tmp_path, reports, epilog=epilog)
    table.launch(_launch(tmp_path, ["true"]))
    _until(table, reports, 1)

    table.kill("sRUN", "TERMINATE")
    _until(table, reports, 2)

    assert reports[1] == ("ReportEpilog", {"ok": True, "exit_code": 0, "detail": ""})
    assert Path(epilog + ".ran").read_text() == "7\n"
    assert table.running() == []


def test_a_failing_epilog_is_reported_as_failed(tmp_path: Path) -> None:
    reports: list[Report] = []
    table = _table(tmp_path, reports, epilog=_script(tmp_path, "epilog", "exit 4"))
    table.launch(_launch(tmp_path, ["true"], batch=False))

    table.kill("sRUN", "TERMINATE")
    _until(table, reports, 1)

    assert reports == [("ReportEpilog", {"ok": False, "exit_code": 4,
                                         "detail": "epilog exited 4"})]


def test_an_epilog_past_its_timeout_is_killed_and_reported(tmp_path: Path) -> None:
    reports: list[Report] = []
    table = _table(tmp_path, reports, epilog=_script(tmp_path, "epilog", "sleep 30"),
                   epilog_timeout_s=0.3)
    table.launch(_launch(tmp_path, ["true"], batch=False))

    table.kill("sRUN", "TERMINATE")
    _until(table, reports, 1)

    assert reports[0][1]["ok"] is False and reports[0][1]["detail"] == "epilog timed out"


def test_a_failing_prolog_is_reported_and_the_command_never_starts(tmp_path: Path) -> None:
    reports: list[Report] = []
    table = _table(tmp_path, reports, prolog=_script(tmp_path, "prolog", "exit 1"))

    table.launch(_launch(tmp_path, ["sh", "-c", "touch started"]))
    _until(table, reports, 1)
    time.sleep(0.2)
    table.poll()

    assert reports == [("ReportProlog", {"ok": False, "exit_code": 1,
                                         "detail": "prolog exited 1"})]
    assert not (tmp_path / "started").exists()


def test_a_kill_sends_sigterm_then_sigkill_after_the_grace(tmp_path: Path) -> None:
    reports: list[Report] = []
    table = _table(tmp_path, reports)
    table.launch(_launch(tmp_path, ["sh", "-c", "trap '' TERM; sleep 30"]))
    time.sleep(0.3)
    started = time.monotonic()

    table.kill("sRUN", "CANCELLED")
    _until(table, reports, 2)

    assert reports[0] == ("ReportJobExit", {"exit_code": 0, "signal": 9, "detail": "CANCELLED"})
    assert reports[1][0] == "ReportEpilog"
    assert 0.9 <= time.monotonic() - started < 5


def test_a_kill_just_after_the_command_ended_by_itself_still_reports_its_exit(
    tmp_path: Path,
) -> None:
    """srun's allocation: its hold script ends with the step that srun cancelled, and srun's
    cancel of the job reaches the node before the loop's next pass has seen that end. The
    exit must still be reported (the scheduler ends the run on it), then the epilog; it used
    to go straight to the epilog, and the job stayed COMPLETING for ever."""
    reports: list[Report] = []
    table = _table(tmp_path, reports)
    table.launch(_launch(tmp_path, ["sh", "-c", "exit 1"]))
    time.sleep(1.0)  # the command has ended; no pass has looked at it

    table.kill("sRUN", "CANCELLED")
    _until(table, reports, 2)

    assert reports[0] == ("ReportJobExit", {"exit_code": 1, "signal": 0, "detail": "CANCELLED"})
    assert reports[1][0] == "ReportEpilog"


def test_a_launch_is_handled_once_per_run(tmp_path: Path) -> None:
    reports: list[Report] = []
    table = _table(tmp_path, reports)
    launch = _launch(tmp_path, ["sh", "-c", "echo x >> count"])

    table.launch(launch)
    table.launch(launch)
    _until(table, reports, 1)
    time.sleep(0.2)
    table.poll()

    assert len(reports) == 1
    assert (tmp_path / "count").read_text() == "x\n"


def test_a_terminate_for_an_unknown_run_still_answers_with_an_epilog(tmp_path: Path) -> None:
    reports: list[Report] = []
    table = _table(tmp_path, reports)

    table.kill("sOTHER", "TERMINATE", {"job_sluid": "sJOB2", "run_sluid": "sOTHER"})
    _until(table, reports, 1)

    assert reports == [("ReportEpilog", {"ok": True, "exit_code": 0, "detail": ""})]


def test_hostlists_and_output_patterns_follow_slurm() -> None:
    assert compress_hostlist(["n01", "n02", "n03", "n07", "login"]) == "login,n[01-03,07]"
    assert compress_hostlist(["gpu1"]) == "gpu1"
    launch = {"job_id": 12, "run_sluid": "s1", "name": "train", "user": "bob"}
    assert output_path("%x-%j-%N-%u-%S-100%%.out", launch, "n4") == "train-12-n4-bob-s1-100%.out"


def test_array_patterns_padding_and_escapes_follow_slurms_filename_patterns() -> None:
    # An array's tasks writing to "out_%A_%a.txt" each get their own file (the pattern was
    # written as it was: every task wrote one file named literally out_%A_%a.txt).
    task = {"job_id": 14, "run_sluid": "s1", "name": "t", "user": "bob", "array_job_id": 10,
            "array_task_id": 3}
    assert output_path("out_%A_%a.txt", task, "n4") == "out_10_3.txt"
    assert output_path("%A_%4a_%b_%3n_%t", task, "n4") == "10_0003_3_000_0"
    alone = {"job_id": 12, "run_sluid": "s1", "name": "t", "user": "bob"}
    assert output_path("%A_%a_%J_%s_%12j", alone, "n4") == "12_4294967294_12.batch_batch_0000000012"
    assert output_path("%%j_%Z_%", alone, "n4") == "%j_%Z_%"  # unknown and lone: as written
    assert output_path("a\\%j.out", alone, "n4") == "a%j.out"  # a backslash: no expansion
    assert default_output(alone) == "sluice-%j.out"
    assert output_path(default_output(task), task, "n4") == "sluice-10_3.out"


def _escaper(t: str) -> list[str]:
    return ["sh", "-c", f"( setsid env -i sleep {t} & ) ; sleep {t} & sleep {t} & wait"]


def test_a_cancel_kills_the_grandchildren_and_the_processes_that_setsid_away(
    tmp_path: Path,
) -> None:
    reports: list[Report] = []
    table = _table(tmp_path, reports)
    t = token()
    table.launch(_launch(tmp_path, _escaper(t)))
    wait_count(t, 3)

    table.kill("sRUN", "CANCELLED")
    _until(table, reports, 2)

    assert reports[0] == ("ReportJobExit", {"exit_code": 0, "signal": 15, "detail": "CANCELLED"})
    assert reports[1][0] == "ReportEpilog"
    assert alive_with(t) == []
    assert table.running() == []
    assert not (tmp_path / "runs" / "sRUN").exists()  # the local record goes with the run


def test_a_run_past_its_time_limit_is_killed_with_all_its_processes(tmp_path: Path) -> None:
    reports: list[Report] = []
    table = _table(tmp_path, reports)
    t = token()
    table.launch({**_launch(tmp_path, _escaper(t)), "time_limit_s": 1})
    wait_count(t, 3)

    _until(table, reports, 1, timeout_s=20)  # limit + grace, enforced by the daemon itself

    assert reports[0] == ("ReportJobExit", {"exit_code": 0, "signal": 15, "detail": "TIMEOUT"})
    assert alive_with(t) == []


def _kill_supervisors(run_sluid: str) -> None:
    supervisors = supervisors_of(run_sluid)
    assert supervisors
    for pid in supervisors:  # as if they died with the daemon
        os.kill(pid, signal.SIGKILL)


def test_a_restarted_table_kills_what_the_previous_daemon_left_by_the_run_marker(
    tmp_path: Path,
) -> None:
    t = token()
    first = _table(tmp_path, [])  # kept: its lifelines stay open, as in a daemon killed -9
    first.launch(_launch(tmp_path, ["sh", "-c", f"sleep {t} & sleep {t}"]))
    wait_count(t, 2)
    _kill_supervisors("sRUN")

    assert _table(tmp_path, []).sweep() == ["sRUN"]

    assert wait_gone(t, 5) == []
    assert not (tmp_path / "runs" / "sRUN").exists()


def test_a_restarted_table_kills_by_cgroup_even_what_dropped_its_marker(
    tmp_path: Path, tree: CgroupTree,
) -> None:
    t = token()
    first = RunTable("n01", tmp_path, 1.0, lambda *_: None, None, tree,
                     allow_root=True)
    first.launch(_launch(tmp_path, _escaper(t)))
    wait_count(t, 3)
    _kill_supervisors("sRUN")

    restarted = RunTable("n01", tmp_path, 1.0, lambda *_: None, None, tree,
                         allow_root=True)

    assert restarted.sweep() == ["sRUN"]
    assert wait_gone(t, 5) == []
    assert not tree.run_dir("sRUN").exists()


def test_an_end_report_unanswered_by_a_terminate_is_sent_again_a_few_times(
    tmp_path: Path,
) -> None:
    reports: list[Report] = []
    table = _table(tmp_path, reports)
    table.launch(_launch(tmp_path, ["sh", "-c", "exit 4"]))
    _until(table, reports, 1)
    sent = time.monotonic()
    assert table.resend_ends(sent + 0.5, 1.0, 2) == []  # not yet due
    assert table.resend_ends(sent + 1.0, 1.0, 2) == ["sRUN"]
    assert table.resend_ends(sent + 1.5, 1.0, 2) == []  # one interval since the last send
    assert table.resend_ends(sent + 2.0, 1.0, 2) == ["sRUN"]
    assert table.exited() == ["sRUN"]
    assert table.resend_ends(sent + 3.0, 1.0, 2) == []  # at most twice, then forgotten
    assert table.exited() == []
    assert reports == [("ReportJobExit", {"exit_code": 4, "signal": 0, "detail": ""})] * 3


def test_a_terminate_stops_the_resending(tmp_path: Path) -> None:
    reports: list[Report] = []
    table = _table(tmp_path, reports)
    table.launch(_launch(tmp_path, ["true"]))
    _until(table, reports, 1)
    table.kill("sRUN", "TERMINATE")
    assert table.exited() == []
    assert table.resend_ends(time.monotonic() + 60, 1.0, 5) == []


def test_a_killed_run_stays_listed_as_exited_after_its_epilog_until_its_terminate(
    tmp_path: Path,
) -> None:
    reports: list[Report] = []
    table = _table(tmp_path, reports)
    table.launch(_launch(tmp_path, ["sleep", "30"]))
    table.kill("sRUN", "CANCELLED")
    _until(table, reports, 2)  # the exit, then the epilog: the run is dropped
    assert [name for name, _ in reports] == ["ReportJobExit", "ReportEpilog"]
    assert table.running() == []
    assert table.exited() == ["sRUN"]  # its exit report still waits for an answer
    table.kill("sRUN", "TERMINATE")  # the job's end
    assert table.exited() == []


def test_a_run_the_scheduler_ended_first_keeps_no_report_waiting(tmp_path: Path) -> None:
    reports: list[Report] = []
    table = _table(tmp_path, reports)
    table.launch(_launch(tmp_path, ["sleep", "30"]))
    table.kill("sRUN", "TERMINATE")  # ended by the scheduler (a node failure, a stale run)
    _until(table, reports, 1)
    assert reports[0][0] == "ReportJobExit"
    assert table.exited() == []


# -- a run's end in one report (ReportJobExit.epilog_done) -----------------------------------


def _alone(tmp_path: Path, command: list[str], run: str = "sRUN") -> dict[str, Any]:
    """A launch whose only node is this one (n01)."""
    return {**_launch(tmp_path, command, run=run), "nodes": ["n01"]}


def test_a_run_gone_from_its_only_node_reports_its_exit_and_epilog_in_one_report(
    tmp_path: Path,
) -> None:
    reports: list[Report] = []
    table = _table(tmp_path, reports)
    table.launch(_alone(tmp_path, ["sh", "-c", "exit 3"]))
    _until(table, reports, 1)
    assert reports == [("ReportJobExit", {"exit_code": 3, "signal": 0, "detail": "",
                                          "epilog_done": True})]
    assert table.running() == []  # released at once: nothing of it is left here
    assert not (tmp_path / "runs" / "sRUN").exists()
    assert table.exited() == ["sRUN"]  # its report still waits for the TERMINATE
    table.kill("sRUN", "TERMINATE", {"job_sluid": "sJOB", "run_sluid": "sRUN"})
    table.poll()
    assert table.exited() == [] and table.running() == []
    assert len(reports) == 1  # no second report: the exit carried the epilog
    table.kill("sRUN", "CANCELLED", {"job_sluid": "sJOB", "run_sluid": "sRUN"})  # crossed
    table.poll()
    assert len(reports) == 1
    table.launch(_alone(tmp_path, ["true"]))  # a replayed launch runs nothing
    table.poll()
    assert len(reports) == 1 and table.running() == []


def test_a_released_run_whose_report_went_unanswered_answers_its_terminate_with_an_epilog(
    tmp_path: Path,
) -> None:
    reports: list[Report] = []
    table = _table(tmp_path, reports)
    table.launch(_alone(tmp_path, ["true"]))
    _until(table, reports, 1)
    assert table.resend_ends(time.monotonic() + 60, 1.0, 5) == ["sRUN"]  # refused? lost?
    # the scheduler may have ended the run otherwise and wait for this node's epilog
    table.kill("sRUN", "TERMINATE", {"job_sluid": "sJOB", "run_sluid": "sRUN"})
    _until(table, reports, 3)
    assert reports[2] == ("ReportEpilog", {"ok": True, "exit_code": 0, "detail": ""})


def test_with_an_epilog_a_kill_or_a_step_the_end_takes_the_terminate_as_before(
    tmp_path: Path,
) -> None:
    epilog = _script(tmp_path, "epilog", "exit 0")
    with_epilog: list[Report] = []
    table = _table(tmp_path, with_epilog, epilog=epilog)
    table.launch(_alone(tmp_path, ["true"]))
    _until(table, with_epilog, 1)
    assert with_epilog == [("ReportJobExit", {"exit_code": 0, "signal": 0, "detail": ""})]
    assert table.running() == ["sRUN"]
    table.kill("sRUN", "TERMINATE")
    _until(table, with_epilog, 2)
    assert with_epilog[1][0] == "ReportEpilog"

    killed: list[Report] = []
    table = _table(tmp_path / "k", killed)
    table.launch(_alone(tmp_path, ["sleep", "30"]))
    table.kill("sRUN", "CANCELLED")
    _until(table, killed, 2)
    assert [name for name, _ in killed] == ["ReportJobExit", "ReportEpilog"]
    assert "epilog_done" not in killed[0][1]

    stepped: list[Report] = []
    table = _table(tmp_path / "s", stepped)
    table.steps_here = lambda run_sluid: run_sluid == "sRUN"  # a step of it runs here
    table.launch(_alone(tmp_path, ["true"]))
    _until(table, stepped, 1)
    assert "epilog_done" not in stepped[0][1] and table.running() == ["sRUN"]


def test_a_run_whose_supervisor_was_killed_takes_the_terminate_as_before(
    tmp_path: Path,
) -> None:
    reports: list[Report] = []
    table = _table(tmp_path, reports)
    table.launch(_alone(tmp_path, ["sleep", "30"]))
    process = table.batch_process("sRUN")
    assert process is not None
    os.kill(process.pid, signal.SIGKILL)  # no "done": the daemon cannot know the run is empty
    _until(table, reports, 1)
    assert "epilog_done" not in reports[0][1]
    assert table.running() == ["sRUN"]  # held until the TERMINATE, which runs the end
    table.kill("sRUN", "TERMINATE")
    _until(table, reports, 2)
    assert reports[1][0] == "ReportEpilog" and table.running() == []


def test_each_run_is_fenced_at_the_lease_plus_its_horizon_a_run_not_requeued_never(
    tmp_path: Path,
) -> None:
    """The daemon's lease is spent in 0.5 s and nothing renews it (a broker out of reach): the
    expedited job's run is fenced then, the requeueable one (horizon 1.5 s) 1.5 s later, the
    one not requeued never (agents.node.fence)."""
    reports: list[tuple[str, str, dict[str, Any]]] = []

    def report(name: str, launch: dict[str, Any], fields: dict[str, Any]) -> None:
        reports.append((launch["run_sluid"], name, fields))

    table = RunTable("n01", tmp_path, 1.0, report, Scripts(), allow_root=True, fence_s=30.0)
    began = time.monotonic()
    table.lease = lambda: began + 0.5 - time.monotonic()
    for run, after_ms in (("sEXP", 0), ("sREQ", 1500), ("sNO", -1)):
        table.launch({**_launch(tmp_path, ["sleep", "30"], run=run),
                      "restart_after_ms": after_ms, "output": f"{run}.out"})
    fenced_at: dict[str, float] = {}
    while time.monotonic() - began < 4.0:
        now = time.monotonic()
        for run in table.fence(now, lambda horizon: f"NodeFenced: {0.5 + horizon:g} s"):
            fenced_at[run] = now - began
        table.poll()
        time.sleep(0.02)
    assert sorted(fenced_at) == ["sEXP", "sREQ"]
    assert 0.5 <= fenced_at["sEXP"] < 1.0 and 2.0 <= fenced_at["sREQ"] < 2.5
    ends = {run: fields for run, name, fields in reports if name == "ReportJobExit"}
    assert ends["sEXP"]["fenced"] and ends["sEXP"]["detail"] == "NodeFenced: 0.5 s"
    assert ends["sREQ"]["fenced"] and ends["sREQ"]["detail"] == "NodeFenced: 2 s"
    assert ends["sEXP"]["exit_code"] == 128 + signal.SIGKILL and "sNO" not in ends
    assert table.phase("sNO") is Phase.RUNNING and table.next_fence() is None
    table.terminate_all()
