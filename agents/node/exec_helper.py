"""Building the exec helper (``agents/node/helper/sluice_exec.c``): ``python -m
agents.node.exec_helper [TARGET]``, run by ``make install`` and by the image build.

The helper is the C program a run's supervisor spawns to become the command (the owner
switch, the working directory and output files as the owner, then ``exec``; see its source
and docs/node-daemon.md, "The exec helper"). It is built without any C library where it can
(x86_64: raw system calls, so nothing runs before its own code, not even glibc's probing of
the CPU, 0.7 ms a start on a VM), else linked statically with glibc (``libc.a``), else
dynamically; it is started with an empty environment either way. Where no C
compiler is found nothing is built and supervisors prepare the command in Python, as before
(the exit status is 0: a checkout without a compiler still works); a compiler that refuses
the source is an error (exit 1).
"""

from __future__ import annotations

import sys
from pathlib import Path

from infra.c_build import CFLAGS, compile_program, compiler
from infra.c_build import CompileError as HelperBuildError

__all__ = ["BINARY", "CFLAGS", "SOURCE", "HelperBuildError", "build", "compiler"]

SOURCE = Path(__file__).resolve().with_name("helper") / "sluice_exec.c"
BINARY = SOURCE.with_name("sluice-exec")
"""Where ``agents.node.supervise`` looks for it (next to its own file; gitignored)."""
_LINKS: tuple[tuple[str, list[str]], ...] = (
    # no C library at all (x86_64): raw system calls, nothing runs before the helper's code
    ("static, no libc", ["-DSLUICE_NOLIBC", "-static", "-nostdlib", "-ffreestanding",
                         "-fno-stack-protector", "-fno-pie", "-no-pie"]),
    ("static", ["-static"]),  # glibc's libc.a (libc6-dev)
    ("dynamic", []),
)


def build(target: Path = BINARY, cc: str | None = None, libc: bool = False) -> str:
    """Compile the helper into ``target`` (atomically, mode 0755); returns how it is linked
    (``static, no libc``, ``static`` or ``dynamic``). Raises HelperBuildError when no link
    works. ``libc``: link glibc even where the libc-free build works (to test that one)."""
    return compile_program(SOURCE, target, _LINKS[1:] if libc else _LINKS, cc)


def main() -> int:
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else BINARY
    if compiler() is None:
        print(f"no C compiler: {target} not built; run commands start through Python",
              file=sys.stderr)
        return 0
    try:
        how = build(target)
    except HelperBuildError as exc:
        print(f"the exec helper did not build:\n{exc}", file=sys.stderr)
        return 1
    print(f"built {target} ({how})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
