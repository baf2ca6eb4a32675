"""The Mode-3 layer tree: parents, leaves, paths and effective capacities.

Slurm requires Mode-3 layers to form a rooted tree of uniform depth (at most 16). A
layer's parent is the smallest other layer that strictly contains it; two layers that
overlap without one containing the other cannot be placed in a tree. The effective
capacity of a layer is ``count - base``, where ``base`` sums the layer's own static
consumers and those of every layer below it (unlimited layers stay unlimited).
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.resources.model import INFINITE_COUNT, MAX_HIERARCHY_DEPTH, Layer

__all__ = ["Mode3Tree", "TreeProblem", "mode3_tree"]


@dataclass(frozen=True, slots=True)
class Mode3Tree:
    """Layer tree of one Mode-3 resource (layer numbers are file positions).

    ``paths[leaf]`` lists layers from the leaf up to the root; ``capacity[layer]`` is the
    effective capacity (``INFINITE_COUNT`` for no limit).
    """

    parent: tuple[int, ...]
    leaves: tuple[int, ...]
    paths: tuple[tuple[int, ...], ...]
    capacity: tuple[int, ...]
    root: int


@dataclass(frozen=True, slots=True)
class TreeProblem:
    """Why the layers do not form a valid tree, and which layer shows it."""

    layer: int
    reason: str


def mode3_tree(layers: tuple[Layer, ...]) -> Mode3Tree | TreeProblem:
    """Build the tree or say why the layers are not one."""
    sets = [frozenset(layer.nodes) for layer in layers]
    parent = []
    for i, nodes in enumerate(sets):
        problem = _overlap_problem(sets, i)
        if problem is not None:
            return problem
        supersets = [j for j, other in enumerate(sets) if j != i and nodes < other]
        parent.append(min(supersets, key=lambda j: (len(sets[j]), j)) if supersets else -1)
    roots = [i for i, p in enumerate(parent) if p < 0]
    if len(roots) != 1:
        return TreeProblem(roots[1] if len(roots) > 1 else 0, "the layers are not a rooted tree")
    children = {i: [c for c, p in enumerate(parent) if p == i] for i in range(len(layers))}
    leaves = tuple(i for i in range(len(layers)) if not children[i])
    paths = tuple(_path(parent, leaf) for leaf in leaves)
    depths = {len(path) for path in paths}
    if len(depths) != 1:
        return TreeProblem(leaves[0], "the layers are not a tree of uniform depth")
    if max(depths) > MAX_HIERARCHY_DEPTH:
        return TreeProblem(leaves[0], f"the tree is deeper than {MAX_HIERARCHY_DEPTH}")
    capacity = _capacities(layers, parent)
    if isinstance(capacity, TreeProblem):
        return capacity
    return Mode3Tree(tuple(parent), leaves, paths, capacity, roots[0])


def _overlap_problem(sets: list[frozenset[str]], i: int) -> TreeProblem | None:
    for j, other in enumerate(sets):
        if j == i:
            continue
        if sets[i] == other:
            return TreeProblem(max(i, j), "duplicate layer (same nodes as another layer)")
        shared = sets[i] & other
        if shared and not (sets[i] < other or other < sets[i]):
            return TreeProblem(max(i, j), "layers overlap without one containing the other")
    return None


def _path(parent: list[int], leaf: int) -> tuple[int, ...]:
    path = [leaf]
    while parent[path[-1]] >= 0:
        path.append(parent[path[-1]])
    return tuple(path)


def _capacities(layers: tuple[Layer, ...], parent: list[int]) -> tuple[int, ...] | TreeProblem:
    base = [layer.base_usage for layer in layers]
    depth = [len(_path(parent, i)) for i in range(len(layers))]
    for i in sorted(range(len(layers)), key=lambda k: (-depth[k], k)):
        if parent[i] >= 0:
            base[parent[i]] += base[i]
    capacity = []
    for i, layer in enumerate(layers):
        if layer.count == INFINITE_COUNT:
            capacity.append(INFINITE_COUNT)
            continue
        if layer.count < base[i]:
            return TreeProblem(i, f"base usage {base[i]} is greater than count {layer.count}")
        capacity.append(layer.count - base[i])
    return tuple(capacity)
