"""The job environment as Slurm documents it (issue 15, item 3), the GPUs a node binds, the
stored batch script a node runs, and a step task's variables."""

from __future__ import annotations

import os
import pwd
from pathlib import Path
from typing import Any

from agents.node.batch_files import batch_argv, remove_batch_files, script_path
from agents.node.environment import (
    COMPAT_BIN,
    block_distribution,
    output_path,
    run_environment,
    slurm_counts,
    step_environment,
)
from agents.node.gpus import GpuSlots
from agents.node.job_env import login_environment, login_path, open_job_env
from streams.settings import Settings


def launch(**changes: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "job_sluid": "s1", "job_id": 42, "run_sluid": "s00DJXT1ZWR001", "nodes": ["g01", "g02"],
        "user": "alice", "partition": "gpu", "name": "train", "command": ["/w/job.sh", "x"],
        "workdir": "/w", "env": {}, "account": "ml", "qos": "high", "ntasks": 4,
        "cpus_per_task": 2, "alloc_cpus": [4, 4], "alloc_mem_mb": [2048, 2048],
        "alloc_gpus": [1, 1], "submit_host": "login1", "array_task_id": -1,
    }
    return {**values, **changes}


def test_counts_and_block_distribution_use_slurms_forms() -> None:
    assert slurm_counts([2, 2, 1]) == "2(x2),1"
    assert slurm_counts([8]) == "8" and slurm_counts([1, 2, 1]) == "1,2,1"
    assert block_distribution(5, 2) == [3, 2]
    assert block_distribution(1, 3) == [1, 1, 1]  # at least one task per node


def test_the_batch_step_sees_slurms_variables_with_this_nodes_share() -> None:
    env = run_environment(launch(), "g02", (1,), "bat", "/usr/bin")
    expected = {
        "SLURM_JOB_ID": "42", "SLURM_JOBID": "42", "SLURM_NTASKS": "4", "SLURM_NPROCS": "4",
        "SLURM_TASKS_PER_NODE": "2(x2)", "SLURM_CPUS_PER_TASK": "2",
        "SLURM_CPUS_ON_NODE": "4", "SLURM_JOB_CPUS_PER_NODE": "4(x2)",
        "SLURM_MEM_PER_NODE": "2048", "SLURM_GPUS_ON_NODE": "1", "SLURM_GPUS": "2",
        "SLURM_JOB_GPUS": "1", "CUDA_VISIBLE_DEVICES": "1", "SLURM_NODELIST": "g[01-02]",
        "SLURM_JOB_ACCOUNT": "ml", "SLURM_JOB_QOS": "high", "SLURM_NODEID": "1",
        "SLURM_CLUSTER_NAME": "bat", "SLURM_SUBMIT_HOST": "login1", "SLURMD_NODENAME": "g02",
        "PATH": f"{COMPAT_BIN}:/usr/bin",
    }
    assert {k: env.get(k) for k in expected} == expected
    assert "SLURM_ARRAY_JOB_ID" not in env


def test_tasks_per_node_follow_the_cpus_each_node_holds() -> None:
    """``-N2 -n5`` holding 4+1 CPUs (Slurm's cons_tres) runs 4 tasks and 1; whole 4-CPU
    nodes deal 5 tasks in turns (3,2), as Slurm's block layout does."""
    env = run_environment(launch(ntasks=5, cpus_per_task=1, alloc_cpus=[4, 1]), "g01", ())
    assert (env["SLURM_TASKS_PER_NODE"], env["SLURM_JOB_CPUS_PER_NODE"]) == ("4,1", "4,1")
    env = run_environment(launch(ntasks=5, cpus_per_task=1), "g01", ())
    assert env["SLURM_TASKS_PER_NODE"] == "3,2"


def test_no_gpus_no_devices_and_the_jobs_own_path_is_kept_behind_the_commands() -> None:
    env = run_environment(launch(alloc_gpus=[0, 0], env={"PATH": "/opt/bin"}), "g01", ())
    assert "CUDA_VISIBLE_DEVICES" not in env and "SLURM_GPUS_ON_NODE" not in env
    assert env["PATH"] == f"{COMPAT_BIN}:/opt/bin"


def test_an_array_task_gets_the_arrays_variables() -> None:
    env = run_environment(launch(array_job_id=40, array_task_id=3, array_task_count=8,
                                 array_task_min=0, array_task_max=7), "g01")
    assert [env[f"SLURM_ARRAY_{k}"] for k in ("JOB_ID", "TASK_ID", "TASK_COUNT", "TASK_MIN",
                                              "TASK_MAX")] == ["40", "3", "8", "0", "7"]


def test_a_step_task_counts_its_rank_over_the_nodes_in_order() -> None:
    step = {"step_id": 1, "nodes": ["g01", "g02"], "tasks_per_node": [2, 3],
            "cpus_per_task": 1}
    env = step_environment(step, "g02", 1)
    assert (env["SLURM_PROCID"], env["SLURM_LOCALID"], env["SLURM_NODEID"]) == ("3", "1", "1")
    assert (env["SLURM_STEP_ID"], env["SLURM_NTASKS"], env["SLURM_TASKS_PER_NODE"]) == (
        "1", "5", "2,3")


def test_gpus_are_bound_lowest_free_first_and_given_back() -> None:
    slots = GpuSlots(4)
    assert slots.bind("r1", 2) == (0, 1)
    assert slots.bind("r2", 1) == (2,)
    assert slots.bind("r1", 2) == (0, 1)  # the same run keeps its devices
    slots.free("r1")
    assert slots.bind("r3", 3) == (0, 1, 3)
    assert GpuSlots(1).bind("r", 4) == (0,)  # never a device the node lacks


def test_the_stored_script_is_written_run_with_its_arguments_and_removed(tmp_path: Path) -> None:
    record = launch(script="#!/bin/sh\necho hi\n")
    argv = batch_argv(record, tmp_path)
    path = script_path(tmp_path, record["run_sluid"])
    assert argv == [str(path), "x"]
    assert path.read_text() == "#!/bin/sh\necho hi\n"
    assert path.stat().st_mode & 0o777 == 0o700
    remove_batch_files(tmp_path, record["run_sluid"])
    assert not path.parent.exists()
    assert batch_argv(launch(), tmp_path) == ["/w/job.sh", "x"]  # no script: the command


def test_a_pattern_s_padding_is_ascii_digits_and_at_most_ten() -> None:
    launch = {"job_id": 42, "run_sluid": "s1", "array_task_id": -1}
    assert output_path("o-%5j", launch, "n1") == "o-00042"
    assert output_path("o-%" + "9" * 5000 + "j", launch, "n1") == "o-0000000042"
    assert output_path("o-%0j", launch, "n1") == "o-42"
    assert output_path("o-%\u0663j", launch, "n1") == "o-%\u0663j"  # no pattern: as written


def me() -> pwd.struct_passwd:
    return pwd.getpwuid(os.getuid())


def test_a_job_without_an_exported_environment_gets_its_owners_login_variables(
        tmp_path: Path) -> None:
    """sbatch --export=NONE: HOME, USER, LOGNAME, SHELL from the owner's passwd entry on the
    node, PATH a login's (the tester saw ``HOME= USER=``)."""
    entry = me()
    env = open_job_env(Settings(home=tmp_path), {"user": entry.pw_name,
                                                 "env": {"SLURM_UMASK": "0022"}})
    assert env == {"HOME": entry.pw_dir, "USER": entry.pw_name, "LOGNAME": entry.pw_name,
                   "SHELL": entry.pw_shell or "/bin/sh", "PATH": login_path(entry.pw_uid == 0),
                   "SLURM_UMASK": "0022"}
    run = run_environment(launch(user=entry.pw_name, env=env), "g01")
    assert run["HOME"] == entry.pw_dir
    assert run["PATH"] == f"{COMPAT_BIN}:{login_path(entry.pw_uid == 0)}"


def test_the_jobs_exported_values_win_over_the_login_ones(tmp_path: Path) -> None:
    exported = {"HOME": "/scratch/a", "PATH": "/opt/bin", "FOO": "baz"}
    env = open_job_env(Settings(home=tmp_path), {"user": me().pw_name, "env": exported})
    assert {k: env[k] for k in exported} == exported
    assert env["USER"] == me().pw_name


def test_a_user_the_node_does_not_know_gets_no_login_variables(tmp_path: Path) -> None:
    """The owner check refuses such a launch (UnknownUser): the environment does not raise."""
    assert login_environment("no-such-user-sluice") == {}
    assert login_environment("bad\0name") == {}
    assert open_job_env(Settings(home=tmp_path), {"user": "", "env": {"A": "1"}}) == {"A": "1"}


def test_a_logins_path_is_read_from_login_defs_as_su_reads_it(tmp_path: Path) -> None:
    defs = tmp_path / "login.defs"
    defs.write_text("# ENV_PATH PATH=/commented\nENV_SUPATH\tPATH=/sbin:/bin\n"
                    "ENV_PATH /usr/bin:/bin\n")
    assert (login_path(False, defs), login_path(True, defs)) == ("/usr/bin:/bin", "/sbin:/bin")
    missing = tmp_path / "none"
    assert login_path(False, missing) == "/usr/local/bin:/usr/bin:/bin"
    assert login_path(True, missing).startswith("/usr/local/sbin:")
    entry = me()
    assert login_environment(entry.pw_name, defs)["PATH"] == (
        "/sbin:/bin" if entry.pw_uid == 0 else "/usr/bin:/bin")


def test_the_submit_dir_is_where_the_job_was_submitted_not_its_working_directory() -> None:
    env = run_environment(launch(workdir="/w/run", env={"SLURM_SUBMIT_DIR": "/home/a/proj"}),
                          "g01")
    assert env["SLURM_SUBMIT_DIR"] == "/home/a/proj"
    assert run_environment(launch(workdir="/w/run"), "g01")["SLURM_SUBMIT_DIR"] == "/w/run"


def test_cpus_per_task_is_set_for_c_and_never_left_from_the_submitters_job() -> None:
    assert "SLURM_CPUS_PER_TASK" not in run_environment(launch(cpus_per_task=1), "g01")
    assert run_environment(launch(cpus_per_task=3), "g01")["SLURM_CPUS_PER_TASK"] == "3"
    inherited = launch(cpus_per_task=1, env={"SLURM_CPUS_PER_TASK": "4"})
    assert run_environment(inherited, "g01")["SLURM_CPUS_PER_TASK"] == "1"


def test_account_and_qos_are_set_only_when_the_job_has_them() -> None:
    outer = {"SLURM_JOB_ACCOUNT": "outer", "SLURM_JOB_QOS": "outer"}
    env = run_environment(launch(account="", qos="", env=outer), "g01")
    assert "SLURM_JOB_ACCOUNT" not in env and "SLURM_JOB_QOS" not in env
    env = run_environment(launch(account="ml", qos="", env=outer), "g01")
    assert env["SLURM_JOB_ACCOUNT"] == "ml" and "SLURM_JOB_QOS" not in env


def test_array_variables_of_the_submitters_array_task_are_not_the_jobs() -> None:
    outer = {"SLURM_ARRAY_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "2",
             "SLURM_ARRAY_TASK_STEP": "5", "SLURM_ARRAY_TASK_COUNT": "9"}
    env = run_environment(launch(env=outer), "g01")
    assert not [k for k in env if k.startswith("SLURM_ARRAY_")]
    task = run_environment(launch(env=outer, array_job_id=40, array_task_id=3,
                                  array_task_count=8, array_task_min=0, array_task_max=7), "g01")
    assert (task["SLURM_ARRAY_TASK_ID"], task["SLURM_ARRAY_TASK_COUNT"]) == ("3", "8")
    assert "SLURM_ARRAY_TASK_STEP" not in task


def test_an_edited_login_defs_is_read_again(tmp_path: Path) -> None:
    """The file is read once per change (its mtime), not at every launch."""
    import os

    defs = tmp_path / "login.defs"
    defs.write_text("ENV_PATH PATH=/one\n")
    assert login_path(False, defs) == "/one"
    defs.write_text("ENV_PATH PATH=/two\n")
    later = defs.stat().st_mtime_ns + 1_000_000_000
    os.utime(defs, ns=(later, later))
    assert login_path(False, defs) == "/two"


def test_the_run_gets_its_users_uid_and_gid_as_slurmd_sets_them() -> None:
    me = pwd.getpwuid(os.getuid())
    env = run_environment(launch(user=me.pw_name), "g01", ())
    assert (env["SLURM_JOB_UID"], env["SLURM_JOB_GID"]) == (str(me.pw_uid), str(me.pw_gid))
    assert "SLURM_JOB_UID" not in run_environment(launch(user="no-such-user-9"), "g01", ())
