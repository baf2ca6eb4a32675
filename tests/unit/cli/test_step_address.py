"""srun's step listener is bound to the addresses its nodes dial, not to every interface.

Before, ``StepServer`` listened on ``0.0.0.0``: anyone on any network of the srun host could
connect to a user's srun (held off only by the token and the greeting limits). Now srun
listens where the address it names in ``StartStep`` leads (``cli/step_address.py``), and a
loopback-only cluster listens on the loopback alone (found 2026-12-07)."""

from __future__ import annotations

import contextlib
import socket

import pytest

from agents.node.step_io import StepServer
from cli import step_address
from cli.step_address import io_host, listen_addresses


def _outside_address() -> str:
    """An address of this host that is not a loopback one ("" when it has none)."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("198.51.100.7", 9))  # sends nothing: the route's source address
        address = str(s.getsockname()[0])
        return "" if address.startswith("127.") else address
    return ""


def _reachable(address: str, port: int) -> bool:
    try:
        socket.create_connection((address, port), timeout=2).close()
    except OSError:
        return False
    return True


def _resolver(table: dict[str, list[str]]) -> object:
    return lambda name: table.get(name, [])


@pytest.fixture(autouse=True)
def _no_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLUICE_STEP_IO_BIND", raising=False)
    monkeypatch.delenv("SLUICE_STEP_IO_HOST", raising=False)


def test_a_step_server_is_not_reachable_from_outside_the_loopback_by_default() -> None:
    outside = _outside_address()
    if not outside:
        pytest.skip("this host has no address but the loopback")
    server = StepServer("tok", "sSTEP")
    try:
        assert _reachable("127.0.0.1", server.port)
        assert not _reachable(outside, server.port)
    finally:
        server.close()


def test_a_loopback_cluster_listens_on_the_loopback_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(step_address, "_addresses", _resolver({"vm": ["127.0.0.1"]}))
    monkeypatch.setattr(socket, "gethostname", lambda: "vm")
    assert io_host() == "vm"
    assert listen_addresses("vm", ["node01", "node02"]) == ("127.0.0.1",)
    monkeypatch.setattr(socket, "gethostname", lambda: "unresolved")
    assert io_host() == "127.0.0.1"
    assert listen_addresses("127.0.0.1", ["node01"]) == ("127.0.0.1",)


def test_a_host_with_its_own_address_listens_there_and_looks_up_no_node(
        monkeypatch: pytest.MonkeyPatch) -> None:
    looked_up: list[str] = []

    def resolve(name: str) -> list[str]:
        looked_up.append(name)
        return {"login1": ["10.0.0.5", "fd00::5"]}.get(name, [])

    monkeypatch.setattr(step_address, "_addresses", resolve)
    assert listen_addresses("login1", ["n01", "n02"]) == ("10.0.0.5", "fd00::5")
    assert looked_up == ["login1"]


def test_a_debian_loopback_name_adds_the_route_to_the_remote_nodes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``127.0.1.1 login1`` in /etc/hosts: remote nodes resolve login1 through DNS to its
    address on their network, the source of this host's route to them."""
    monkeypatch.setattr(step_address, "_addresses", _resolver(
        {"login1": ["127.0.1.1"], "n01": ["10.1.0.11"], "n02": ["10.1.0.12"], "n03": []}))
    monkeypatch.setattr(step_address, "_route_source", lambda address: "10.1.0.2")
    assert listen_addresses("login1", ["n01", "n02", "n03"]) == ("127.0.1.1", "10.1.0.2")


def test_the_bind_override_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLUICE_STEP_IO_BIND", "0.0.0.0, ::")
    assert listen_addresses("vm", ["n01"]) == ("0.0.0.0", "::")


def test_several_addresses_share_one_port_and_a_missing_one_is_skipped() -> None:
    server = StepServer("tok", "sSTEP", ("127.0.0.1", "127.0.0.2", "198.51.100.7"))
    try:
        assert _reachable("127.0.0.1", server.port) and _reachable("127.0.0.2", server.port)
    finally:
        server.close()
    with pytest.raises(OSError):
        StepServer("tok", "sSTEP", ("198.51.100.7",))
