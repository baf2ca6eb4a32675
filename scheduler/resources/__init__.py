"""Hierarchical resources (Slurm HRES, resources.yaml Modes 1-3) as pure functions.

config = parse_resources_yaml(text, known_nodes=names)
index = build_hres_index(config, names)
spec = parse_licenses(combine_options("--licenses value", "--resources value"), config)
mask = eligible_nodes(index, usage, spec)              # Modes 1 and 2 filter
budget = layered_budget(index, usage, "power", 2000, topology_index.nodes)   # Mode 3
usage, charged = charge(index, usage, spec, job_nodes) or ...
usage = release(index, usage, charged)
"""

from scheduler.resources.availability import (
    Charge,
    HresIndex,
    HresUsage,
    build_hres_index,
    can_run,
    charge,
    eligible_nodes,
    release,
)
from scheduler.resources.errors import ResourcesConfigError
from scheduler.resources.hierarchy import Mode3Tree, mode3_tree
from scheduler.resources.model import (
    INFINITE_COUNT,
    MAX_HIERARCHY_DEPTH,
    Layer,
    Mode,
    Resource,
    ResourcesConfig,
    Variable,
)
from scheduler.resources.parse import parse_resources_yaml
from scheduler.resources.power import check_block_mapping, layered_budget
from scheduler.resources.requests import (
    LicenseRequest,
    LicenseSpec,
    LicenseSyntaxError,
    check_spec,
    combine_options,
    parse_licenses,
)

__all__ = [
    "INFINITE_COUNT",
    "MAX_HIERARCHY_DEPTH",
    "Charge",
    "HresIndex",
    "HresUsage",
    "Layer",
    "LicenseRequest",
    "LicenseSpec",
    "LicenseSyntaxError",
    "Mode",
    "Mode3Tree",
    "Resource",
    "ResourcesConfig",
    "ResourcesConfigError",
    "Variable",
    "build_hres_index",
    "can_run",
    "charge",
    "check_block_mapping",
    "check_spec",
    "combine_options",
    "eligible_nodes",
    "layered_budget",
    "mode3_tree",
    "parse_licenses",
    "parse_resources_yaml",
    "release",
]
