"""A node whose registration was refused is asked to register again (Slurm's
REQUEST_NODE_REGISTRATION_STATUS, scheduler/nodes/registration_requests.py): real node daemons,
worker, views and broker; the daemon is never restarted."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.harness import LocalSystem, apply_config
from tests.e2e.ledger import facts

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]

ONE = "Nodes:\n  - NodeName: n01\n    CPUs: 2\n    RealMemory: 4096\n"
TWO = ONE + "  - NodeName: n02\n    CPUs: 2\n    RealMemory: 4096\n"


def _node(system: LocalSystem, name: str) -> dict[str, Any]:
    nodes = system.client.get("/v1/nodes")["nodes"]
    return next((dict(n) for n in nodes if n["name"] == name), {})


def test_a_node_the_configuration_did_not_list_comes_into_service_once_it_is_listed(
        system: LocalSystem) -> None:
    system.start("worker", "worker", "--loglevel", "info")
    system.start("projections", "projections")
    apply_config(system, ONE)
    system.start_nodes(2, cpus=2, mem=4096)
    system.wait(lambda: _node(system, "n01").get("state") == "IDLE", 90, "n01 in service")
    refused = system.wait(
        lambda: [r.record for r in facts(system.settings, "NodeStateChanged")
                 if r.record["name"] == "n02" and r.record["state"] == "INVALID_REG"],
        60, "n02's registration refused")
    assert "not in the cluster configuration" in refused[0]["reason"], refused
    assert _node(system, "n02").get("state") != "IDLE"

    apply_config(system, TWO)  # no daemon is restarted: the shard asks n02 to register again
    system.wait(lambda: _node(system, "n02").get("state") == "IDLE", 60,
                "n02 in service after the configuration listed it")
    asked = [r.record for r in facts(system.settings, "NodeRegistered")
             if r.record["name"] == "n02"]
    assert len(asked) == 1, asked
