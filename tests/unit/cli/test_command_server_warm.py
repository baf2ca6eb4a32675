"""What the command server does once before it forks (``cli.command_server._preload``): the
first-use work of a hot call, so that no child repeats it, and nothing kept that a call would
otherwise have found out for itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agents.auth import sodium
from cli.front_build import LINKS, build
from cli.main import prebuild, prewarm
from schemas import writer

ROOT = Path(__file__).resolve().parents[3]

_CHILD = r"""
import json, os, sys
sys.argv = ["x"]
from cli import command_server
command_server._preload()
loaded = set(sys.modules)
maps = open("/proc/self/maps").read()
reader, writer = os.pipe()
pid = os.fork()
if pid == 0:
    from agents.auth import munge, sodium
    from agents.auth.headers import sha256_hex
    from cli import main
    from schemas.writer import encode
    main._PREBUILT["submit"].parse_known_args(["submit", "-H", "--", "true"])
    sodium.available(); munge.available(); sha256_hex(b"x")
    new = sorted(set(sys.modules) - loaded)
    libs = [n for n in ("libsodium", "libmunge") if n in open("/proc/self/maps").read()]
    os.write(writer, json.dumps({"new": new, "libs": libs}).encode())
    os._exit(0)
os.close(writer)
os.waitpid(pid, 0)
print(os.read(reader, 65536).decode())
print(json.dumps([n for n in ("libsodium", "libmunge") if n in maps]))
"""


def test_a_forked_call_imports_and_loads_nothing_the_server_did_not() -> None:
    """A child's parse, digest and libraries were the server's already: the call imports no
    module (``_sha256`` was one, every call) and the two libraries were mapped before the
    fork (each child ran ``dlopen`` again)."""
    done = subprocess.run([sys.executable, "-c", _CHILD], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    child_line, server_line = done.stdout.strip().splitlines()[-2:]
    child = json.loads(child_line)
    assert child["new"] == []
    assert json.loads(server_line) == child["libs"]  # mapped in the server, before the fork
    if sodium.available():
        assert "libsodium" in child["libs"]


def test_a_libsodium_that_fails_to_load_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's preload does not keep a failure: a child (or a later call) tries again and
    says why, as a fresh process would."""
    if not sodium.available():
        pytest.skip("no libsodium here")
    monkeypatch.setattr(sodium, "_lib", None)
    monkeypatch.setattr(sodium, "_SONAMES", ("libsodium-not-here.so.0",))
    sodium.preload()  # fails, quietly
    monkeypatch.setattr(sodium, "_SONAMES", sodium._SONAMES)  # restored by undo, below
    monkeypatch.undo()
    monkeypatch.setattr(sodium, "_lib", None)
    assert sodium.available()  # found once it is there: nothing of the failure was kept


def test_prewarm_passes_over_calls_that_do_not_parse(capsys: pytest.CaptureFixture[str]) -> None:
    prebuild(["submit"])
    prewarm([("submit", "-N", "many"), (), ("no-such-command",), ("submit", "--", "true")])
    assert "many" in capsys.readouterr().err  # argparse said so, and nothing was raised


def test_prepared_writers_encode_as_before() -> None:
    record = {"job_sluid": "s00000000000001", "spec": {}, "nonce": 1}
    with pytest.raises(ValueError, match="CancelJob") as before:
        writer.encode("CancelJob", record)
    writer.prepare(["CancelJob", "SubmitJob"])
    with pytest.raises(ValueError, match="CancelJob") as after:
        writer.encode("CancelJob", record)
    assert str(before.value) == str(after.value)


def test_the_front_builds_with_the_first_link_that_works(tmp_path: Path) -> None:
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    how = build(tmp_path / "sluice")
    assert how in {name for name, _ in LINKS}
    kind = subprocess.run(["file", str(tmp_path / "sluice")], capture_output=True, text=True,
                          check=False).stdout if shutil.which("file") else ""
    if how == "static-pie" and kind:
        assert "static-pie" in kind
