"""Jobs run as their owner: the run table on real processes, as root switching to ``nobody``.

The child switches user before it enters the working directory or opens an output file, so
the kernel decides with the owner's rights (agents/node/owner.py, agents/node/supervise.py).
"""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.node.owner import OwnerRefusedError, resolve_owner
from agents.node.runs import RunTable

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")

Report = tuple[str, dict[str, Any]]
NOBODY = pwd.getpwnam("nobody")


def _launch(workdir: Path | str, command: list[str], user: str = "nobody", **extra: Any,
            ) -> dict[str, Any]:
    return {
        "job_sluid": "sJOB", "job_id": 9, "run_sluid": "sRUNOWN", "node_sluid": "sN",
        "node_name": "n01", "batch_host": True, "nodes": ["n01"], "segments": [],
        "restart_count": 0, "previous_run_sluid": "", "user": user, "partition": "main",
        "name": "t", "command": command, "workdir": str(workdir), "env": {"FOO": "bar"},
        "output": "", "error": "", "time_limit_s": 0, "issued_ms": 0, **extra,
    }


def _run(tmp_path: Path, launch: dict[str, Any], allow_root: bool = False) -> dict[str, Any]:
    reports: list[Report] = []
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    table = RunTable("n01", state, 1.0, lambda n, _l, f: reports.append((n, f)),
                     allow_root=allow_root)
    table.launch(launch)
    deadline = time.monotonic() + 30
    while not reports and time.monotonic() < deadline:
        table.poll()
        time.sleep(0.02)
    table.terminate_all()
    assert reports and reports[0][0] == "ReportJobExit", reports
    return reports[0][1]


@pytest.fixture
def base() -> Iterator[Path]:
    """A root-owned 0755 directory nobody can enter but not write (pytest's is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="own-owner-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def shared(base: Path) -> Path:
    """A directory nobody may write in, inside ``base``."""
    work = base / "work"
    work.mkdir()
    work.chmod(0o777)
    return work


def test_the_job_runs_as_its_owner_and_its_output_file_is_the_owners(shared: Path,
                                                                       tmp_path: Path) -> None:
    report = _run(tmp_path, _launch(shared, ["sh", "-c", "id -un; id -u; id -g"]))
    assert report["exit_code"] == 0, report
    out = shared / "sluice-9.out"
    assert out.read_text().split() == ["nobody", str(NOBODY.pw_uid), str(NOBODY.pw_gid)]
    assert (out.stat().st_uid, out.stat().st_gid) == (NOBODY.pw_uid, NOBODY.pw_gid)


def test_the_daemons_environment_does_not_reach_the_job(shared: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLUICE_SECRET_CANARY", "canary-1")
    monkeypatch.setenv("KAFKA_BOOTSTRAP", "canary-2:9092")
    report = _run(tmp_path, _launch(shared, ["env"]))
    assert report["exit_code"] == 0, report
    env = dict(line.split("=", 1) for line in (shared / "sluice-9.out").read_text().splitlines())
    assert "canary" not in " ".join(env.values())
    assert env["FOO"] == "bar" and env["SLURM_JOB_ID"] == "9"
    assert not [k for k in env if k.startswith("KAFKA_")]


def test_a_missing_working_directory_fails_the_launch_and_is_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent" / "deeper"
    report = _run(tmp_path, _launch(missing, ["true"]))
    assert report["exit_code"] == 126
    assert "working directory" in report["detail"] and str(missing) in report["detail"]
    assert not missing.parent.exists()


def test_an_output_path_in_a_missing_directory_is_not_created(shared: Path,
                                                                tmp_path: Path) -> None:
    report = _run(tmp_path, _launch(shared, ["true"], output="sub/dir/out-%j"))
    assert report["exit_code"] == 126 and "output file sub/dir/out-9" in report["detail"]
    assert not (shared / "sub").exists()


def test_a_job_cannot_read_another_users_private_file(shared: Path, base: Path,
                                                      tmp_path: Path) -> None:
    private = base / "root-only.out"
    private.write_text("root's secret\n")
    private.chmod(0o600)
    report = _run(tmp_path, _launch(shared, ["cat", str(private)]))
    assert report["exit_code"] != 0
    assert "root's secret" not in (shared / "sluice-9.out").read_text()
    assert "Permission denied" in (shared / "sluice-9.out").read_text()


def test_a_symlinked_output_path_cannot_write_as_another_user(shared: Path, base: Path,
                                                              tmp_path: Path) -> None:
    victim = base / "victim.out"
    victim.write_text("untouched\n")
    victim.chmod(0o600)
    (shared / "sluice-9.out").symlink_to(victim)
    report = _run(tmp_path, _launch(shared, ["echo", "overwritten"]))
    assert report["exit_code"] == 126 and "output file" in report["detail"], report
    assert victim.read_text() == "untouched\n"


def test_dotdot_in_the_output_path_is_decided_by_the_owners_rights(shared: Path, base: Path,
                                                                   tmp_path: Path) -> None:
    report = _run(tmp_path, _launch(shared, ["echo", "x"], output="../escaped.out"))
    assert report["exit_code"] == 126 and "Permission denied" in report["detail"]
    assert not (base / "escaped.out").exists()  # base is root's, 0755


def test_root_jobs_are_refused_unless_allowed(shared: Path, tmp_path: Path) -> None:
    refused = _run(tmp_path, _launch(shared, ["true"], user="root"))
    assert refused["exit_code"] == 126 and "RootJobRefused" in refused["detail"]
    allowed = _run(tmp_path, _launch(shared, ["id", "-u"], user="root"), allow_root=True)
    assert allowed["exit_code"] == 0 and (shared / "sluice-9.out").read_text() == "0\n"


def test_owner_resolution_names_its_refusals() -> None:
    with pytest.raises(OwnerRefusedError) as unknown:
        resolve_owner("no-such-user-sluice", allow_root=False)
    assert unknown.value.reason == "UnknownUser"
    with pytest.raises(OwnerRefusedError) as other:
        resolve_owner("root", allow_root=True, daemon_uid=NOBODY.pw_uid)
    assert other.value.reason == "NotDaemonUser"
    own = resolve_owner("nobody", allow_root=False, daemon_uid=NOBODY.pw_uid)
    assert own.uid == NOBODY.pw_uid and own.spec() is None  # its own uid: no switch
    switched = resolve_owner("nobody", allow_root=False)
    assert switched.spec() == {"uid": NOBODY.pw_uid, "gid": NOBODY.pw_gid,
                               "groups": list(switched.groups)}
