"""Batch scripts travel sealed to the nodes' key (red team, 8 Dec 2026: every local user read
every job's script on the ledger, which Slurm shows no other user).

The client seals ``JobSpec.script`` (``cli.export.seal_spec_env``) when the nodes' key is
configured; the node opens it to run it, bound to the job's user; the views open it for the
viewers allowed to read it and say so when they cannot."""

from __future__ import annotations

import base64
import random
import zlib
from pathlib import Path

import pytest

from agents.auth.daemon_keys import load_env_private_key
from agents.auth.node_keys import ensure_keys
from agents.auth.public_keys import env_public_raw
from agents.auth.sealed_env import seal_env
from agents.auth.sealed_script import (
    PREFIX,
    SealedScriptError,
    is_sealed,
    open_script,
    seal_script,
)
from agents.node.job_env import ScriptRefusedError, open_job_script
from cli.export import seal_spec_env
from projections.sealed_scripts import opened_script
from schemas.ranges import MAX_SCRIPT_CHARS, spec_range_problem
from streams.settings import Settings
from tests.unit.core.gwt import spec

SCRIPT = "#!/bin/sh\n#SBATCH -J secret\nexport TOKEN=hunter2\necho ran\n"


def _keys(tmp_path: Path) -> Settings:
    settings = Settings(home=tmp_path, cluster="c1")
    ensure_keys(settings)
    return settings


def test_the_client_seals_the_script_and_only_the_nodes_key_opens_it(tmp_path: Path) -> None:
    settings = _keys(tmp_path)
    spec = seal_spec_env({"user": "alice", "env": {}, "script": SCRIPT, "command": ["x"]},
                         settings)
    assert is_sealed(spec["script"]) and "hunter2" not in spec["script"]
    assert open_job_script(settings, {"script": spec["script"], "user": "alice"}) == SCRIPT
    with pytest.raises(ScriptRefusedError):  # copied into bob's job: bound to alice
        open_job_script(settings, {"script": spec["script"], "user": "bob"})
    other = _keys(tmp_path / "other")  # another cluster's key
    with pytest.raises(ScriptRefusedError):
        open_job_script(other, {"script": spec["script"], "user": "alice"})


def test_without_a_key_the_script_travels_as_before(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, cluster="c1")  # no EnvPublicKey, no key files
    spec = seal_spec_env({"user": "alice", "env": {}, "script": SCRIPT}, settings)
    assert spec["script"] == SCRIPT
    assert open_job_script(settings, {"script": SCRIPT, "user": "alice"}) == SCRIPT


def test_a_sealed_script_of_the_largest_size_passes_the_spec_checks(tmp_path: Path) -> None:
    settings = _keys(tmp_path)
    noise = base64.b64encode(random.Random(1).randbytes(MAX_SCRIPT_CHARS))[:MAX_SCRIPT_CHARS]
    big = seal_script(noise.decode(), env_public_raw(settings), "c1", "alice")
    assert len(big) > MAX_SCRIPT_CHARS  # sealed: longer than the plain limit
    assert spec_range_problem(spec(script=big)) is None
    assert spec_range_problem(spec(script="x" * (MAX_SCRIPT_CHARS + 1))) is not None
    assert spec_range_problem(spec(script=PREFIX + "x" * (2 * MAX_SCRIPT_CHARS + 4097)))


def test_a_zlib_bomb_stops_at_the_limit(tmp_path: Path) -> None:
    settings = _keys(tmp_path)
    key = env_public_raw(settings)
    packed = base64.b64encode(zlib.compress(b"a" * (MAX_SCRIPT_CHARS * 5), 9)).decode()
    bomb = PREFIX + seal_env({"script": packed}, key, "c1", "alice")
    with pytest.raises(SealedScriptError, match="inflates past"):
        open_script(bomb, load_env_private_key(settings), "c1", "alice")


def test_the_views_open_it_for_whom_they_show_it_and_say_when_they_cannot(
        tmp_path: Path) -> None:
    settings = _keys(tmp_path)
    sealed = seal_script(SCRIPT, env_public_raw(settings), "c1", "alice")
    row = {"job_id": 7, "user": "alice", "script": sealed}
    assert opened_script(row, settings)["script"] == SCRIPT
    elsewhere = Settings(home=tmp_path / "views-without-the-key", cluster="c1")
    shown = opened_script(row, elsewhere)
    assert "script" not in shown and shown["script_sealed"] is True
    assert opened_script({"job_id": 8, "script": SCRIPT}, elsewhere)["script"] == SCRIPT
