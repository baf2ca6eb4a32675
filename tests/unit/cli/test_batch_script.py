"""Batch scripts as sbatch reads them (issue 15, item 1): the script found by path, its
``#SBATCH`` lines parsed by the submit parser before the command line, ``--wrap``, the stored
copy, and one-line errors."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from cli.batch_script import directives
from cli.export import submitter_umask
from cli.main import _parser, main
from cli.submit import build_spec, with_script
from schemas.ranges import MAX_SCRIPT_CHARS

SCRIPT = """#!/bin/bash
# a comment
#SBATCH -N 2
#SBATCH -J name   # trailing comment
#SBATCH -o out-%j.txt
#SBATCH --export 'GREETING=hello world'

#SBATCH -t 10
srun sh -c 'echo $SLURMD_NODENAME'
#SBATCH -N 7
"""


def _args(argv: list[str]) -> argparse.Namespace:
    args = _parser().parse_args(argv)
    args.argv = argv
    return with_script(args)


def test_directives_stop_at_the_first_command_and_keep_shell_quoting() -> None:
    words = directives(SCRIPT, "job.sh")
    assert words == ("-N", "2", "-J", "name", "-o", "out-%j.txt", "--export",
                     "GREETING=hello world", "-t", "10")


def test_a_relative_script_name_is_found_read_and_stored(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "job.sh").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    spec = build_spec(_args(["submit", "job.sh", "a1", "a2"]))
    assert spec["script"] == SCRIPT
    assert spec["command"] == [str(tmp_path / "job.sh"), "a1", "a2"]
    assert (spec["nodes_min"], spec["name"], spec["output"]) == (2, "name", "out-%j.txt")
    assert spec["time_limit_s"] == 600
    assert spec["env"] == {"GREETING": "hello world", "SLURM_UMASK": submitter_umask(),
                           "SLURM_SUBMIT_DIR": str(tmp_path.resolve())}
    assert spec["submit_host"]


def test_command_line_options_win_over_sbatch_lines(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "job.sh").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    spec = build_spec(_args(["submit", "-N", "1", "-J", "cli", "job.sh"]))
    assert (spec["nodes_min"], spec["name"], spec["output"]) == (1, "cli", "out-%j.txt")


def test_the_job_is_named_after_the_script_without_a_name(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "train.sh").write_text("#!/bin/sh\necho hi\n")
    monkeypatch.chdir(tmp_path)
    spec = build_spec(_args(["submit", "./train.sh"]))
    assert spec["name"] == "train.sh" and spec["script"] == "#!/bin/sh\necho hi\n"


def test_wrap_makes_a_sh_script() -> None:
    spec = build_spec(_args(["submit", "-N", "1", "--wrap", "echo $HOSTNAME; hostname"]))
    assert spec["script"].startswith("#!/bin/sh\n")
    assert "echo $HOSTNAME; hostname\n" in spec["script"]
    assert spec["command"] == [] and spec["name"] == "wrap"


def test_a_program_that_is_no_script_stays_a_command() -> None:
    spec = build_spec(_args(["submit", "--", "/bin/sleep", "1"]))
    assert spec["script"] == "" and spec["command"] == ["/bin/sleep", "1"]


@pytest.mark.parametrize(
    ("text", "words", "status", "says"),
    [
        ("#!/bin/sh\n#SBATCH --no-such-option\ntrue\n", [], 2, "--no-such-option"),
        ("#!/bin/sh\n#SBATCH -N 'unclosed\ntrue\n", [], 1, "No closing quotation"),
        ("#!/bin/sh\n#SBATCH -J x stray\ntrue\n", [], 2, "unexpected argument 'stray'"),
        ("#!/bin/sh\n" + "#" * (MAX_SCRIPT_CHARS + 1) + "\n", [], 1, "max_script_size"),
        ("#!/bin/sh\ntrue\n", ["--wrap", "true"], 2, "--wrap and a script"),
    ],
)
def test_bad_scripts_are_refused_in_one_line_before_anything_is_sent(
    text: str, words: list[str], status: int, says: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP", "127.0.0.1:1")  # nothing may be sent anywhere
    monkeypatch.setenv("SLUICE_API", "http://127.0.0.1:1")
    (tmp_path / "bad.sh").write_text(text)
    monkeypatch.chdir(tmp_path)
    assert main(["submit", *words, "bad.sh"]) == status
    err = capsys.readouterr().err
    assert err.startswith("sluice submit: ") and says in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_wrapped_job_is_admissible_without_a_command_a_bare_one_is_not() -> None:
    from scheduler.config.cluster import DEFAULT_CONFIG
    from scheduler.jobs.admission import check_submission
    from scheduler.records import from_record

    spec = build_spec(_args(["submit", "--wrap", "hostname"]))
    assert spec["command"] == []
    wrapped = from_record("JobSpec", spec)
    bare = from_record("JobSpec", {**spec, "script": ""})
    problems = [check_submission(s, DEFAULT_CONFIG, []) for s in (wrapped, bare)]
    assert [p[0].name if p else "" for p in problems] == ["", "EmptyCommand"]


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda d: None, "Unable to open file job.sh"),
        (lambda d: (d / "job.sh").mkdir(), "Unable to open file job.sh"),
        (lambda d: (d / "job.sh").write_text(""), "Batch script is empty!"),
        (lambda d: (d / "job.sh").write_text("echo no interpreter line\n"),
         "does not look like a batch script"),
        (lambda d: (d / "job.sh").write_bytes(b"\x7fELF\x02\x01\x01\0"),
         "does not look like a batch script"),
        (lambda d: (d / "job.sh").write_bytes(b"#!/bin/sh\n\xff\xfe\0"), "not UTF-8 text"),
    ],
)
def test_sbatch_refuses_what_is_no_batch_script_before_anything_is_sent(
    make: object, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``sbatch missing.sh`` (a typo) must not queue a job that fails at launch with 127, as
    ``sluice submit missing.sh`` would (it runs a name that is no script as a command)."""
    monkeypatch.setenv("KAFKA_BOOTSTRAP", "127.0.0.1:1")  # nothing may be sent anywhere
    monkeypatch.setenv("SLUICE_API", "http://127.0.0.1:1")
    assert callable(make)
    make(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["submit", "--sbatch", "job.sh", "arg"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("sbatch: ") and says in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_sbatch_takes_a_script_and_its_arguments_as_sluice_submit_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "job.sh").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    spec = build_spec(_args(["submit", "--sbatch", "job.sh", "a1"]))
    assert spec["script"] == SCRIPT and spec["command"] == [str(tmp_path / "job.sh"), "a1"]
    assert spec["nodes_min"] == 2
    wrapped = build_spec(_args(["submit", "--sbatch", "--wrap", "echo hi"]))
    assert "echo hi" in wrapped["script"]


def test_sbatch_writes_to_slurm_s_default_file_when_no_output_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "job.sh").write_text("#!/bin/sh\ntrue\n")
    monkeypatch.chdir(tmp_path)
    assert build_spec(_args(["submit", "--sbatch", "job.sh"]))["output"] == "slurm-%j.out"
    assert build_spec(_args(["submit", "--sbatch", "--array=1-3", "job.sh"]))["output"] == (
        "slurm-%A_%a.out")
    assert build_spec(_args(["submit", "--sbatch", "--wrap", "true"]))["output"] == "slurm-%j.out"
    assert build_spec(_args(["submit", "--sbatch", "-o", "x-%j", "job.sh"]))["output"] == "x-%j"
    assert build_spec(_args(["submit", "job.sh"]))["output"] == ""  # the node's sluice-%j.out
    assert build_spec(_args(["submit", "--sbatch", "job.sh"]))["error"] == ""  # stderr with it


@pytest.mark.parametrize(("value", "exclusive", "topo"), [
    (None, False, False), ("", True, False), ("=node", True, False), ("=user", True, False),
    ("=mcs", True, False), ("=topo", False, True),
])
def test_exclusive_takes_slurm_s_values_and_never_shares_less(
        value: str | None, exclusive: bool, topo: bool) -> None:
    words = [] if value is None else [f"--exclusive{value}"]
    spec = build_spec(_args(["submit", *words, "--wrap", "true"]))
    assert (spec["exclusive"], spec["exclusive_topo"]) == (exclusive, topo)


def test_an_unknown_exclusive_value_is_refused_not_ignored(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        _args(["submit", "--exclusive=bogus", "--wrap", "true"])
    assert stopped.value.code == 2 and "invalid choice: 'bogus'" in capsys.readouterr().err
