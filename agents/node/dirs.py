"""Directories of the node daemon that the jobs' owners must reach."""

from __future__ import annotations

from pathlib import Path

__all__ = ["searchable"]


def searchable(*directories: Path) -> None:
    """Give group and others search permission (x, never read) on each directory, so a job
    running under its owner's uid can reach a file of its own below (its batch script, the
    client configuration) without listing anything."""
    for directory in directories:
        mode = directory.stat().st_mode
        if mode & 0o011 != 0o011:
            directory.chmod((mode & 0o7777) | 0o011)
