"""Batch scripts as ``sbatch`` reads them: the script found by path, its ``#SBATCH`` lines,
``--wrap``.

- ``sluice submit script.sh [args…]``: the first word after the options names a file (a relative
  name is taken from the working directory, with or without ``./``, as sbatch does); a file that
  starts with ``#!`` is a batch script. It is read at submission and stored with the job
  (``JobSpec.script``, at most :data:`schemas.ranges.MAX_SCRIPT_CHARS` characters), so a later
  change of the file does not change the job; the node runs the stored copy with the words
  after it as its arguments.
- ``#SBATCH`` lines are read from the top of the script, after the ``#!`` line, up to the first
  line that is neither blank nor a comment (sbatch stops there too); each line's words (shell
  quoting, a ``#`` after a blank starts a comment) are options of ``sluice submit``, parsed by
  the **same** argparse parser as the command line, before it: an option given on the
  command line wins.
- ``--wrap "cmd"``: the script is ``#!/bin/sh`` and the command (sbatch's wrapper script).
"""

from __future__ import annotations

import argparse
import contextlib
import io
from pathlib import Path

from schemas.frozen_record import FrozenSlotsRecord
from schemas.ranges import MAX_SCRIPT_CHARS

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from typing import BinaryIO

__all__ = ["BatchScript", "ScriptError", "ScriptUsageError", "directives", "find_script",
           "from_stdin", "load",
           "parse_options", "read_script", "script_text", "wrap_script"]

DIRECTIVE = "#SBATCH"


class ScriptError(ValueError):
    """A batch script that cannot be submitted: the message says which and why."""


class ScriptUsageError(ScriptError):
    """An ``#SBATCH`` option (or the command line with it) that the parser refuses."""


class BatchScript(FrozenSlotsRecord):
    """A script read at submission: where it was found, its text, its ``#SBATCH`` words (a
    frozen record: schemas/frozen_record.py)."""

    __slots__ = ("options", "path", "text")
    __match_args__ = ("path", "text", "options")
    path: str
    text: str
    options: tuple[str, ...]

    def __init__(self, path: str, text: str, options: tuple[str, ...]) -> None:
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "options", options)


def wrap_script(command: str) -> str:
    """The script sbatch writes for ``--wrap``."""
    return f"#!/bin/sh\n# This script was created by sluice submit --wrap.\n\n{command}\n"


def find_script(name: str, workdir: Path) -> Path | None:
    """The batch script ``name`` names (relative to ``workdir``), or None when ``name`` is no
    file there or not a script (no ``#!``: a program, run as a command)."""
    path = Path(name) if Path(name).is_absolute() else workdir / name
    try:
        if not path.is_file():
            return None
        with path.open("rb") as handle:
            return path if handle.read(2) == b"#!" else None
    except OSError:
        return None


def not_a_script(name: str, workdir: Path) -> str:
    """Why sbatch would refuse ``name`` as its batch script (Slurm's words; "" when it is one).
    ``sluice submit`` runs such a name as a command; ``sbatch`` (``--sbatch``) must not, or a
    typo in a script's name queues a job that fails at launch."""
    path = Path(name) if Path(name).is_absolute() else workdir / name
    try:
        if not path.is_file():
            return f"Unable to open file {name}"
        with path.open("rb") as handle:
            head = handle.read(2)
    except OSError:
        return f"Unable to open file {name}"
    if not head:
        return "Batch script is empty!"
    if head != b"#!":
        return ("This does not look like a batch script.  The first line must start with #! "
                "followed by the path to an interpreter.  For instance: #!/bin/sh")
    return ""


def read_script(path: Path, shown: str) -> str:
    """The script's text (ScriptError when unreadable, not text, or too large)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ScriptError(f"{shown}: cannot read the batch script: {exc.strerror}") from exc
    return script_text(data, shown)


def script_text(data: bytes, shown: str) -> str:
    """``data`` as a batch script's text (ScriptError when not text, or too large)."""
    if len(data) > MAX_SCRIPT_CHARS:
        raise ScriptError(f"{shown}: the batch script is {len(data)} bytes, more than the "
                          f"{MAX_SCRIPT_CHARS} a job may store (Slurm's max_script_size)")
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        raise ScriptError(f"{shown}: the batch script is not UTF-8 text") from exc
    if "\0" in text:
        raise ScriptError(f"{shown}: the batch script contains a NUL byte")
    return text


def directives(text: str, shown: str) -> tuple[str, ...]:
    """The words of the ``#SBATCH`` lines at the top of ``text`` (ScriptError on bad quoting)."""
    words: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if number == 1 and stripped.startswith("#!"):
            continue
        if stripped and not stripped.startswith("#"):
            break  # the first command: sbatch reads no further
        if not line.startswith(DIRECTIVE) or line[len(DIRECTIVE):][:1] not in (" ", "\t"):
            continue
        import shlex  # a script with #SBATCH lines only: not on the path of `-- cmd` (issue 17)

        try:
            words += shlex.split(line[len(DIRECTIVE):], comments=True)
        except ValueError as exc:
            raise ScriptError(f"{shown}:{number}: {line.strip()}: {exc}") from exc
    return tuple(words)


def from_stdin(stream: BinaryIO) -> BatchScript:
    """The batch script piped to ``sbatch`` (no script named, no ``--wrap``): as sbatch, it
    must start with ``#!``."""
    text = script_text(stream.read(MAX_SCRIPT_CHARS + 1), "stdin")
    if not text.startswith("#!"):
        raise ScriptError("stdin: this does not look like a batch script: its first line must "
                          "start with #! and an interpreter (or give a command after --)")
    return BatchScript("", text, directives(text, "stdin"))


def load(name: str, workdir: Path) -> BatchScript | None:
    """The batch script ``name`` names, read, with its directives; None when it is no script."""
    path = find_script(name, workdir)
    if path is None:
        return None
    text = read_script(path, name)
    return BatchScript(str(path.resolve()), text, directives(text, name))


def parse_options(parser: argparse.ArgumentParser, words: list[str], shown: str,
                  ) -> argparse.Namespace:
    """``words`` parsed by ``parser``; its error becomes a ScriptError naming ``shown``
    instead of argparse's usage text and exit."""
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            return parser.parse_args(words)
    except SystemExit as exc:
        lines = [x for x in captured.getvalue().splitlines() if x.strip()]
        message = lines[-1].split("error: ", 1)[-1] if lines else f"exit {exc.code}"
        raise ScriptUsageError(f"{shown}: {message}") from None
