"""The batch script a node runs: the job's stored copy (``LaunchRun.script``), written to the
node's state directory, as slurmd spools ``slurm_script``.

``<state dir>/scripts/<run SLUID>/slurm_script`` is written before the run starts (mode 0700;
owned by the job's user when the daemon runs as root, so a run started under the user's uid can
run it) and removed with the run. Its directory stays the daemon's (mode 0750, group the user's
primary group, as slurmd's job directory): the user may enter it, never write in it. Red team,
7 Dec 2026: the directory was the user's, whose job (or login) filled it with 3,000 nested
directories; the root daemon's removal at the run's end raised ``RecursionError``
(``shutil.rmtree``), which ended the daemon and with it every other user's run on the node.
The command's first word is the script's path at submission; the words after it are the
script's arguments. A run without a stored script runs its command.
"""

from __future__ import annotations

import logging
import os
import pwd
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agents.node.dirs import searchable
from agents.node.proctrack import safe_name

__all__ = ["batch_argv", "remove_batch_files", "script_path"]

log = logging.getLogger(__name__)

SCRIPT_NAME = "slurm_script"


def script_path(state_dir: Path, run_sluid: str) -> Path:
    """Where the run's batch script is written."""
    return state_dir / "scripts" / run_sluid / SCRIPT_NAME


def batch_argv(launch: Mapping[str, Any], state_dir: Path) -> list[str]:
    """The argv of the batch step: the stored script written out, or the command as given."""
    command = [str(word) for word in launch.get("command") or []]
    script = str(launch.get("script") or "")
    run_sluid = str(launch["run_sluid"])
    if not script or not safe_name(run_sluid):
        return command
    path = script_path(state_dir, run_sluid)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    searchable(state_dir, path.parent.parent)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o700)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(script)
    _give_to_user(path, str(launch.get("user") or ""))
    return [str(path), *command[1:]]


def _give_to_user(path: Path, user: str) -> None:
    """As root, the script belongs to the job's user (who runs it); its directory stays the
    daemon's, with the user's primary group and mode 0750 (enter and read, never write: as
    slurmd's job directory), so nothing the user makes is ever there for root to remove."""
    if os.geteuid() != 0 or not user:
        return
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return
    os.chown(path.parent, os.geteuid(), entry.pw_gid, follow_symlinks=False)
    path.parent.chmod(0o750)
    os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)


def remove_batch_files(state_dir: Path, run_sluid: str) -> None:
    """The run left the node: its script goes too. Never raises: the daemon's loop calls it,
    and a folder it cannot remove (one a user owned under an earlier release, nested deeper
    than ``shutil.rmtree``'s recursion goes) is logged and left."""
    if safe_name(run_sluid):
        path = state_dir / "scripts" / run_sluid
        try:
            _remove_folder(path)
        except FileNotFoundError:
            return
        except (OSError, RecursionError) as exc:
            log.warning("could not remove %s: %s", path, type(exc).__name__)


def _remove_folder(path: Path) -> None:
    """``path`` and its files, without ``shutil`` (with ``tempfile``, about 0.5 MiB of a node
    daemon's memory, issue 17); a folder inside it, which a run's never has, goes to
    ``shutil.rmtree``."""
    found = list(path.iterdir())
    if any(entry.is_dir() and not entry.is_symlink() for entry in found):
        import shutil  # noqa: PLC0415 - see above

        shutil.rmtree(path)
        return
    for entry in found:
        entry.unlink()
    path.rmdir()
