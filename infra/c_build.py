"""Compiling one C source into a program, atomically: the step the node's exec helper
(``agents/node/exec_helper.py``) and the sluice front (``cli/front_build.py``) share.

The compiler is ``$CC`` or ``cc``; the flags are strict (every warning an error) and
fortified. Each link tried in turn (the exec helper tries a libc-free, a static, then a dynamic
one) is compiled in a temporary directory next to the target, then renamed over it with mode
0755: a reader sees the old program or the new one, never half of one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["CFLAGS", "CompileError", "compile_program", "compiler"]

CFLAGS = ("-O2", "-Wall", "-Wextra", "-Werror", "-D_FORTIFY_SOURCE=2")
DYNAMIC: tuple[tuple[str, list[str]], ...] = (("dynamic", []),)
"""The one link of a program that needs nothing else: against the system's shared C library."""


class CompileError(RuntimeError):
    """No C compiler, or no link of the source worked (the compiler's messages say why)."""


def compiler() -> str | None:
    """The C compiler to use: ``$CC`` or ``cc``, None if there is none."""
    return shutil.which(os.environ.get("CC") or "cc")


def compile_program(source: Path, target: Path,
                    links: Sequence[tuple[str, list[str]]] = DYNAMIC,
                    cc: str | None = None) -> str:
    """Compile ``source`` into ``target`` with the first of ``links`` (``(name, extra flags)``)
    that works; returns its name. Raises :class:`CompileError` when none does."""
    cc = cc or compiler()
    if cc is None:
        raise CompileError("no C compiler (cc) on this host")
    target.parent.mkdir(parents=True, exist_ok=True)
    errors = []
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as work:
        made = Path(work) / target.name
        for how, extra in links:
            done = subprocess.run([cc, *CFLAGS, *extra, "-o", str(made), str(source)],
                                  capture_output=True, text=True, check=False)
            if done.returncode == 0:
                made.chmod(0o755)
                made.replace(target)
                return how
            errors.append(f"{how}: {done.stderr.strip()}" if len(links) > 1
                          else done.stderr.strip())
    raise CompileError("\n".join(errors))
