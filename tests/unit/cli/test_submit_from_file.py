"""``sluice submit --from FILE``: each line parsed as submit's own arguments, the first bad
line named before anything is sent."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import _parser
from cli.submit import build_spec, spec_problem
from cli.submit_file import LineError, read_jobs


def parsed(*argv: str) -> argparse.Namespace:
    return _parser("submit").parse_args(["submit", *argv])


def jobs(lines: list[str], *argv: str) -> list[tuple[int, dict[str, object]]]:
    args = parsed(*argv, "--from", "x")
    defaults = argparse.Namespace(**{k: v for k, v in vars(args).items()
                                     if k not in ("parser", "run")})
    defaults.source = ""
    return read_jobs(lines, args.parser, defaults, build_spec, spec_problem)


def test_each_line_is_one_job_and_command_line_options_are_its_defaults() -> None:
    found = jobs(["# a comment", "", "-N 2 -J first -- sleep 5", "hostname",
                  "-p other -- echo 'a b'"], "-p", "gpu", "-t", "10")
    assert [n for n, _s in found] == [3, 4, 5]
    first, second, third = (spec for _n, spec in found)
    assert (first["nodes_min"], first["name"], first["command"]) == (2, "first", ["sleep", "5"])
    assert (second["partition"], second["command"], second["nodes_min"]) == (
        "gpu", ["hostname"], 1)
    assert third["partition"] == "other" and third["command"] == ["echo", "a b"]
    assert {s["time_limit_s"] for _n, s in found} == {600}


@pytest.mark.parametrize(("line", "why"), [
    ("-N x -- true", "2: "), ("--bogus -- true", "2: "), ("-t 10", "2: no command"),
    ("--from other -- true", "2: --from cannot be nested"), ("-c 0 -- true", "2: "),
])
def test_the_first_bad_line_is_named(line: str, why: str) -> None:
    with pytest.raises(LineError) as caught:
        jobs(["true", line, "-N y -- true"])
    assert str(caught.value).startswith(why)


def test_a_bad_file_sends_nothing_and_exits_2_without_a_traceback(tmp_path: Path) -> None:
    source = tmp_path / "jobs"
    source.write_text("true\n-N nope -- true\n")
    done = subprocess.run([sys.executable, "-m", "cli.main", "submit", "--from", str(source)],
                          capture_output=True, text=True, check=False,
                          env={"SLUICE_API": "127.0.0.1:1", "KAFKA_BOOTSTRAP": "127.0.0.1:1",
                               "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2
    assert f"{source}:2:" in done.stderr and "nothing was submitted" in done.stderr
    assert "Traceback" not in done.stderr


def test_lines_share_no_list_and_the_parser_is_not_copied_for_each() -> None:
    """Appending options (``--export``, ``-C``…) of one line never reach the next, and the
    parser held in the namespace is the one parser, not a deep copy per line (the copy
    was 85 % of a 1,000-line file's time)."""
    from cli.submit_file import _fresh

    args = parsed("--export", "A=1", "--from", "x")
    defaults = argparse.Namespace(**{k: v for k, v in vars(args).items()
                                     if k not in ("parser", "run")})
    first, second = _fresh(defaults), _fresh(defaults)
    assert first.submit_parser is defaults.submit_parser
    assert first.export == defaults.export and first.export is not defaults.export
    first.export.append("B=2")
    assert second.export == defaults.export == ["A=1"] and first.command == []
    found = jobs(["--export A=2 -- true", "-- true"], "--export", "A=1")
    assert [spec["env"]["A"] for _n, spec in found] == ["2", "1"]
