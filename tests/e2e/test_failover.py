"""Worker failover: two workers in one group; the shard moves when its owner dies or stalls.

The standby worker has its own state directory (as a worker on another host would); when the
owner is SIGKILLed the group gives the shard-inbox partition to the survivor, which fences the
old owner's transactional id, rebuilds the shard from its store and the ledger, and goes on. A
stalled owner (SIGSTOP) resumed after the group moved on finds its transaction fenced: nothing
it writes reaches the ledger. Checked from the ledger: nothing lost, nothing twice, no node
allocated to two runs at once.
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from schemas import SluidGenerator
from tests.e2e.harness import LocalSystem
from tests.e2e.ledger import assert_exactly_once, facts, produce_raw, submit_records

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]

NODES = 3


def _owner(system: LocalSystem, workers: dict[str, Path], timeout_s: float = 120) -> str:
    """The live worker that owns the shard now."""
    found: str = system.wait(lambda: system.shard_owner(workers), timeout_s,
                             "a worker to own the shard")
    return found


def _submit(system: LocalSystem, generator: SluidGenerator, count: int) -> list[str]:
    sluids = [generator.new() for _ in range(count)]
    produce_raw(system.settings, [
        submit_records(s, exclusive=True, time_limit_s=600, command=["sleep", "0.2"])
        for s in sluids
    ])
    return sluids


def test_the_shard_moves_to_the_survivor_and_a_stalled_owner_is_fenced(
    system: LocalSystem,
) -> None:
    home = system.settings.home
    workers = {"worker-a": home / "a", "worker-b": home / "b"}
    secret = str(home / "worker" / "inbox.key")  # one cluster: the workers share its secret

    def env(name: str) -> dict[str, str]:
        return {"SLUICE_HOME": str(workers[name]), "SLUICE_WORKER_SECRET": secret}

    for name in workers:
        system.start(name, "worker", "--loglevel", "info", env=env(name))
    system.start("projections", "projections")
    system.start_nodes(NODES, cpus=2)
    system.wait_nodes_idle(NODES)
    generator = SluidGenerator(system.settings.cluster_id)
    sluids = _submit(system, generator, 20)
    system.wait(lambda: len(facts(system.settings, "JobEnded")) >= 20, 120, "20 jobs to end")

    # 1. SIGKILL the owner: the survivor takes the shard and finishes everything.
    owner = _owner(system, workers)
    seq_before = len(facts(system.settings))
    system.kill(owner)
    killed_at = time.monotonic()
    sluids += _submit(system, generator, 20)
    system.wait(lambda: len(facts(system.settings)) > seq_before, 120, "a fact from the survivor")
    print(f"kill -> first fact from the new owner: {time.monotonic() - killed_at:.1f} s")
    system.wait(lambda: len(facts(system.settings, "JobEnded")) >= 40, 180, "40 jobs to end")

    # 2. Restart the dead worker as the standby, then stall the owner past the session timeout.
    system.start(owner, "worker", "--loglevel", "info", env=env(owner))
    time.sleep(5)
    stalled = _owner(system, workers)
    sluids += _submit(system, generator, 20)
    system.processes[stalled].send_signal(signal.SIGSTOP)
    try:
        count = len(facts(system.settings))
        system.wait(lambda: len(facts(system.settings)) > count + 5, 180,
                    "the other worker to take over from the stalled one")
    finally:
        system.processes[stalled].send_signal(signal.SIGCONT)
    sluids += _submit(system, generator, 20)
    system.wait(lambda: len(facts(system.settings, "JobEnded")) >= 80, 240, "80 jobs to end")
    time.sleep(3)  # the resumed worker had time to try to write what it held
    assert_exactly_once(facts(system.settings), sluids)
    ended = Counter(r.record["state"] for r in facts(system.settings, "JobEnded"))
    assert ended == {"COMPLETED": 80}
