"""sbatch's ``--spread-job`` and ``-s/--oversubscribe`` are flags and ``-Q/--quiet`` drops the
``Submitted batch job N`` line: ``sbatch --spread-job job.sh`` took the script's name for the
option's value (exit 1: no script), ``-s`` and ``-Q`` were unknown options (found 2026-12-07)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from cli import submit
from cli.run_alloc import _submit_parser
from cli.submit import build_spec, with_script


@pytest.mark.parametrize("flag", ["--spread-job", "-s", "--oversubscribe", "-Q", "--quiet"])
def test_a_flag_before_the_script_leaves_the_script_its_name(flag: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\n#SBATCH {flag}\n#SBATCH -J kept\ntrue\n")
    monkeypatch.chdir(tmp_path)
    spec = build_spec(with_script(_submit_parser("sbatch").parse_args([flag, str(script)])))
    assert spec["name"] == "kept" and spec["script"].startswith("#!/bin/bash")


def test_quiet_is_taken_and_parsable_still_prints_the_id() -> None:
    """(The Submitted line is printed only without -Q, or with --parsable: seen live, sbatch -Q
    printed nothing, sbatch -Q --parsable the id.)"""
    decision = SimpleNamespace(accepted=True, job_id=42, job_sluid="s1")
    args = _submit_parser("sbatch").parse_args(["-Q", "--wrap", "true"])
    assert args.quiet and not args.parsable
    args = _submit_parser("sbatch").parse_args(["-Q", "--parsable", "--wrap", "true"])
    assert submit.submitted_line(args, decision) == "42"  # type: ignore[arg-type]
