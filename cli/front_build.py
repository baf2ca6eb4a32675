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

__all__ = ["CFLAGS", "LINKS", "SOURCE", "FrontBuildError", "build"]

SOURCE = Path(__file__).resolve().with_name("shim") / "sluice_front.c"
LINKS: tuple[tuple[str, list[str]], ...] = (
    ("static-pie", ["-static-pie"]),  # glibc's libc.a (libc6-dev), still position-independent
    ("dynamic", []),
)
"""The links tried in turn. The front runs once a call, so the dynamic loader's work at each
start (mapping ``libc.so``, relocating, resolving) was a fifth of its CPU: 1.37 against 1.13 ms
a served call on the Intel Xeon guest (docs/benchmarks.md, "Aim 1: each process's CPU a
call"). It uses nothing glibc loads at run time (no user or host lookups, no ``dlopen``, no
locale data), so a static link behaves the same; ``-static-pie`` keeps its addresses
randomised. Where ``libc.a`` is missing the dynamic link is used."""


def build(target: Path, cc: str | None = None) -> str:
    """Compile the front into ``target``, atomically (mode 0755); returns the link used."""
    return compile_program(SOURCE, target, LINKS, cc=cc)


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
        how = build(target)
    except FrontBuildError as exc:
        print(f"the sluice front did not build:\n{exc}", file=sys.stderr)
        return 1
    print(f"built {target} (the sluice front, {how})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
