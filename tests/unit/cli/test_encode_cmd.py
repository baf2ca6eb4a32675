"""``sluice encode``: JSON in, the single-object bytes Sluice decodes out; mistakes are one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from schemas import decode, fingerprint


def _encode(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "cli.main", "encode", *argv],
                          input=stdin.encode(), capture_output=True, timeout=60, check=False)


def test_a_submission_is_encoded_with_its_header_and_defaults(tmp_path: Path) -> None:
    out = tmp_path / "request.avro"
    done = _encode("SubmitJob", "-o", str(out),
                   stdin='{"job_sluid": "s14DK8YBDF0000", "spec": {"user": "alice"}}')
    assert done.returncode == 0, done.stderr
    value = out.read_bytes()
    assert value[:2] == b"\xc3\x01" and value[2:10] == fingerprint("SubmitJob")
    name, record = decode(value)
    assert name == "SubmitJob"
    assert (record["spec"]["ntasks"], record["spec"]["cpus_per_task"]) == (1, 1)


def test_stdout_carries_the_same_bytes(tmp_path: Path) -> None:
    source = tmp_path / "cancel.json"
    source.write_text('{"job_sluid": "s14DK8YBDF0000"}')
    done = _encode("CancelJob", str(source))
    assert done.returncode == 0
    assert decode(done.stdout) == ("CancelJob", {"job_sluid": "s14DK8YBDF0000", "user": "",
                                                 "reason": "", "signal": 0,
                                                 "signal_scope": "", "step_sluid": ""})


@pytest.mark.parametrize(("argv", "stdin", "says"), [
    (("SubmitJob",), '{"job_sluid": "s1"', "not JSON"),
    (("SubmitJob",), "[1]", "expected a JSON object"),
    (("SubmitJob",), '{"job_sluid": "s1", "spec": {}}', "spec.user: required field"),
    (("Nope",), "{}", "unknown record name"),
    (("SubmitJob", "/no/such/file"), "", "No such file"),
])
def test_a_mistake_is_one_line_and_exit_1(argv: tuple[str, ...], stdin: str, says: str) -> None:
    done = _encode(*argv, "-o", "/dev/null", stdin=stdin)
    assert done.returncode == 1
    err = done.stderr.decode()
    assert says in err and err.count("\n") == 1 and "Traceback" not in err
