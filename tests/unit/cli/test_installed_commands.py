"""The installed ``sluice`` command works outside the repository (every package is installed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.unit.sim.test_simulator import SWF


def test_the_installed_sluice_simulates_from_any_directory(tmp_path: Path) -> None:
    sluice = Path(sys.executable).parent / "sluice"
    assert sluice.exists(), f"{sluice}: make install puts the console script next to python"
    trace = tmp_path / "tiny.swf"
    trace.write_text(SWF)
    done = subprocess.run(
        [str(sluice), "simulate", str(trace), "--policy", "easy", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["policy"] == "easy" and result["jobs"] >= 1 and result["nodes"] == 4
