"""Licenses and hierarchical resources (``-L``, ``--resources``) in admission and the pass.

Two kinds of counters, both asked for with Slurm's license syntax (``matlab:2,power:1000``,
``a|b``):

- **cluster licenses** (``Licenses: matlab:10`` in the cluster file, Slurm's slurm.conf
  ``Licenses=``): one pool each, usable from any node;
- **hierarchical resources** (``ApplyConfig(kind="resources")``, resources.yaml, Modes 1 and 2;
  :mod:`scheduler.resources`): pools attached to layers of nodes, which also restrict where the
  job may run.

At submission a request must parse, name only known licenses and resources, and pass
``check_spec``. In a pass, the in-use counts are derived from the running jobs (then from the
jobs the pass starts), so they need no state of their own; a job that cannot get its counters
waits with ``Licenses``. A Mode-3 resource (power over PDU → rack → row → data centre) is
charged per node along each node's layer path; on a topology partition the plugin gets the
budget (:meth:`LicenseLedger.budget`) so it only picks nodes — and, with a block mapping,
base blocks — whose whole path has the watts left, as Slurm 25.11 does.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from scheduler.config.cluster import ClusterConfig
from scheduler.records import JobSpec
from scheduler.resources import (
    HresIndex,
    HresUsage,
    LicenseSpec,
    LicenseSyntaxError,
    Mode,
    ResourcesConfig,
    ResourcesConfigError,
    build_hres_index,
    charge,
    check_spec,
    combine_options,
    eligible_nodes,
    layered_budget,
    parse_licenses,
    parse_resources_yaml,
)
from scheduler.shard.model import Job
from scheduler.shard.reasons import Rejection, RejectionReason
from scheduler.topology import LayeredBudget, NodeTable

__all__ = ["LicenseLedger", "ResourcesConfigError", "check_licenses", "parse_resources"]

BoolArray = npt.NDArray[np.bool_]


@functools.lru_cache(maxsize=8)
def parse_resources(
    text: str, source: str = "resources.yaml", cluster_licenses: tuple[str, ...] = ()
) -> ResourcesConfig:
    """Parse resources.yaml text; raise ``ResourcesConfigError`` (file, line, reason)."""
    return parse_resources_yaml(text, filename=source, cluster_licenses=cluster_licenses)


@functools.lru_cache(maxsize=4096)
def _spec(licenses: str, resources: str, config: ResourcesConfig | None) -> LicenseSpec:
    return parse_licenses(combine_options(licenses or None, resources or None), config)


def _resources(text: str | None, config: ClusterConfig) -> ResourcesConfig | None:
    if not text or not text.strip():
        return None
    return parse_resources(text, "resources.yaml", tuple(n for n, _ in config.licenses))


def check_licenses(
    spec: JobSpec, config: ClusterConfig, resources_text: str | None
) -> tuple[Rejection, str] | None:
    """Why a submission's license request is invalid, or None."""
    if not spec.licenses and not spec.resources:
        return None
    resources = _resources(resources_text, config)
    try:
        request = _spec(spec.licenses, spec.resources, resources)
    except LicenseSyntaxError as error:
        return RejectionReason.INVALID_LICENSE, str(error)
    known = {name for name, _ in config.licenses} | set(resources.names if resources else ())
    for item in request.items:
        if item.name not in known:
            return RejectionReason.INVALID_LICENSE, f"unknown license or resource {item.name!r}"
    problem = check_spec(request, resources) if resources else None
    return (RejectionReason.INVALID_LICENSE, problem) if problem else None


class LicenseLedger:
    """In-use license and resource counts for one pass, from the running jobs."""

    __slots__ = ("cluster", "hres", "index", "pools", "resources", "usage")

    def __init__(
        self,
        config: ClusterConfig,
        resources_text: str | None,
        node_names: Sequence[str],
        running: Iterable[Job],
    ) -> None:
        self.pools = dict(config.licenses)
        self.cluster: dict[str, int] = dict.fromkeys(self.pools, 0)
        self.resources = _resources(resources_text, config)
        self.index: HresIndex | None = (
            build_hres_index(self.resources, node_names) if self.resources else None
        )
        self.usage = HresUsage()
        for job in sorted(running, key=lambda j: j.job_id):
            self.take(job, job.nodes)

    def request(self, job: Job) -> LicenseSpec:
        """The job's parsed request (empty when it asks for none)."""
        return _spec(job.spec.licenses, job.spec.resources, self.resources)

    def mask(self, job: Job, eligible: BoolArray) -> BoolArray:
        """``eligible`` narrowed to nodes whose resource layers can serve the job now."""
        if self.index is None:
            return eligible
        allowed: BoolArray = eligible & eligible_nodes(self.index, self.usage, self.request(job))
        return allowed

    def available(self, job: Job, nodes: Sequence[str]) -> bool:
        """Can the job get every counter it asks for on ``nodes``?"""
        spec = self.request(job)
        if not self._cluster_ok(spec):
            return False
        if self.index is None or not self._hierarchical(spec):
            return True
        return charge(self.index, self.usage, spec, nodes) is not None

    def take(self, job: Job, nodes: Sequence[str]) -> None:
        """Count a running or starting job's counters."""
        spec = self.request(job)
        if not spec.items:
            return
        for name, count in self._cluster_items(spec):
            self.cluster[name] += count
        if self.index is not None and self._hierarchical(spec):
            charged = charge(self.index, self.usage, spec, nodes)
            if charged is not None:
                self.usage = charged[0]

    def budget(self, job: Job, nodes: NodeTable) -> LayeredBudget | None:
        """The Mode-3 budget a topology plugin must respect for ``job`` (None: it asks none)."""
        resources, index = self.resources, self.index
        if resources is None or index is None:
            return None
        for item in self.request(job).items:
            if item.name in resources.names and resources.get(item.name).mode is Mode.MODE_3:
                return layered_budget(index, self.usage, item.name, item.count, nodes)
        return None

    def _hierarchical(self, spec: LicenseSpec) -> bool:
        resources = self.resources
        return resources is not None and any(i.name in resources.names for i in spec.items)

    def _cluster_items(self, spec: LicenseSpec) -> list[tuple[str, int]]:
        """The cluster licenses a start takes: all asked, or with ``a|b`` the first that fits."""
        items = [(i.name, i.count) for i in spec.items if i.name in self.pools]
        if not spec.any_of:
            return items
        fitting = [(n, c) for n, c in items if self.cluster[n] + c <= self.pools[n]]
        return (fitting or items)[:1]

    def _cluster_ok(self, spec: LicenseSpec) -> bool:
        fits = [
            self.cluster[n] + c <= self.pools[n]
            for n, c in ((i.name, i.count) for i in spec.items if i.name in self.pools)
        ]
        if not fits:
            return True
        return any(fits) if spec.any_of else all(fits)
