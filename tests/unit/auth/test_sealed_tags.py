"""srun leaves the job's sealed ``--export`` values out of its request (red team, 7 Dec 2026).

``srun`` sent its whole environment with its ``StartStep``, unsealed, so the values the job's
submission had sealed to the nodes' key went back in the clear onto the requests topic, the
ledger and every node's ``LaunchStep`` (bob read alice's secret in four topics, live). The node
now tags the variables that came sealed (``SLUICE_SEALED_TAGS``, a fresh key and a keyed digest
of each name and value) and srun leaves out those whose value is unchanged; each node of the
step opens them again under srun's variables."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.auth.node_keys import ensure_keys, load_env_public
from agents.auth.sealed_env import seal_env
from agents.auth.sealed_tags import TAGS_VARIABLE, tags_for, without_sealed
from agents.node.job_env import open_job_env
from cli.run_step import _exported
from streams.settings import Settings


def test_srun_sends_no_sealed_value_the_job_did_not_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(home=tmp_path, cluster="c1")
    ensure_keys(settings)
    sealed = seal_env({"SECRETX": "hunter2xyzzy", "TOKEN": "t0"},
                      load_env_public(settings).public_bytes_raw(), "c1", "nobody")
    job = open_job_env(settings, {"user": "nobody", "env": {"PLAIN": "p"},
                                  "sealed_env": sealed})
    assert job["SECRETX"] == "hunter2xyzzy" and TAGS_VARIABLE in job
    monkeypatch.setattr("os.environ", {**job, "TOKEN": "changed by the job", "OTHER": "o"})
    sent = _exported("ALL")
    assert "SECRETX" not in sent  # unchanged: each node opens it again
    assert sent["TOKEN"] == "changed by the job"  # changed: the job's own choice, sent
    assert sent["PLAIN"] == "p" and sent["OTHER"] == "o"
    assert not any(k.startswith("SLUICE_") for k in sent)
    assert "hunter2xyzzy" not in repr(sent)
    named = _exported("SECRETX,OTHER")  # srun --export=SECRETX,OTHER
    assert named == {"OTHER": "o"}


def test_tags_bind_name_value_and_key_and_a_bad_tag_variable_drops_nothing() -> None:
    tags = tags_for({"A": "1"}, key=b"k" * 16)
    assert without_sealed({"A": "1", "B": "1"}, tags) == {"B": "1"}
    assert without_sealed({"A": "2"}, tags) == {"A": "2"}
    assert without_sealed({"A": "1"}, tags_for({"A": "1"}, key=b"j" * 16)[:25] + tags[24:]) == {
        "A": "1"}
    assert without_sealed({"A": "1"}, "not base64!;A=x") == {"A": "1"}
    assert tags_for({}) == ""
