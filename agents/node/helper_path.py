"""Where a run's command starts through: the exec helper's path, or "" for Python.

Shared by the supervisor (``agents/node/supervise.py``, run as a file with only the standard
library) and the daemon's supervisor server, which logs it once: the daemon does not import
the supervisor's own code (about 0.3 MiB of every daemon's memory) to learn it.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["exec_helper"]


def exec_helper() -> str:
    """The exec helper commands start through (``agents/node/helper/sluice-exec``, built by
    ``make install``), or "" where it is not built or not executable, or with
    ``SLUICE_EXEC_HELPER=off``: then the command's process is forked and prepared in Python
    (``agents.node.supervise._child``), as before the helper."""
    if os.environ.get("SLUICE_EXEC_HELPER", "") == "off":
        return ""
    path = str(Path(__file__).resolve().with_name("helper") / "sluice-exec")
    return path if os.access(path, os.X_OK) else ""
