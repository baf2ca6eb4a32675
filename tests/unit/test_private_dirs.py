"""The worker's and the views' state directories and the logs are the service's alone.

Red team, 2026-12-07: under a ``SLUICE_HOME`` outside a private directory, any user could read
every job's batch script, command and working directory straight from the views' and the
shard's RocksDB files (0644 in 0755 directories), past ``PrivateData=jobs``, and the node
logs' launch failures named private paths."""

from __future__ import annotations

import stat
from pathlib import Path

from streams.state_dir import make_private


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_directory_is_made_private(tmp_path: Path) -> None:
    target = tmp_path / "home" / "projections"
    make_private(target)
    assert _mode(target) == 0o700


def test_an_existing_open_directory_is_closed_and_its_files_kept(tmp_path: Path) -> None:
    target = tmp_path / "worker"
    target.mkdir(mode=0o755)
    target.chmod(0o755)
    (target / "000012.log").write_text("#!/bin/bash\n# SECRET\n")
    make_private(target)
    assert _mode(target) == 0o700
    assert (target / "000012.log").read_text().endswith("SECRET\n")


def test_a_directory_that_cannot_be_made_is_left_to_the_start_check(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    make_private(blocker / "worker")  # no exception: check_at_start says what is wrong
    assert not (blocker / "worker").exists()
