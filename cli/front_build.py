"""Building the front (``cli/shim/sluice_front.c``): ``python -m cli.front_build TARGET``, run by
``make install`` with the virtualenv's ``bin/sluice`` as TARGET, in place of the Python entry
script pip wrote there (docs/slurm-commands.md, "How fast a command starts").

The front must sit next to the interpreter it runs (``TARGET``'s directory holds ``python``).
Where no C compiler is found nothing is built and ``sluice`` stays the Python entry script (the
exit status is 0: a checkout without a compiler works as before, only slower to start); a
compiler that refuses the source is an error (exit 1).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["CFLAGS", "SOURCE", "FrontBuildError", "build"]

SOURCE = Path(__file__).resolve().with_name("shim") / "sluice_front.c"
CFLAGS = ("-O2", "-Wall", "-Wextra", "-Werror", "-D_FORTIFY_SOURCE=2")


class FrontBuildError(RuntimeError):
    """The compiler refused the front's source (its message says why)."""


def build(target: Path, cc: str | None = None) -> None:
    """Compile the front into ``target``, atomically (mode 0755)."""
    cc = cc or shutil.which(os.environ.get("CC") or "cc")
    if cc is None:
        raise FrontBuildError("no C compiler (cc) on this host")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as work:
        made = Path(work) / target.name
        done = subprocess.run([cc, *CFLAGS, "-o", str(made), str(SOURCE)],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise FrontBuildError(done.stderr.strip())
        made.chmod(0o755)
        made.replace(target)


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: python -m cli.front_build TARGET (the sluice program to write)",
              file=sys.stderr)
        return 2
    target = Path(sys.argv[1])
    if shutil.which(os.environ.get("CC") or "cc") is None:
        print(f"no C compiler: {target} stays the Python entry script", file=sys.stderr)
        return 0
    try:
        build(target)
    except FrontBuildError as exc:
        print(f"the sluice front did not build:\n{exc}", file=sys.stderr)
        return 1
    print(f"built {target} (the sluice front)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
