"""Every registered plugin conforms to the Protocol and behaves like a plugin."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler.topology import (
    REGISTRY,
    Placement,
    PlacementRequest,
    TopologyIndex,
    TopologyPlugin,
    Unplaceable,
    build_index,
    eligible_mask,
)
from scheduler.topology.config import (
    BlockConfig,
    BlockDef,
    Dims,
    FlatConfig,
    KindConfig,
    NamedTopology,
    RingConfig,
    RingDef,
    SwitchDef,
    Torus3dConfig,
    TorusDef,
    TorusPlacementShape,
    TreeConfig,
)

from .builders import names

NODES = names(16)
CONFIGS: dict[str, KindConfig] = {
    "flat": FlatConfig(),
    "tree": TreeConfig(
        (
            SwitchDef("top", (), ("l1", "l2")),
            SwitchDef("l1", tuple(NODES[:8])),
            SwitchDef("l2", tuple(NODES[8:])),
        )
    ),
    "block": BlockConfig(
        (BlockDef("b1", tuple(NODES[:8])), BlockDef("b2", tuple(NODES[8:]))), (8, 16)
    ),
    "ring": RingConfig((RingDef("r0", tuple(NODES[:8])), RingDef("r1", tuple(NODES[8:])))),
    "torus3d": Torus3dConfig(
        (
            TorusDef(
                "t",
                Dims(4, 2, 2),
                tuple(NODES),
                (),
                (TorusPlacementShape(Dims(2, 2, 1)), TorusPlacementShape(Dims(2, 1, 1))),
            ),
        )
    ),
}


def test_registry_holds_the_five_kinds() -> None:
    assert list(REGISTRY) == ["flat", "tree", "block", "ring", "torus3d"]


@pytest.fixture(params=list(REGISTRY))
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_plugin_conforms_to_the_protocol(kind: str) -> None:
    plugin: Any = REGISTRY[kind]
    assert isinstance(plugin, TopologyPlugin)
    assert plugin.name == kind


def test_build_gives_an_index_over_the_given_node_order(kind: str) -> None:
    index = build_index(NamedTopology(kind, CONFIGS[kind]), list(reversed(NODES)))
    assert isinstance(index, TopologyIndex)
    assert index.kind == kind and index.name == kind
    assert index.nodes.names == tuple(reversed(NODES))


def test_place_is_pure_and_deterministic(kind: str) -> None:
    index = build_index(NamedTopology(kind, CONFIGS[kind]), NODES)
    eligible = np.ones(16, dtype=bool)
    eligible[[1, 9]] = False
    frozen = eligible.copy()
    first = REGISTRY[kind].place(index, PlacementRequest(2), eligible)
    second = REGISTRY[kind].place(index, PlacementRequest(2), eligible.copy())
    assert isinstance(first, Placement)
    assert first == second
    assert (eligible == frozen).all()
    assert not set(first.nodes) & {NODES[1], NODES[9]}


def test_a_job_larger_than_the_cluster_is_never_placed(kind: str) -> None:
    index = build_index(NamedTopology(kind, CONFIGS[kind]), NODES)
    result = REGISTRY[kind].place(index, PlacementRequest(17), np.ones(16, dtype=bool))
    assert isinstance(result, Unplaceable)


def test_place_accepts_only_masks_of_the_index_length(kind: str) -> None:
    index = build_index(NamedTopology(kind, CONFIGS[kind]), NODES)
    with pytest.raises(ValueError, match="bool array of 16"):
        REGISTRY[kind].place(index, PlacementRequest(1), np.ones(15, dtype=bool))


def test_eligible_mask_is_built_from_names_in_index_order() -> None:
    index = build_index(NamedTopology("flat", CONFIGS["flat"]), NODES)
    mask = eligible_mask(index, [NODES[3], NODES[0]])
    assert mask.tolist() == [True, False, False, True] + [False] * 12
    with pytest.raises(KeyError):
        eligible_mask(index, ["nope"])
