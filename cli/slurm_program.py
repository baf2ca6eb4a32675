"""Errors said in a Slurm command's name when the CLI runs as one (``squeue: error: …``).

The Slurm shims (``cli/slurm_compat/bin``) run ``sluice <command>`` with
``SLUICE_SLURM_PROGRAM`` set to their own name. :func:`as_program` takes the variable out of the
environment (a job submitted by ``sbatch`` must not inherit it, nor anything it runs) and, when
it was set, wraps stderr so that each line Sluice's commands begin with their own name,
``sluice queue: …`` or ``sluice update: …``, begins as Slurm's would: ``squeue: error: …``
(Slurm's ``error()`` prefix; a line already saying ``error:``, ``warning:`` or ``fatal:`` keeps
its word). Other lines pass unchanged, among them the ones already in Slurm's form
(``srun: job 5 queued and waiting for resources``).
"""

from __future__ import annotations

import os
import re
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import TextIO

__all__ = ["ENV", "SLURM_VERSION", "SlurmStderr", "as_program", "current", "in_slurm_words",
           "restore", "version_line"]

ENV = "SLUICE_SLURM_PROGRAM"
"""The shim's name (``squeue``, ``scontrol``…), set by the shim for the one call."""

_PROGRAMS = frozenset({"sacct", "sacctmgr", "salloc", "sbatch", "scancel", "scontrol", "sdiag",
                       "sinfo", "sprio", "squeue", "srun", "sshare"})
_SLUICE_PREFIX = re.compile(r"sluice(?: [a-z][a-z-]*)*: ")
_LEVELS = ("error: ", "warning: ", "fatal: ")

SLURM_VERSION = "25.11.0"
"""The Slurm release whose commands the shims stand for, as their ``-V``/``--version`` says it
(``slurm 25.11.0``): the release whose behaviour Sluice follows (docs/slurm-commands.md)."""

_VERSION_WORDS = frozenset({"-V", "--version"})
_COMMAND_FIRST = frozenset({"sbatch", "salloc", "srun"})
"""Slurm commands whose getopt stops at their script or command (``srun prog -V``: prog's)."""


def version_line(program: str, words: Sequence[str]) -> str:
    """``slurm 25.11.0`` when Slurm's ``program`` (a shim's name) would print its version for
    ``words`` (the sluice command's words: ``queue -h -V``, ``submit --sbatch --version``,
    ``scontrol version``), else "". Tools read it to tell Slurm is there and which release
    (``sbatch --version``, ``sinfo -V``, ``scontrol --version``); it was a usage error, exit 2."""
    if program not in _PROGRAMS | {"sreport"}:
        return ""
    own = list(words[1:])
    if own[:1] == ["--sbatch"]:
        own = own[1:]
    if program == "scontrol" and [w for w in own if not w.startswith("-")][:1] == ["version"]:
        return f"slurm {SLURM_VERSION}"
    for word in own:
        if word == "--" or (program in _COMMAND_FIRST and not word.startswith("-")):
            return ""
        if word in _VERSION_WORDS:
            return f"slurm {SLURM_VERSION}"
    return ""


def in_slurm_words(line: str, program: str) -> str:
    """``line`` as ``program`` would begin it: ``sluice queue: Invalid user: x`` →
    ``squeue: error: Invalid user: x``; a line not begun with a ``sluice …:`` prefix is kept."""
    match = _SLUICE_PREFIX.match(line)
    if match is None:
        return line
    rest = line[match.end():]
    if not rest.startswith(_LEVELS):
        rest = f"error: {rest}"
    return f"{program}: {rest}"


class SlurmStderr:
    """A text stream that writes each whole line to ``target`` through :func:`in_slurm_words`
    (a part line waits for its end, or for :meth:`flush`)."""

    def __init__(self, target: TextIO, program: str) -> None:
        self.target = target
        self.program = program
        self._part = ""

    def write(self, text: str) -> int:
        lines = (self._part + text).split("\n")
        self._part = lines.pop()
        if lines:
            self.target.write("".join(f"{in_slurm_words(line, self.program)}\n"
                                      for line in lines))
        return len(text)

    def flush(self) -> None:
        if self._part:
            self.target.write(in_slurm_words(self._part, self.program))
            self._part = ""
        self.target.flush()

    def fileno(self) -> int:
        return self.target.fileno()

    def isatty(self) -> bool:
        return self.target.isatty()

    def __getattr__(self, name: str) -> object:  # encoding, errors, buffer… as the target's
        return getattr(self.target, name)


def as_program() -> str:
    """Take :data:`ENV` out of the environment; when it names a Slurm command, point
    ``sys.stderr`` at a :class:`SlurmStderr` and return the name (else "")."""
    program = os.environ.pop(ENV, "")
    if program not in _PROGRAMS or isinstance(sys.stderr, SlurmStderr):
        return ""
    sys.stderr = SlurmStderr(sys.stderr, program)
    return program


def current() -> str:
    """The Slurm command this call runs as ("" when it runs as ``sluice``)."""
    return sys.stderr.program if isinstance(sys.stderr, SlurmStderr) else ""


def restore() -> None:
    """Flush the wrapped stderr and put the original back (the call has ended)."""
    if isinstance(sys.stderr, SlurmStderr):
        sys.stderr.flush()
        sys.stderr = sys.stderr.target
