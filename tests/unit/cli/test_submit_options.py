"""sbatch's GPU forms, ``--open-mode`` and the options Sluice accepts without acting on them
(``cli/submit_options.py``). Before, ``--gres=gpu``, ``--gpus=a100:2``, ``--gpus-per-task``,
``--open-mode``, ``--hint``, ``--distribution``... were refused (exit 2), so a batch script
written for Slurm carrying one of them in an ``#SBATCH`` line was not submitted at all, and
``--gres=gpu:2,license:1`` was read as 1 GPU of type ``2,license`` (found 2026-12-07)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cli.run_alloc import _submit_parser
from cli.submit import build_spec, with_script


def _spec(*argv: str) -> dict[str, Any]:
    return build_spec(with_script(_submit_parser("sbatch").parse_args(
        [*argv, "--wrap", "true"])))


@pytest.mark.parametrize(("argv", "asked"), [
    (["--gres=gpu"], (1, "", 0)),
    (["--gres=gpu:2"], (2, "", 0)),
    (["--gres=gpu:a100"], (1, "a100", 0)),
    (["--gres=gpu:a100:4"], (4, "a100", 0)),
    (["--gres=none"], (0, "", 0)),
    (["--gpus=a100:2"], (0, "a100", 2)),
    (["-G", "3"], (0, "", 3)),
    (["--gpus-per-node=a100:1"], (1, "a100", 0)),
    (["-n", "4", "--gpus-per-task=1"], (0, "", 4)),
    (["--ntasks-per-node=2", "-N", "2", "--gpus-per-task=h100:2"], (0, "h100", 8)),
])
def test_every_form_of_a_gpu_request(argv: list[str], asked: tuple[int, str, int]) -> None:
    spec = _spec(*argv)
    assert (spec["gpus_per_node"], spec["gpu_type"], spec["gpus"]) == asked


@pytest.mark.parametrize(("argv", "words"), [
    (["--gres=gpu:2,license:1"], "'license' is not one"),
    (["--gres=mps:10"], "gpu alone"),
    (["--gres=gpu:a:b"], "whole number"),
    (["--gpus=a100:x"], "whole number"),
    (["--gpus=a100:1", "--gres=gpu:h100:1"], "two types"),
])
def test_what_sluice_cannot_schedule_is_refused_by_name(argv: list[str], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        _spec(*argv)


def test_open_mode_travels_as_slurms_variable_and_an_inherited_one_is_dropped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert _spec("--open-mode=append")["env"]["SLURM_OPEN_MODE"] == "a"
    assert _spec("--open-mode", "Truncate")["env"]["SLURM_OPEN_MODE"] == "t"
    monkeypatch.setenv("SLURM_OPEN_MODE", "a")  # sbatch inside a job that appended
    assert "SLURM_OPEN_MODE" not in _spec()["env"]
    with pytest.raises(SystemExit):
        _spec("--open-mode=sometimes")


def test_a_script_with_options_sluice_ignores_is_submitted(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH --hint=nomultithread\n#SBATCH --distribution=block\n"
                      "#SBATCH -m cyclic\n#SBATCH --ntasks-per-core=1\n#SBATCH --get-user-env\n"
                      "#SBATCH --kill-on-invalid-dep=yes\n#SBATCH --propagate=STACK\n"
                      "#SBATCH -k\n#SBATCH --wckey=x\n#SBATCH --time-min=10\n"
                      "#SBATCH --threads-per-core=1\n#SBATCH -J kept\nsrun hostname\n")
    monkeypatch.chdir(tmp_path)
    spec = build_spec(with_script(_submit_parser("sbatch").parse_args([str(script)])))
    assert spec["name"] == "kept" and spec["script"].startswith("#!/bin/bash")
