"""``sluice submit`` run as the program ends without the interpreter's teardown (issue 17),
its output flushed; called in process (tests, scripts) it returns as any command does."""

from __future__ import annotations

import subprocess
import sys

from cli.main import main

_PROGRAM = ("import atexit, sys\natexit.register(print, 'teardown ran')\n"
            "sys.argv = ['sluice', *sys.argv[1:]]\nfrom cli.main import main\n"
            "print('before', flush=False)\nsys.exit(main())\n")


def run_program(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _PROGRAM, *args], capture_output=True,
                          text=True, check=False)


def test_a_submit_exits_at_once_with_its_status_and_its_output_flushed() -> None:
    done = run_program("submit", "--export", "ALL,NONE", "--", "true")
    assert done.returncode == 2
    assert "ALL and NONE together" in done.stderr
    assert done.stdout == "before\n"  # buffered output is flushed, the exit handler skipped


def test_other_commands_and_argparse_s_exits_tear_down_as_usual() -> None:
    assert "teardown ran" in run_program("sluid", "--help").stdout
    done = run_program("submit", "--nice", "x", "--", "true")  # argparse's own exit
    assert done.returncode == 2 and "teardown ran" in done.stdout


def test_in_process_a_submit_returns_its_status() -> None:
    assert main(["submit", "--export", "ALL,NONE", "--", "true"]) == 2


def test_in_process_a_submit_leaves_the_garbage_collector_on() -> None:
    import gc

    assert main(["submit", "--export", "ALL,NONE", "--", "true"]) == 2
    assert gc.isenabled()


def test_run_as_the_program_a_submit_runs_without_the_collector_until_it_waits() -> None:
    probe = ("import gc, sys\nsys.argv = ['sluice', *sys.argv[1:]]\nimport cli.submit\n"
             "cli.submit.with_script = lambda args: print('collector', gc.isenabled(),"
             " flush=True) or sys.exit(0)\nfrom cli.main import main\nmain()\n")
    quick = subprocess.run([sys.executable, "-c", probe, "submit", "--", "true"],
                           capture_output=True, text=True, check=False)
    waits = subprocess.run([sys.executable, "-c", probe, "submit", "-W", "--", "true"],
                           capture_output=True, text=True, check=False)
    assert quick.stdout.split() == ["collector", "False"]
    assert waits.stdout.split() == ["collector", "True"]
