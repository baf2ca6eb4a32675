"""srun's ``io_token`` and environment travel sealed to the nodes' key (red team, 8 Dec 2026).

On ``sluice up``'s users' listener every local user reads the ledger, and ``StepStarted`` (and
``StepPending``) carried srun's token in the clear: bob, following the ledger, connected to
alice's srun with it before her node did (2 runs in 3), and srun printed bob's lines as her
task's output, took his exit code, dropped her node's connection and wrote her stdin to him.
srun now sends the token sealed (``agents.auth.io_token``) when the nodes' key is configured;
the node opens it; a token sealed for another step or with another key does not open. Its
exported environment (the user's shell's, ``AWS_SECRET_ACCESS_KEY`` too, read by bob in
``StepStarted``) is sealed the same way into ``SLUICE_SEALED_STEP_ENV``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents.auth.io_token import (
    SEALED_ENV,
    SEALED_PREFIX,
    open_io_token,
    open_step_env,
    seal_io_token,
    seal_step_env,
)
from agents.auth.node_keys import ensure_keys
from cli.run_step import _send_start
from streams.settings import Settings

STEP = "s009M99G6SXK34"
JOB = "sJOB"  # as tests.unit.node.test_step_input._step names it
TOKEN = "42b21606a3698f84f55087b63b865bf6"


class _Client:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.sent: list[tuple[str, str, dict[str, Any]]] = []

    def denials(self, job_sluid: str) -> list[dict[str, Any]]:
        return []

    def send(self, key: str, name: str, record: dict[str, Any]) -> None:
        self.sent.append((key, name, record))


def _keys(tmp_path: Path) -> Settings:
    settings = Settings(home=tmp_path, cluster="c1")
    ensure_keys(settings)
    return settings


def test_srun_sends_its_token_sealed_and_the_node_opens_it(tmp_path: Path) -> None:
    settings = _keys(tmp_path)
    client = _Client(settings)
    env = {"AWS_SECRET_ACCESS_KEY": "alice-aws-secret-123", "HOME": "/home/alice"}
    _send_start(client, JOB, {"step_sluid": STEP, "io_token": TOKEN,  # type: ignore[arg-type]
                                 "io_address": "vm:4000", "env": env})
    [(key, name, record)] = client.sent
    assert (key, name) == (JOB, "StartStep")
    assert TOKEN not in repr(record) and "alice-aws-secret" not in repr(record)  # the ledger's
    assert record["io_token"].startswith(SEALED_PREFIX)
    assert list(record["env"]) == [SEALED_ENV]
    launch = {"job_sluid": JOB, "step_sluid": STEP, "io_token": record["io_token"],
              "env": record["env"]}
    assert open_io_token(settings, launch) == TOKEN
    assert open_step_env(settings, launch) == env


def test_a_sealed_box_opens_only_for_its_job_and_step_and_with_the_nodes_key(
        tmp_path: Path) -> None:
    settings = _keys(tmp_path / "a")
    sealed = seal_io_token(settings, TOKEN, JOB, STEP)
    env = seal_step_env(settings, {"SECRET": "alice's"}, JOB, STEP)
    assert open_io_token(settings, {"job_sluid": JOB, "step_sluid": STEP, "io_token": sealed})
    other = _keys(tmp_path / "b")  # another cluster's nodes
    for keys, job, step in ((settings, JOB, "s009M99G6SXK35"),  # another step
                            (settings, "sBOBSJOB", STEP),  # her box, her step SLUID, his job
                            (other, JOB, STEP)):
        launch = {"job_sluid": job, "step_sluid": step, "io_token": sealed, "env": env}
        with pytest.raises(ValueError, match="io_token does not open"):
            open_io_token(keys, launch)
        with pytest.raises(ValueError, match="sealed environment does not open"):
            open_step_env(keys, launch)


def test_without_the_nodes_key_the_token_goes_as_it_is(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, cluster="c1")  # no key configured (a bare dev system)
    assert seal_io_token(settings, TOKEN, JOB, STEP) == TOKEN
    assert open_io_token(settings, {"step_sluid": STEP, "io_token": TOKEN}) == TOKEN
    assert open_io_token(settings, {"step_sluid": STEP}) == ""
    assert seal_step_env(settings, {"A": "1"}, JOB, STEP) == {"A": "1"}
    assert open_step_env(settings, {"step_sluid": STEP, "env": {"A": "1"}}) == {"A": "1"}
    assert seal_step_env(_keys(tmp_path / "k"), {}, JOB, STEP) == {}  # --export=NONE: nothing


def test_the_node_opens_token_and_environment_and_refuses_a_token_that_does_not_open(
        tmp_path: Path) -> None:
    """A real node step table and srun socket: the sealed token gets the task's output to
    srun, the task sees srun's sealed variable; a token sealed for another step refuses the
    step (never connects)."""
    from functools import partial

    from agents.node.step_io import StepServer
    from agents.node.steps import StepTable
    from tests.unit.node.test_step_input import _allocation, _collect, _finish, _step

    settings = _keys(tmp_path / "home")
    table, plain_steps, reports = _allocation(tmp_path)
    steps = StepTable("n01", tmp_path, table, plain_steps._report, 1.0,
                      open_token=partial(open_io_token, settings),
                      open_env=partial(open_step_env, settings))
    server = StepServer(TOKEN, STEP, "127.0.0.1")
    try:
        command = _step(server, ["sh", "-c", "echo ran $ALICE_VAR"], 1, "none")
        command["io_token"] = seal_io_token(settings, TOKEN, JOB, STEP)
        command["env"] = seal_step_env(settings, {"ALICE_VAR": "opened"}, JOB, STEP)
        steps.launch(command)
        out, exits = _collect(steps, server, 1)
        assert exits == {0: 0} and out[0].strip() == b"ran opened"
        stray = _step(server, ["true"], 1, "none") | {"step_sluid": "s009M99G6SXK35"}
        stray["io_token"] = seal_io_token(settings, TOKEN, JOB, STEP)  # copied from another step
        steps.launch(stray)
        refused = [f for name, f in reports if name == "ReportStepExit"
                   and f["step_sluid"] == "s009M99G6SXK35"]
        assert refused and "does not open" in refused[0]["detail"]
    finally:
        server.close()
        _finish(tmp_path, table, reports)
