"""``sluice submit`` run as the program ends without the interpreter's teardown (issue 17),
its output flushed; called in process (tests, scripts) it returns as any command does."""

from __future__ import annotations

import subprocess
import sys

import pytest

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
             "cli.submit.with_script = lambda args, _stdin=None: print('collector',"
             " gc.isenabled(),"
             " flush=True) or sys.exit(0)\nfrom cli.main import main\nmain()\n")
    quick = subprocess.run([sys.executable, "-c", probe, "submit", "--", "true"],
                           capture_output=True, text=True, check=False)
    waits = subprocess.run([sys.executable, "-c", probe, "submit", "-W", "--", "true"],
                           capture_output=True, text=True, check=False)
    assert quick.stdout.split() == ["collector", "False"]
    assert waits.stdout.split() == ["collector", "True"]


_ARGPARSE_PROBE = ("import argparse, gettext, sys\n{bind}"
                   "sys.argv = ['sluice', *sys.argv[1:]]\nimport cli.submit\n"
                   "cli.submit.with_script = lambda args, _stdin=None: print("
                   "argparse._ is gettext.gettext,"
                   " 'locale' in sys.modules, flush=True) or sys.exit(0)\n"
                   "from cli.main import main\nmain()\n")


def test_run_as_the_program_argparse_skips_gettext_only_when_no_catalog_can_exist(
        tmp_path: object) -> None:
    quick = subprocess.run([sys.executable, "-c", _ARGPARSE_PROBE.format(bind=""),
                            "submit", "--", "true"], capture_output=True, text=True,
                           check=False)
    bound = f"gettext.bindtextdomain('messages', {str(tmp_path)!r})\n"  # a directory that exists
    kept = subprocess.run([sys.executable, "-c", _ARGPARSE_PROBE.format(bind=bound),
                           "submit", "--", "true"], capture_output=True, text=True, check=False)
    assert quick.stdout.split() == ["False", "False"]  # no gettext, no locale
    assert kept.stdout.split() == ["True", "True"]


def test_argparse_s_messages_are_the_same_with_and_without_gettext() -> None:
    probe = ("import sys\nfrom cli import main\n"
             "if sys.argv[1] == 'gettext':\n    main._argparse_untranslated = lambda: None\n"
             "sys.argv = ['sluice', *sys.argv[2:]]\nsys.exit(main.main())\n")

    def answers(how: str, args: list[str]) -> tuple[int, str, str]:
        done = subprocess.run([sys.executable, "-c", probe, how, "submit", *args],
                              capture_output=True, text=True, check=False,
                              stdin=subprocess.DEVNULL)
        return done.returncode, done.stdout, done.stderr

    for args in (["--nice", "x", "--", "true"], ["--bogus"], ["-N"], ["-h"]):
        ours = answers("ours", args)
        assert ours[0] == 2 or args == ["-h"]
        assert ours == answers("gettext", args)


def test_an_unknown_option_is_reported_by_its_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["queue", "--bogus"])
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert "usage: sluice queue" in err
    assert "sluice queue: error: unrecognized arguments: --bogus" in err


def test_a_kafka_error_is_one_line_naming_the_brokers(capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    import confluent_kafka

    from cli import main as entry

    def unreachable(_args: object, _settings: object) -> int:
        error = confluent_kafka.KafkaError(confluent_kafka.KafkaError._TRANSPORT,
                                           "Failed to get metadata: Local: Broker transport")
        raise confluent_kafka.KafkaException(error)

    monkeypatch.setenv("KAFKA_BOOTSTRAP", "127.0.0.1:1")
    monkeypatch.setattr(entry, "_parse",
                        lambda _parser, _words: argparse.Namespace(run=unreachable))
    assert main(["queue"]) == 1
    err = capsys.readouterr().err
    assert err == ("sluice queue: Kafka at 127.0.0.1:1: Failed to get metadata: Local: "
                   "Broker transport\n"), err
