"""The cluster's client configuration a job gets, so ``sluice``/``srun`` inside it find the system.

A job's environment holds none of the daemon's settings (``SLUICE_*``, ``KAFKA_*``; issue 13),
yet a batch script's ``srun`` must reach the same broker and views as the daemon. Slurm's answer
is ``slurm.conf`` on every node (or slurmd's configless cache); Sluice's: the daemon's own
``SLUICE_CONF`` when it names a file, else a client configuration it writes from its settings
(the public ones only, as ``sluice up`` writes ``run/sluice.conf``: no password, no private
key, no token), readable by all. The job gets ``SLUICE_CONF`` pointing at it.

``SLUICE_JOB_CONF`` naming a file comes first: the daemon's own broker may not be its jobs'.
``sluice up``'s secured default gives its daemons SASL_SSL as ``node`` and their jobs the
users' listener (``run/sluice.conf``); written from the daemon's settings, a job's ``srun``
was sent to the SASL_SSL listener without a password ("SLUICE_KAFKA_SECURITY=SASL_SSL needs
SLUICE_KAFKA_USER ...": no ``srun`` inside a batch job worked, 8 Dec 2026).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from agents.auth.key_files import KeyFileError
from agents.auth.public_keys import env_public_text
from agents.node.dirs import searchable
from streams.settings import Settings, client_conf_lines

__all__ = ["job_client_conf"]


def job_client_conf(settings: Settings, state_dir: Path) -> str:
    """The path of the client configuration jobs on this node read ("" when none can be
    made); writes ``<state dir>/client/sluice.conf`` unless the daemon has a file of its own."""
    for given in (os.environ.get("SLUICE_JOB_CONF", ""), os.environ.get("SLUICE_CONF", "")):
        if given and Path(given).is_file():
            return str(Path(given).absolute())
    lines = ["# written by the node daemon for its jobs (agents/node/client_conf.py); no secret",
             *client_conf_lines(settings)]
    with contextlib.suppress(OSError, ValueError, KeyFileError):  # no sealing key: none to give
        lines.append(f"EnvPublicKey={env_public_text(settings)}")
    directory = state_dir / "client"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        searchable(state_dir)  # search, not read: jobs reach the file
        directory.chmod(0o755)
        path = directory / "sluice.conf"
        tmp = path.with_suffix(".tmp")
        tmp.write_text("\n".join(lines) + "\n")
        tmp.chmod(0o644)
        tmp.replace(path)
    except OSError:
        return ""
    return str(path)
