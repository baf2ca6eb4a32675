"""A run's marker counts only on a process of the run's uids (red team, 7 Dec 2026: another
user's loop starting ``env SLUICE_RUN_SLUID=<alice's run> sleep 100`` every 20 ms kept the
supervisor of alice's run killing for ever, her ended job RUNNING with its CPUs held)."""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

import pytest

from agents.node.leftovers import RunRecords
from agents.node.proctrack import MARKER, RunScope
from agents.node.supervised import Supervised
from tests.unit.node.procs import alive_with, token, wait_count, wait_gone

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a process of another uid needs root")

NOBODY = pwd.getpwnam("nobody")
RUN = "s009M9936DQN02"


def _marked(argv_token: str, uid: int | None = None) -> subprocess.Popen[bytes]:
    """``sleep`` carrying the run's marker, as ``uid`` (root's own when None)."""
    return subprocess.Popen(["sleep", argv_token], env={MARKER: RUN, "PATH": "/bin:/usr/bin"},
                            user=uid, group=NOBODY.pw_gid if uid is not None else None,
                            extra_groups=[] if uid is not None else None)


def test_a_stranger_carrying_the_marker_is_not_the_runs() -> None:
    own_token, stranger_token = token(), token()
    own, stranger = _marked(own_token), _marked(stranger_token, NOBODY.pw_uid)
    try:
        scope = RunScope(RUN, uids=frozenset({os.getuid()}))
        found = scope.pids()
        assert own.pid in found
        assert stranger.pid not in found
        assert scope.kill_all(5.0)  # never ends while a stranger keeps starting marked ones
        own.wait(5)
        assert stranger.poll() is None  # not killed: not the run's
        assert stranger.pid in RunScope(RUN).pids()  # uids unknown: the marker alone
    finally:
        for process in (own, stranger):
            process.kill()
            process.wait(5)
        assert wait_gone(own_token, 5) == [] and wait_gone(stranger_token, 5) == []
        assert alive_with(stranger_token) == []


def test_the_runs_uids_are_the_daemons_and_the_owners_and_survive_a_restart(
        tmp_path: Path) -> None:
    from agents.node.owner import run_uids  # here: the other test runs on a tree without it

    assert run_uids("nobody") == frozenset({os.getuid(), NOBODY.pw_uid})
    assert run_uids("") == run_uids("no-such-user-h1") == frozenset({os.getuid()})
    records = RunRecords(tmp_path)
    records.add(RunScope(RUN, uids=run_uids("nobody")))
    (tmp_path / "runs" / "s009M9936DQN03").write_text('{"run_sluid": "s009M9936DQN03"}\n')
    scopes = {scope.run_sluid: scope for scope in records.scopes()}
    assert scopes[RUN].uids == frozenset({os.getuid(), NOBODY.pw_uid})
    assert scopes["s009M9936DQN03"].uids is None  # an earlier release's record


def test_another_users_environment_is_never_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Up to 2 MB a process, shared by a thousand forked ones (one copy in memory): each scan
    of /proc read 2 GB, and the daemon's loop, signalling a run (``scancel -f -s``), stopped
    for 10 s and more: its node went DOWN and every run on it was killed."""
    from agents.node import proctrack  # here: the first test runs on a tree without uids

    read: list[int] = []
    real = proctrack._has_marker

    def recorded(pid: int, needle: bytes) -> bool:
        read.append(pid)
        return real(pid, needle)

    monkeypatch.setattr(proctrack, "_has_marker", recorded)
    stranger_token = token()
    stranger = _marked(stranger_token, NOBODY.pw_uid)
    try:
        RunScope(RUN, uids=frozenset({os.getuid()})).pids()
        assert read and stranger.pid not in read
    finally:
        stranger.kill()
        stranger.wait(5)


def test_signalling_a_run_with_its_supervisor_reads_no_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon's loop signals (``scancel -s``) a live run by its supervisor's subtree and
    cgroup: mallory's 1,000 processes of 1.8 MB environments, her own, held node03's loop
    11.5 s when her own job was signalled (its node went DOWN, alice's job requeued)."""
    from agents.node import proctrack  # here: the first test runs on a tree without uids

    read: list[int] = []
    monkeypatch.setattr(proctrack, "_has_marker", lambda pid, _needle: read.append(pid))
    argv_token = token()
    supervisor = subprocess.Popen(["sh", "-c", f"sleep {argv_token}; :"])
    try:
        assert wait_count(argv_token, 1, 5)
        scope = RunScope(RUN, uids=frozenset({os.getuid()}))
        assert proctrack.signal_scopes(0, [(scope, supervisor.pid)]) == 1  # the sleep
        assert read == []
    finally:
        supervisor.kill()
        supervisor.wait(5)
        for pid in alive_with(argv_token):
            os.kill(pid, 9)


def test_killing_a_run_with_its_supervisor_reads_no_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``scancel`` of her own job: the daemon's loop signals the run (``Supervised.signal``,
    ``RunScope.signal``) SIGCONT, SIGTERM, then SIGKILL; node03's loop sat there reading her
    1,000 environments (py-spy) until its node went DOWN."""
    from agents.node import proctrack  # here: the first test runs on a tree without uids

    read: list[int] = []
    monkeypatch.setattr(proctrack, "_has_marker", lambda pid, _needle: read.append(pid))
    argv_token = token()
    supervisor = subprocess.Popen(["sh", "-c", f"sleep {argv_token}; :"])
    try:
        assert wait_count(argv_token, 1, 5)
        assert RunScope(RUN, uids=frozenset({os.getuid()})).signal(0, supervisor.pid) == 1
        assert read == []
    finally:
        supervisor.kill()
        supervisor.wait(5)
        for pid in alive_with(argv_token):
            os.kill(pid, 9)


def test_a_command_that_never_started_leaves_a_clean_run(tmp_path: Path) -> None:
    """Not swept by marker in the daemon's loop (``RunTable._leftovers_killed``): mallory's
    ``sbatch -D /nonexistent`` held node03's loop 12.7 s reading her own 1,000 environments."""
    process = Supervised.start(RunScope(RUN, uids=frozenset({os.getuid()})), ["true"], {},
                               tmp_path / "nonexistent", subprocess.DEVNULL, subprocess.DEVNULL,
                               tmp_path, await_start=False)
    process.wait(30)
    assert isinstance(process.start_outcome(), OSError)
    assert process.clean
