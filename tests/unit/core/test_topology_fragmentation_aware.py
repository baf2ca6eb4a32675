"""``TopologyFragmentationAware``: the cluster key reaches the block plugin's tie-break."""

from __future__ import annotations

import pytest

from scheduler import ApplyConfig, ConfigError, JobStarted, decide, evolve, parse_config
from tests.unit.core.gwt import T0, given, nodes, queued, schedule_pass, sluid, spec

# four base blocks of two nodes; aggregates of two blocks: {b1, b2} and {b3, b4}
BLOCKS = "\n".join(f"BlockName=b{i} Nodes=n[{2 * i - 1}-{2 * i}]" for i in range(1, 5))
TOPOLOGY = BLOCKS + "\nBlockSizes=2,4\n"


def _config(flag: str) -> str:
    key = f"TopologyFragmentationAware: {flag}\n" if flag else ""
    return key + (
        "Nodes:\n  - NodeName: n[1-8]\n"
        "Partitions:\n  - PartitionName: main\n    Default: YES\n"
        "  - PartitionName: pin\n    Nodes: n1\n"
    )


def test_the_key_is_a_boolean_and_off_by_default() -> None:
    assert parse_config(_config("")).scheduler.fragmentation_aware is False
    assert parse_config(_config("NO")).scheduler.fragmentation_aware is False
    assert parse_config(_config("YES")).scheduler.fragmentation_aware is True
    with pytest.raises(ConfigError, match="TopologyFragmentationAware"):
        parse_config(_config("sometimes"))


@pytest.mark.parametrize(("flag", "expected"), [("NO", ("n7", "n8")), ("YES", ("n3", "n4"))])
def test_the_pass_asks_the_plugin_for_the_tie_break(flag: str, expected: tuple[str, ...]) -> None:
    # a one-node job pinned to n1 (block b1), then a two-node job: b2, b3 and b4 tie on Slurm's
    # keys (two free nodes each); Slurm takes the later block (b4), which breaks the whole free
    # aggregate {b3, b4}; the tie-break takes b2, beside the busy b1
    scenario = given(
        nodes("n", 8),
        queued(sluid(1), spec(partition="pin")),
        queued(sluid(2), spec(nodes_min=2), time_ms=T0 + 1),
        config=_config(flag),
    )
    [applied] = decide(
        scenario.state, ApplyConfig(config_sluid=sluid(90), kind="topology", text=TOPOLOGY), T0
    )
    scenario.state = evolve(scenario.state, applied)
    outcome = scenario.when(schedule_pass(), T0 + 2)
    pinned, pair = (f for f in outcome.facts if isinstance(f, JobStarted))
    assert pinned.nodes == ("n1",)
    assert pair.nodes == expected
