"""Building the front (``cli/shim/sluice_front.c``): ``python -m cli.front_build TARGET``, run by
``make install`` with the virtualenv's ``bin/sluice`` as TARGET, in place of the Python entry
script pip wrote there (docs/slurm-commands.md, "How fast a command starts").

The front must sit next to the interpreter it runs (``TARGET``'s directory holds ``python``).
Where no C compiler is found nothing is built and ``sluice`` stays the Python entry script (the
exit status is 0: a checkout without a compiler works as before, only slower to start); a
compiler that refuses the source is an error (exit 1).
"""

from __future__ import annotations

import sys
from pathlib import Path

from infra.c_build import CFLAGS, compile_program, compiler
from infra.c_build import CompileError as FrontBuildError

__all__ = ["CFLAGS", "SOURCE", "FrontBuildError", "build"]

SOURCE = Path(__file__).resolve().with_name("shim") / "sluice_front.c"


def build(target: Path, cc: str | None = None) -> None:
    """Compile the front into ``target``, atomically (mode 0755)."""
    compile_program(SOURCE, target, cc=cc)


def main() -> int:
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print("usage: python -m cli.front_build TARGET (the sluice program to write)",
              file=sys.stderr)
        return 2
    target = Path(sys.argv[1])
    if compiler() is None:
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
