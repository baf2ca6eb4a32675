"""clients/kcat/submit.sh writes the message and workdir it is given as JSON strings: a message
with a quote was not JSON (``sluice encode: ... not JSON: Expecting ',' delimiter``), and one
with ``", "`` could add fields of its choosing. No broker: a stand-in ``kcat`` keeps the bytes,
the real ``sluice encode`` made them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from schemas import decode

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "clients" / "kcat" / "submit.sh"


def test_the_message_and_workdir_reach_the_record_as_given(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kcat").write_text('#!/bin/sh\nfor a; do last=$a; done\ncp "$last" "$KCAT_OUT"\n')
    (bin_dir / "sluice").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m cli.main "$@"\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    message = 'say "hi", \\ then\ta tab\nand a line'
    workdir = '/tmp/a "quoted" dir'
    done = subprocess.run(
        ["sh", str(SCRIPT), workdir, message], capture_output=True, text=True, timeout=60,
        check=False, cwd=ROOT,
        env={**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": str(ROOT),
             "KCAT_OUT": str(tmp_path / "job.avro"), "SLUICE_JWT": ""})
    assert done.returncode == 0, done.stderr
    name, record = decode((tmp_path / "job.avro").read_bytes())
    assert name == "SubmitJob"
    assert record["spec"]["command"] == ["echo", message]
    assert record["spec"]["workdir"] == workdir
    assert record["spec"]["user"] == "" and record["spec"]["name"] == "kcat"
