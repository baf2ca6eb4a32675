"""Whose job a namespace's pods become when its Namespace names no user (agents/bridge/owner.py).

Before (review, 7 Dec 2026) they were the bridge's own user's jobs: with a root bridge, any
tenant who could create pods in any namespace had root's standing in Sluice. Now such pods are
refused ``NoSluiceUser`` (a condition and a Warning Event), unless the bridge has an explicit
``--default-user``, which may never be root, the service user or the bridge's own user.
tests/kubernetes/test_bridge_tenants.py runs it against a real API server."""

from __future__ import annotations

import os
import pwd
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agents.auth import jwt_token
from agents.bridge import gangs as gangs_module
from agents.bridge.daemon import Bridge as RealBridge
from agents.bridge.gang import GangError
from agents.bridge.gangs import GangTable
from agents.bridge.owner import (
    NO_SLUICE_USER,
    DefaultUserError,
    check_default_user,
    owner,
    privileged_users,
)
from cli.main import main
from tests.unit.bridge.test_gangs_gone import JOB_UID, Bridge, Jobs


def _settings(home: Path, jwt: str = "", jwt_key: str = "") -> Any:
    return SimpleNamespace(home=home, jwt=jwt, jwt_key=jwt_key)


def test_the_namespaces_user_else_the_default_else_nobody() -> None:
    assert owner("ml", "alice", "bob") == "alice"
    assert owner("ml", "", "bob") == "bob"
    with pytest.raises(GangError) as err:
        owner("ml", "", "")
    assert err.value.reason == NO_SLUICE_USER
    assert "kubectl annotate namespace ml sluice.dev/user=" in err.value.detail


def test_root_the_bridges_own_user_and_the_service_user_are_privileged(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    # the service user (SLUICE_HOME's owner): a user every host has (a test that named alice
    # passed only after another test had created her)
    service = pwd.getpwnam("nobody")
    os.chown(home, service.pw_uid, -1)
    token = jwt_token.issue(b"k" * 32, "sluice-bridge", 60, 0)
    users = privileged_users(_settings(home, jwt=token))
    assert {"root", pwd.getpwuid(os.getuid()).pw_name, "sluice-bridge",
            service.pw_name} <= users.keys()
    assert "service user" in users[service.pw_name] and "own" in users["sluice-bridge"]


@pytest.mark.parametrize("user", ["root", "alice", "sluice-bridge"])
def test_a_privileged_default_user_is_refused(user: str) -> None:
    privileged = {"root": "root", "alice": "the service user", "sluice-bridge": "its own"}
    with pytest.raises(DefaultUserError) as err:
        check_default_user(user, privileged)
    assert user in str(err.value) and "NoSluiceUser" in str(err.value)


def test_an_ordinary_default_user_is_taken_and_no_name_is_refused() -> None:
    assert check_default_user("bob", {"root": "root"}) == "bob"
    for bad in ("", "al ice", "../root", "-rf", "0", "1001"):
        with pytest.raises(DefaultUserError):
            check_default_user(bad, {"root": "root"})


def test_the_bridge_will_not_start_with_root_as_the_default(tmp_path: Path) -> None:
    with pytest.raises(DefaultUserError):  # before it connects to anything
        RealBridge(_settings(tmp_path), None, tmp_path, default_user="root")  # type: ignore[arg-type]


def test_the_cli_refuses_root_as_the_default_without_a_traceback(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bridge", "--default-user", "root"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sluice bridge: --default-user root is root") and "Traceback" not in err


class Namespaces(Jobs):
    """The API as the gangs ask it: a Job of one pod, namespaces' users, pods' conditions."""

    def __init__(self) -> None:
        super().__init__()
        self.jobs[("ml", "train")] = {"metadata": {"uid": JOB_UID},
                                      "spec": {"parallelism": 1, "completions": 1}}
        self.users: dict[str, str] = {}
        self.said: list[tuple[str, str]] = []

    def namespace_user(self, namespace: str) -> str:
        return self.users.get(namespace, "")

    def unschedulable(self, namespace: str, name: str, reason: str, message: str,
                      uid: str = "") -> None:
        self.said.append((name, reason))


def _gangs(tmp_path: Path, default_user: str = "") -> tuple[GangTable, Bridge, list[str]]:
    bridge = Bridge(tmp_path)
    bridge.kube = Namespaces()
    submitted: list[str] = []
    bridge.submit = lambda sluid, spec, nonce: submitted.append(spec["user"])  # type: ignore[attr-defined]
    bridge.sluids = SimpleNamespace(new=lambda: "s00000000000J3")  # type: ignore[attr-defined]
    bridge.claims = SimpleNamespace(gpu_demand=lambda pod: 0)  # type: ignore[attr-defined]
    return GangTable(bridge, default_user), bridge, submitted  # type: ignore[arg-type]


def _waiting_pod() -> dict[str, Any]:
    return {"metadata": {"uid": "p1", "name": "train-0", "namespace": "ml", "ownerReferences": [
        {"kind": "Job", "uid": JOB_UID, "name": "train", "controller": True}]},
            "spec": {"schedulerName": "sluice", "containers": [
                {"name": "main", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": "Pending"}}


def test_an_unmapped_namespaces_pods_are_refused_until_it_names_a_user(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gangs, bridge, submitted = _gangs(tmp_path)
    now = [1000.0]
    monkeypatch.setattr(gangs_module.time, "monotonic", lambda: now[0])
    gangs.on_pod("ADDED", _waiting_pod())
    assert submitted == [] and bridge.kube.said == [("train-0", NO_SLUICE_USER)]
    assert JOB_UID not in bridge.state.gangs
    for _ in range(2):  # checked again with the waiting gangs: said once, not submitted
        now[0] += gangs_module.CHECK_EVERY_S + 1
        gangs.check_waiting()
    assert submitted == [] and len(bridge.kube.said) == 1
    bridge.kube.users["ml"] = "alice"  # the namespace's administrator names its user
    now[0] += gangs_module.CHECK_EVERY_S + 1
    gangs.check_waiting()
    assert submitted == ["alice"] and bridge.state.gangs[JOB_UID] == "s00000000000J3"


def test_with_a_default_user_an_unmapped_namespaces_pods_are_its_jobs(tmp_path: Path) -> None:
    gangs, bridge, submitted = _gangs(tmp_path, default_user="bob")
    gangs.on_pod("ADDED", _waiting_pod())
    assert submitted == ["bob"] and bridge.kube.said == []
