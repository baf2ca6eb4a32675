"""Mode-3 hierarchical resources (power) cap block placement in the scheduling pass."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler import ApplyConfig, ConfigApplied, JobPending, JobStarted, decide, evolve
from tests.unit.core.gwt import T0, Scenario, given, nodes, queued, schedule_pass, sluid, spec

TOPOLOGY = """\
- topology: racks
  cluster_default: true
  block:
    block_sizes: [4]
    blocks:
      - block: b1
        nodes: n[1-4]
      - block: b2
        nodes: n[5-8]
"""
POWER = """\
- resource: power
  mode: MODE_3
  topology: racks
  layers:
    - nodes: ["n[1-4]"]
      count: 2000
    - nodes: ["n[5-8]"]
      count: 4000
    - nodes: ["n[1-8]"]
      count: 6000
"""


def _cluster(*facts: object) -> Scenario:
    scenario = given(nodes("n", 8), *facts)  # type: ignore[arg-type]
    for number, (kind, text) in enumerate((("topology", TOPOLOGY), ("resources", POWER))):
        [applied] = decide(
            scenario.state,
            ApplyConfig(config_sluid=sluid(90 + number), kind=kind, text=text),
            T0,
        )
        assert isinstance(applied, ConfigApplied), applied
        scenario.state = evolve(scenario.state, applied)
    return scenario


def _starts(facts: Sequence[object]) -> dict[str, tuple[str, ...]]:
    return {f.job_sluid: tuple(f.nodes) for f in facts if isinstance(f, JobStarted)}


def test_a_rack_takes_no_more_nodes_than_its_power_budget_feeds() -> None:
    outcome = _cluster(
        queued(sluid(1), spec(nodes_min=2, resources="power:1000", exclusive=True)),
        queued(sluid(2), spec(nodes_min=3, resources="power:1000", exclusive=True)),
        queued(sluid(3), spec(nodes_min=2, resources="power:1000", exclusive=True)),
    ).when(schedule_pass(), T0 + 1)

    starts = _starts(outcome.facts)
    racks = {"b1": {"n1", "n2", "n3", "n4"}, "b2": {"n5", "n6", "n7", "n8"}}
    watts = {
        rack: 1000 * sum(len(set(n) & members) for n in starts.values())
        for rack, members in racks.items()
    }
    assert watts["b1"] <= 2000 and watts["b2"] <= 4000
    assert sum(watts.values()) <= 6000
    assert len(starts) == 2  # the third job would need 2 kW more than any rack has left
    assert sluid(3) not in starts
    assert any(isinstance(f, JobPending) and f.job_sluid == sluid(3) for f in outcome.facts)


def test_without_a_power_request_the_budget_does_not_constrain_placement() -> None:
    outcome = _cluster(
        queued(sluid(1), spec(nodes_min=4, exclusive=True)),
        queued(sluid(2), spec(nodes_min=4, exclusive=True)),
    ).when(schedule_pass(), T0 + 1)

    assert len(_starts(outcome.facts)) == 2
