"""``-V``/``--version`` of every Slurm shim (and ``scontrol version``) print ``slurm X.Y.Z`` on
stdout and exit 0, as Slurm's commands do. Tools read it to tell Slurm is installed and which
release (``sbatch --version``, ``sinfo -V``, ``scontrol --version``); each was a usage error,
exit 2 (``sinfo: unrecognized option '--version'``), seen live 2026-12-08."""

from __future__ import annotations

import pytest

from cli.main import main
from cli.slurm_program import ENV, SLURM_VERSION, version_line

SHIM_WORDS = {"sbatch": ["submit", "--sbatch"], "squeue": ["queue"], "sinfo": ["nodes"],
              "sacct": ["history"], "scancel": ["cancel"], "scontrol": ["scontrol"],
              "srun": ["run"], "salloc": ["alloc"], "sprio": ["sprio"], "sshare": ["sshare"],
              "sdiag": ["sdiag"], "sacctmgr": ["sacctmgr"], "sreport": ["sreport"]}


@pytest.mark.parametrize("program", sorted(SHIM_WORDS))
@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_every_shim_says_its_version(program: str, flag: str, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(ENV, program)
    assert main([*SHIM_WORDS[program], flag]) == 0
    assert capsys.readouterr().out == f"slurm {SLURM_VERSION}\n"


def test_scontrol_version_is_the_command_too(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(ENV, "scontrol")
    assert main(["scontrol", "version"]) == 0
    assert capsys.readouterr().out == f"slurm {SLURM_VERSION}\n"


@pytest.mark.parametrize(("program", "words"), [
    ("srun", ["run", "echo", "-V"]),                  # the command's own -V
    ("sbatch", ["submit", "--sbatch", "job.sh", "--version"]),  # the script's argument
    ("squeue", ["queue", "--", "-V"]),
    ("scontrol", ["scontrol", "show", "job", "version"]),
    ("", ["queue", "-V"]),                           # sluice's own commands: no Slurm version
])
def test_a_version_word_that_is_not_the_programs_option(program: str, words: list[str]) -> None:
    assert version_line(program, words) == ""


def test_options_before_the_flag_are_passed_over() -> None:
    assert version_line("squeue", ["queue", "-h", "-o", "%i", "--version"]).startswith("slurm ")
    assert version_line("sbatch", ["submit", "--sbatch", "--parsable", "-V"]).startswith("slurm")
