"""The cluster in a data directory, found by its ``cluster.json`` and PID files."""

from __future__ import annotations

from pathlib import Path

from ._config import load_spec
from ._local import DEFAULT_STOP_TIMEOUT_S, LocalKafka

__all__ = ["running", "stop"]


def running(data_dir: str | Path) -> LocalKafka | None:
    """The cluster in ``data_dir`` if every node's PID is alive and its port answers, else None."""
    root = Path(data_dir).expanduser().resolve()
    spec = load_spec(root)
    if spec is None:
        return None
    cluster = LocalKafka(root, spec)
    return cluster if cluster.all_answering() else None


def stop(data_dir: str | Path, timeout: float = DEFAULT_STOP_TIMEOUT_S) -> bool:
    """Stop whatever nodes of ``data_dir`` are running; True if any was."""
    root = Path(data_dir).expanduser().resolve()
    spec = load_spec(root)
    if spec is None:
        return False
    cluster = LocalKafka(root, spec)
    was_running = any(s.pid is not None for s in cluster.status())
    cluster.stop(timeout)
    return was_running
