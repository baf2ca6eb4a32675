"""Slurm's command names (issue 15, item 6) and srun's task plan (item 2), without a system."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.node.environment import COMPAT_BIN
from cli.main import main
from cli.run_step import plan_tasks

MAPPED = {"sbatch": "submit", "srun": "run", "salloc": "alloc", "squeue": "queue", "sinfo": "nodes",
          "sacct": "history", "scancel": "cancel", "scontrol": "scontrol", "sdiag": "sdiag",
          "sprio": "sprio", "sshare": "sshare", "sacctmgr": "sacctmgr",
          "sreport": "sreport"}


def test_slurm_path_names_a_directory_of_thin_commands(capsys: pytest.CaptureFixture[str],
                                                       ) -> None:
    assert main(["slurm-path"]) == 0
    directory = Path(capsys.readouterr().out.strip())
    assert sorted(p.name for p in directory.iterdir()) == sorted(MAPPED)
    for name, sub in MAPPED.items():
        path = directory / name
        assert os.access(path, os.X_OK)
        assert f"-m cli.main {sub} " in path.read_text()


def test_the_commands_run_sluice_with_the_interpreter_a_job_gets(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "SLUICE_PYTHON": sys.executable}
    directory = COMPAT_BIN
    done = subprocess.run([str(directory / "scontrol"), "show", "hostnames", "n[1-3],m9"],
                          env=env, capture_output=True, text=True, timeout=60, check=False,
                          cwd=tmp_path)
    assert (done.returncode, done.stdout.split()) == (0, ["n1", "n2", "n3", "m9"]), done.stderr


@pytest.mark.parametrize("name", sorted(MAPPED))
def test_a_command_without_sluice_on_path_says_what_to_do(name: str, tmp_path: Path) -> None:
    """The README's ``.venv/bin/sluice`` is not on PATH: the names said ``exec: sluice: not
    found`` (found trying Sluice as a new user)."""
    done = subprocess.run([str(COMPAT_BIN / name), "--version"], env={"PATH": str(tmp_path)},
                          capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path)
    assert done.returncode == 127
    assert done.stderr.startswith(f"{name}: the sluice command is not on PATH"), done.stderr
    assert ".venv/bin" in done.stderr and done.stdout == ""


def test_scontrol_refuses_what_it_does_not_map_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["scontrol", "reboot", "n1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scontrol: sluice maps") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("words", [["reconfigure"], ["show", "config"]])
def test_scontrol_says_where_sluices_configuration_is(
        words: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """An administrator's ``scontrol reconfigure`` (re-read slurm.conf) and ``show config``
    name what does it in Sluice, not the list of mapped verbs."""
    assert main(["scontrol", *words]) == 1
    err = capsys.readouterr().err
    assert "sluice config apply" in err and "sluice config show" in err, err
    assert len(err.strip().splitlines()) == 1


def test_scontrol_update_of_a_partition_says_it_is_the_cluster_files(
        capsys: pytest.CaptureFixture[str]) -> None:
    """It was taken for a job update: "PartitionName: not a field sluice can update"."""
    assert main(["scontrol", "update", "PartitionName=debug", "State=DOWN"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("scontrol: PartitionName=debug: ") and "sluice config apply" in err


@pytest.mark.parametrize(
    ("ntasks", "nnodes", "per_node", "plan"),
    [
        (0, 0, 0, (["a", "b", "c"], [1, 1, 1])),
        (5, 0, 0, (["a", "b", "c"], [2, 2, 1])),
        (2, 0, 0, (["a", "b"], [1, 1])),
        (0, 2, 0, (["a", "b"], [1, 1])),
        (0, 0, 2, (["a", "b", "c"], [2, 2, 2])),
        (3, 0, 2, (["a", "b"], [2, 1])),
    ],
)
def test_tasks_are_planned_as_srun_does(ntasks: int, nnodes: int, per_node: int,
                                        plan: tuple[list[str], list[int]]) -> None:
    assert plan_tasks(["a", "b", "c"], ntasks, nnodes, per_node) == plan


def test_the_default_layout_follows_the_cpus_the_job_holds_on_each_node() -> None:
    """srun's block layout over a 4+1 allocation (``-N2 -n5``): 4 tasks and 1."""
    assert plan_tasks(["a", "b"], 5, 0, 0, {"a": 4, "b": 1}) == (["a", "b"], [4, 1])
    assert plan_tasks(["a", "b"], 3, 0, 0, {"a": 4, "b": 2}, 2) == (["a", "b"], [2, 1])


def test_impossible_plans_are_refused() -> None:
    with pytest.raises(ValueError, match="the job has 3 node"):
        plan_tasks(["a", "b", "c"], 0, 4, 0)
    with pytest.raises(ValueError, match="more than --ntasks-per-node"):
        plan_tasks(["a", "b"], 5, 0, 2)


def test_srun_outside_an_allocation_with_a_bad_option_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("SLUICE_JOB_SLUID", raising=False)  # srun makes its own allocation,
    assert main(["run", "-t", "soon", "hostname"]) == 2  # whose time limit does not parse
    err = capsys.readouterr().err
    assert err.startswith("srun: error: ") and "soon" in err, err
    assert len(err.strip().splitlines()) == 1


def test_srun_exports_its_variables_but_never_those_the_node_sets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cli.run_step import _exported

    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    monkeypatch.setenv("SLUICE_JWT", "secret")
    monkeypatch.setenv("SLURM_PROCID", "0")
    every = _exported("ALL")
    assert every["OMP_NUM_THREADS"] == "4"
    assert not [k for k in every if k.startswith(("SLUICE_", "SLURM_"))]
    assert _exported("NONE") == {}
    assert _exported("OMP_NUM_THREADS,X=1,SLUICE_JWT") == {"OMP_NUM_THREADS": "4", "X": "1"}


def test_scontrol_shows_a_partition_as_scontrol_does() -> None:
    from cli.partition_show import partition_lines

    nodes = [{"name": n, "cpus": 8} for n in ("gpu2", "gpu10", "cpu1")]
    part = {"name": "gpu", "default": False, "state": "UP", "max_time_s": 7200,
            "nodes": ["gpu2", "gpu10"], "default_time_s": 600, "max_nodes": 6,
            "allow_qos": ["normal", "high"], "priority_tier": 10, "priority_job_factor": 2}
    assert partition_lines(part, nodes) == [
        "PartitionName=gpu", "   AllowGroups=ALL AllowAccounts=ALL AllowQos=normal,high",
        "   Default=NO", "   DefaultTime=00:10:00 MaxNodes=6 MaxTime=02:00:00",
        "   Nodes=gpu[2,10]", "   PriorityJobFactor=2 PriorityTier=10",
        "   State=UP TotalCPUs=16 TotalNodes=2",
    ]
    # the views of a ledger before these fields, and the embedded default: Slurm's words
    every = partition_lines({"name": "main", "default": True, "nodes": None}, nodes)
    assert every[1:] == [
        "   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL", "   Default=YES",
        "   DefaultTime=NONE MaxNodes=UNLIMITED MaxTime=UNLIMITED", "   Nodes=ALL",
        "   PriorityJobFactor=1 PriorityTier=1", "   State=UP TotalCPUs=24 TotalNodes=3"]


def test_scontrol_ping_says_down_when_nothing_answers(capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLUICE_API", "127.0.0.1:1")
    assert main(["scontrol", "ping"]) == 1
    assert capsys.readouterr().out == "Slurmctld(primary) at 127.0.0.1:1 is DOWN\n"
