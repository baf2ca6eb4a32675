"""A Slurm user's daily commands against a real system (``sluice up`` on the real broker):
impossible requests refused at submission with Slurm's words, Slurm's output formats, and one
line (never a traceback) for a user's mistake."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import free_port

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]

CLUSTER = """\
AuthRequired: false  # as this test has always run (config apply refuses a file silent on it)
Operators: [ops]
Nodes:
  - NodeName: node[01-02]
    CPUs: 2
    RealMemory: 2048
    Features: [ssd]
  - NodeName: node[03-04]
    CPUs: 2
    RealMemory: 2048
Partitions:
  - PartitionName: main
    Default: YES
    MaxTime: 2:00:00
QOS:
  - Name: normal
Accounts:
  - Name: physics
    Users: [{user}]
  - Name: chemistry
    Users: [nobody-else]
"""

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def sluice(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """``sluice ARGS...`` against one four-node system (2 CPUs, 2 GB each) with a cluster
    configuration of accounts, a QOS, a 2-hour MaxTime and the ``ssd`` feature on two nodes."""
    tmp = tmp_path_factory.mktemp("slurmcli")
    unique = f"scl{os.getpid()}x{int(time.time() * 1000) % 10**8}"
    base = {
        **os.environ, "KAFKA_BOOTSTRAP": kafka_bootstrap, "SLUICE_HOME": str(tmp / "home"),
        "SLUICE_TOPIC_PREFIX": unique, "SLUICE_CLUSTER": unique,
        "SLUICE_API": f"127.0.0.1:{free_port()}",
        "SLUICE_WORKER_METRICS": f"127.0.0.1:{free_port()}",
        "SLUICE_ALLOW_ROOT_JOBS": "true",  # the test may run as root: its jobs are root's
    }

    def run(*argv: str, stdin: str = "",
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cli.main", *argv], cwd=tmp,
                              env={**base, **(env or {})}, input=stdin, capture_output=True,
                              text=True, timeout=240, check=False)

    up = run("up", "--nodes", "4", "--cpus", "2", "--mem", "2048")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        config = tmp / "cluster.yaml"
        config.write_text(CLUSTER.format(user=pwd.getpwuid(os.getuid()).pw_name))
        applied = run("config", "apply", str(config))
        assert applied.returncode == 0, applied.stdout + applied.stderr
        yield run
    finally:
        run("down")


def _no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr + result.stdout


@pytest.mark.parametrize(
    ("argv", "words", "reason"),
    [
        (["-N", "99"], "Requested node configuration is not available", "NodeCountTooLarge"),
        (["-c", "64"], "Requested node configuration is not available",
         "RequestedNodeConfigUnavailable"),
        (["--mem", "64G"], "Requested node configuration is not available",
         "RequestedNodeConfigUnavailable"),
        (["--gres", "gpu:2"], "Requested node configuration is not available",
         "RequestedNodeConfigUnavailable"),
        (["-N", "3", "-C", "ssd"], "Requested node configuration is not available",
         "NodeCountTooLarge"),
        (["-C", "nvme"], "Invalid feature specification", "InvalidFeature"),
        (["-w", "node09"], "Invalid node name specified", "InvalidNodeName"),
        (["-A", "nosuch"], "Invalid account or account/partition combination specified",
         "InvalidAccount"),
        (["-A", "chemistry"], "Invalid account or account/partition combination specified",
         "InvalidAccount"),
        (["-q", "nosuch"], "Invalid qos specification", "InvalidQOS"),
        (["-d", "afterok:99999"], "Job dependency problem", "InvalidDependency"),
    ],
)
def test_an_impossible_request_is_refused_at_submission_in_slurms_words(
    sluice: Run, argv: list[str], words: str, reason: str
) -> None:
    result = sluice("submit", *argv, "--", "true")
    assert result.returncode == 1, result.stdout + result.stderr
    _no_traceback(result)
    assert f"Batch job submission failed: {words}" in result.stderr
    assert f"[{reason}]" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "option"),
    [(["-N", "abc"], "-N/--nodes"), (["--mem", "4X"], "--mem"),
     (["--begin", "now+3fortnights"], "--begin"), (["-c", "two"], "--cpus-per-task")],
)
def test_a_malformed_option_is_a_usage_error_without_a_traceback(
    sluice: Run, argv: list[str], option: str
) -> None:
    result = sluice("submit", *argv, "--", "true")
    assert result.returncode == 2
    _no_traceback(result)
    assert option in result.stderr.splitlines()[-1]


def test_slurms_units_times_and_options_are_accepted_and_kept(sluice: Run) -> None:
    result = sluice("submit", "--parsable", "-J", "later", "--mem", "1G", "--begin",
                    "now+1hour", "-C", "ssd", "--signal", "B:USR1@60", "--mail-type",
                    "END,FAIL", "-t", "30", "--", "true")
    assert result.returncode == 0, result.stderr
    job = result.stdout.strip()
    for _ in range(100):  # the first scheduling pass after the submission names the reason
        shown = sluice("show", "job", job)
        if "Reason=BeginTime" in shown.stdout:
            break
        time.sleep(0.2)
    assert "JobState=PENDING Reason=BeginTime" in shown.stdout
    assert "MinMemoryNode=1G" in shown.stdout and "Features=ssd" in shown.stdout
    assert "TimeLimit=00:30:00" in shown.stdout and "Signal=B:USR1@60" in shown.stdout
    begin = shown.stdout.split("EligibleTime=")[1].split()[0]
    assert begin > time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() + 3500))
    # a user may lower the limit (raising it is an operator's: tests/unit/core/test_slurm_refusals)
    lower = sluice("update", "job", job, "TimeLimit=20", "Name=sooner")
    assert lower.returncode == 0, lower.stderr
    assert sluice("queue", "-j", job, "-h", "-o", "%j %l").stdout.split() == ["sooner", "20:00"]
    assert sluice("cancel", "-n", "sooner").returncode == 0


def test_queue_history_and_show_print_what_slurm_would(sluice: Run) -> None:
    running = sluice("submit", "--parsable", "-J", "sleeper", "-w", "node[03-04]", "--",
                     "sleep", "600")
    assert running.returncode == 0, running.stderr
    job = running.stdout.strip()
    for _ in range(100):
        line = sluice("queue", "-t", "R", "-h", "-o", "%i %t %R").stdout.split()
        if line:
            break
        time.sleep(0.2)
    assert line == [job, "R", "node[03-04]"]
    assert sluice("queue", "-t", "PD", "-h").stdout == ""
    owner = sluice("queue", "-h", "-j", job, "-o", "%u").stdout.strip()
    by_uid = sluice("queue", "-h", "-u", str(pwd.getpwnam(owner).pw_uid), "-o", "%i")
    assert by_uid.stdout.split() == [job], by_uid.stdout + by_uid.stderr
    stranger = sluice("queue", "-u", "nosuch-user-x")
    assert stranger.returncode == 1 and stranger.stdout == ""
    assert stranger.stderr == "sluice queue: error: Invalid user: nosuch-user-x\n"
    default = sluice("queue").stdout.splitlines()
    assert default[0] == ("             JOBID PARTITION     NAME     USER ST       TIME  NODES "
                          "NODELIST(REASON)")
    assert default[1].split()[:5] == [job, "main", "sleeper", default[1].split()[3], "R"]
    held = sluice("hold", job)
    assert held.returncode == 1 and "Job is no longer pending execution" in held.stderr
    node = sluice("show", "node", "node03")
    _no_traceback(node)
    assert node.returncode == 0 and node.stdout.startswith("NodeName=node03 ")
    assert f"Jobs={job}" in node.stdout and "AvailableFeatures=(null)" in node.stdout
    sinfo = sluice("nodes").stdout.splitlines()
    assert sinfo[0].split() == ["PARTITION", "AVAIL", "TIMELIMIT", "NODES", "STATE", "NODELIST"]
    assert ["main*", "up", "2:00:00", "2", "mix", "node[03-04]"] in [r.split() for r in sinfo]
    assert sluice("cancel", job).returncode == 0
    done = sluice("submit", "-W", "--parsable", "-J", "quick", "--", "true")
    assert done.returncode == 0, done.stderr
    quick = done.stdout.strip().splitlines()[0]
    sacct = sluice("history", "-j", quick, "--format=JobID,State,Elapsed").stdout.splitlines()
    assert sacct[0] == "JobID             State    Elapsed "
    assert sacct[1] == "------------ ---------- ---------- "
    assert sacct[2].split()[:2] == [quick, "COMPLETED"]
    parsable = sluice("history", "-j", f"{quick},{job}", "-P", "-n", "-o", "JobID,State")
    assert parsable.stdout.splitlines() == [  # each job, then its batch step, as sacct
        f"{job}|CANCELLED", f"{job}.batch|CANCELLED", f"{quick}|COMPLETED",
        f"{quick}.batch|COMPLETED"]


def test_an_array_submission_answers_with_the_arrays_job_id(sluice: Run) -> None:
    result = sluice("submit", "--array", "0-2", "-J", "arr", "--", "true")
    assert result.returncode == 0, result.stderr
    first = int(result.stdout.split()[3])
    tasks = sluice("history", "-j", str(first), "-X", "-n", "-P", "-o", "JobID").stdout.split()
    assert tasks == [f"{first}_0", f"{first}_1", f"{first}_2"]  # -X: allocations, no steps


def test_an_arrays_tasks_write_the_files_slurms_array_patterns_name(sluice: Run) -> None:
    result = sluice("submit", "--array", "0-2", "-o", "arr-%A_%2a.out", "--parsable", "--",
                    "sh", "-c", "echo task $SLURM_ARRAY_TASK_ID")
    assert result.returncode == 0, result.stderr
    first = result.stdout.split()[0]
    workdir = Path(next(line.split("=", 1)[1] for line in sluice("show", "job", first).stdout
                        .split() if line.startswith("WorkDir=")))
    files = [workdir / f"arr-{first}_{task:02d}.out" for task in range(3)]
    deadline = time.monotonic() + 60
    while not all(f.exists() and f.read_text() for f in files) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert [f.read_text() for f in files] == [f"task {task}\n" for task in range(3)]
    assert not (workdir / "arr-%A_%2a.out").exists()  # one file per task, none named as written


def test_squeue_folds_an_arrays_pending_tasks_as_slurm_does(sluice: Run) -> None:
    held = sluice("submit", "--array", "1-4%2", "--hold", "--parsable", "--", "true")
    assert held.returncode == 0, held.stderr
    first = held.stdout.split()[0]
    try:
        folded = sluice("queue", "-j", first, "-h", "-o", "%i %t %r").stdout.split("\n")
        assert folded[0] == f"{first}_[1-4%2] PD JobHeldUser", folded
        each = sluice("queue", "-r", "-j", first, "-h", "-o", "%i").stdout.split()
        assert each == [f"{first}_{task}" for task in range(1, 5)]
        shown = sluice("show", "job", first).stdout  # every task's record, as scontrol
        assert [w for w in shown.split() if w.startswith("ArrayTaskId=")] == [
            f"ArrayTaskId={task}" for task in range(1, 5)], shown
        start = sluice("queue", "--start", "-j", first).stdout.splitlines()
        assert start[0].split() == ["JOBID", "PARTITION", "NAME", "USER", "ST", "START_TIME",
                                    "NODES", "SCHEDNODES", "NODELIST(REASON)"], start
        assert start[1].split()[5] == "N/A"  # not planned: as squeue says it
        long = sluice("queue", "-l", "-j", first).stdout.splitlines()
        assert "TIME_LIMI" in long[1] and "PENDING" in long[2], long
        one = sluice("show", "job", f"{first}_3").stdout.splitlines()
        assert [line.split()[0] for line in one if line.startswith("JobId=")] == [
            f"JobId={int(first) + 2}"]  # that task's record alone
        assert sluice("cancel", f"{first}_2").returncode == 0  # that task alone
        assert sluice("queue", "-j", first, "-h", "-o", "%i").stdout.split() == [
            f"{first}_[1,3-4%2]"]
    finally:
        cancelled = sluice("cancel", first)  # the array's id: every task, as scancel
    assert cancelled.returncode == 0, cancelled.stderr
    states = sluice("queue", "-r", "-t", "all", "-j", first, "-h", "-o", "%T").stdout.split()
    assert states == ["CANCELLED"] * 4, states


def test_an_administrators_sinfo_and_scontrol_views_of_nodes_and_partitions(sluice: Run) -> None:
    drained = sluice("drain", "node04", "--reason", "disk swap")
    assert drained.returncode == 0, drained.stderr
    try:
        reasons = sluice("nodes", "-R", "-h").stdout.split()
        assert reasons[:2] == ["disk", "swap"] and reasons[-1] == "node04", reasons
        assert reasons[2] == pwd.getpwuid(os.getuid()).pw_name, reasons  # who drained it
        summary = sluice("nodes", "-s").stdout.splitlines()
        assert summary[0].split()[3] == "NODES(A/I/O/T)" and "/1/4" in summary[1], summary
        shown = sluice("scontrol", "show", "partition", "main").stdout
        assert shown.startswith("PartitionName=main\n") and "TotalNodes=4" in shown, shown
        assert "Default=YES" in shown and "MaxTime=02:00:00" in shown
        every = sluice("scontrol", "show", "nodes").stdout  # no name: every node, as scontrol
        assert [line.split()[0] for line in every.splitlines() if line.startswith("NodeName")] \
            == [f"NodeName=node0{i}" for i in range(1, 5)], every
        assert "\n\nNodeName=node02" in every and "Reason=disk swap [" in every, every
        listed = sluice("scontrol", "show", "node", "node[03-04]").stdout
        assert listed.count("NodeName=") == 2 and "NodeName=node03" in listed, listed
    finally:
        sluice("resume", "node04")
    jobs = sluice("scontrol", "show", "jobs").stdout
    # the module's earlier tests left jobs and refused submissions; a refusal is no job
    assert jobs.startswith("JobId=") or jobs == "No jobs in the system\n", jobs
    assert "JobId=0 " not in jobs, jobs
    assert sluice("scontrol", "ping").stdout.endswith(" is UP\n")


def test_a_batch_script_piped_to_submit_runs_as_sbatch_runs_it(sluice: Run) -> None:
    script = "#!/bin/sh\n#SBATCH -J piped\n#SBATCH -o piped-%j.out\necho piped-ok\n"
    done = sluice("submit", "-W", "--parsable", stdin=script)
    assert done.returncode == 0, done.stdout + done.stderr
    job = done.stdout.strip().splitlines()[0]
    shown = sluice("show", "job", job)
    assert "JobName=piped\n" in shown.stdout and "JobState=COMPLETED" in shown.stdout, shown.stdout
    assert sluice("show", "job", job, "--script").stdout == script
    for text, words in (("echo no-shebang\n", "does not look like a batch script"),
                        ("", "does not look like a batch script")):
        refused = sluice("submit", stdin=text)
        assert refused.returncode == 1 and words in refused.stderr, refused.stderr
        _no_traceback(refused)


def test_a_user_who_is_no_administrator_is_refused_the_configuration_in_force(
        sluice: Run, tmp_path: Path) -> None:
    """``sluice config apply`` of the text already in force printed "applied" at once, before
    any decision, even for a user who may not apply a configuration (the core refuses such a
    request with ``NotAdministrator``): a non-administrator must read a refusal, and an
    administrator that nothing changed."""
    token = sluice("token", "--user", "nobody").stdout.strip().partition("=")[2]
    assert token, "no token"
    in_force = tmp_path / "cluster.yaml"  # the text the module's system applied
    in_force.write_text(CLUSTER.format(user=pwd.getpwuid(os.getuid()).pw_name))
    refused = sluice("config", "apply", str(in_force),
                     env={"SLUICE_AUTH": "jwt", "SLUICE_JWT": token})
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "NotAdministrator" in refused.stderr and "applied" not in refused.stdout, refused
    again = sluice("config", "apply", str(in_force))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "unchanged" in again.stdout, again.stdout


def test_an_administrators_hold_is_slurms_administrator_hold(sluice: Run) -> None:
    """``scontrol hold`` by an administrator is Slurm's administrator hold (``JobHeldAdmin``,
    which the job's owner cannot release: tests/unit/core); ``scontrol uhold`` is a user hold
    (``JobHeldUser``), which the owner may release. The CLI once sent every hold as a user
    hold, so a user released what root had held."""
    queued = sluice("submit", "--uid", "nobody", "--parsable", "--begin", "now+1hour",
                    "--wrap", "true")
    assert queued.returncode == 0, queued.stdout + queued.stderr
    job = queued.stdout.strip().split(";")[0]
    try:
        assert sluice("scontrol", "hold", job).returncode == 0
        assert sluice("queue", "-h", "-j", job, "-o", "%r").stdout.strip() == "JobHeldAdmin"
        assert sluice("scontrol", "release", job).returncode == 0
        assert sluice("queue", "-h", "-j", job, "-o", "%r").stdout.strip() == "BeginTime"
        assert sluice("scontrol", "uhold", job).returncode == 0
        assert sluice("queue", "-h", "-j", job, "-o", "%r").stdout.strip() == "JobHeldUser"
    finally:
        sluice("cancel", job)


def _wait_state(sluice: Run, job: str, state: str) -> None:
    deadline = time.monotonic() + 60
    while sluice("queue", "-h", "-t", "all", "-j", job, "-o", "%T").stdout.strip() != state:
        assert time.monotonic() < deadline, f"job {job} never {state}"
        time.sleep(0.3)


def test_a_running_job_is_renamed_and_its_arrays_throttle_is_the_arrays(sluice: Run) -> None:
    """scontrol update of a running job's JobName/Comment (Slurm allows them while it runs;
    they were refused), any other field refused; ArrayTaskThrottle= shown on every task, the
    running ones too, and refused for one task; scancel of an ended job is an error."""
    array = sluice("submit", "--array", "1-3%1", "--parsable", "--", "sleep", "60").stdout
    array = array.split()[0]
    try:
        _wait_state(sluice, f"{array}_1", "RUNNING")
        renamed = sluice("scontrol", "update", f"JobId={array}_1", "JobName=renamed",
                         "Comment=second look")
        assert renamed.returncode == 0, renamed.stderr
        shown = sluice("show", "job", f"{array}_1").stdout
        assert "JobName=renamed" in shown and "Comment=second look" in shown, shown
        assert "ArrayTaskThrottle=1" in shown, shown
        refused = sluice("scontrol", "update", f"JobId={array}_1", "Partition=other")
        assert refused.returncode == 1
        assert refused.stderr.startswith(
            f"Job is no longer pending execution for job {array}_1"), refused.stderr
        one = sluice("scontrol", "update", f"JobId={array}_2", "ArrayTaskThrottle=2")
        assert one.returncode == 1 and "only allowed on ArrayJobId" in one.stderr
        assert sluice("scontrol", "update", f"JobId={array}",
                      "ArrayTaskThrottle=2").returncode == 0
        deadline = time.monotonic() + 30
        while "ArrayTaskThrottle=2" not in sluice("show", "job", f"{array}_1").stdout:
            assert time.monotonic() < deadline, sluice("show", "job", f"{array}_1").stdout
            time.sleep(0.3)
        _wait_state(sluice, f"{array}_2", "RUNNING")  # the new limit lets a second run
    finally:
        sluice("cancel", array)
    _wait_state(sluice, f"{array}_1", "CANCELLED")
    again = sluice("cancel", f"{array}_1")
    assert again.returncode == 1
    assert "Job/step already completing or completed" in again.stderr, again.stderr
