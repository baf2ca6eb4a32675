"""A pod, or the pods of one Job, as one Sluice job: the gang convention of the bridge.

**Convention: a batch/v1 Job is a gang.** Its ``parallelism`` pods (``completions`` unset or
equal to it) are one Sluice job of ``parallelism`` nodes, one pod per node; a pod that no Job
controls is a job of one node. Why a Job and not a PodGroup: the Job controller ships with every
cluster (no CRD, no second scheduler plugin to install), it re-creates a pod that was deleted,
which is exactly what a requeue needs, and Indexed Jobs give each pod a stable rank. The
scheduler-plugins PodGroup (``scheduling.x-k8s.io``) needs its CRD and controller; the bridge
reads a Job's pods as one gang whatever created the Job (JobSet makes Jobs too).

Sizes come from the pod's requests (limits where a request is missing; init containers count
as the maximum): CPUs rounded up, memory in MB, ``nvidia.com/gpu`` (or the GPU devices of its
DRA ResourceClaims, whichever is more) as GPUs per node. Intent
comes from annotations on the Job (or the pod), prefix ``sluice.dev/``; see ``ANNOTATIONS``.
"""

from __future__ import annotations

import argparse
import copy
import math
import re
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from typing import Any

from agents.bridge.quantity import QuantityError, cpus, mem_mb, parse_quantity
from cli.submit import add_parsers, build_spec, spec_problem

__all__ = ["ANNOTATIONS", "GPU_RESOURCE", "PREFIX", "USER_KEY", "USER_NAME", "Gang", "GangError",
           "gang_of", "job_spec"]

PREFIX = "sluice.dev/"
USER_KEY = PREFIX + "user"
"""On a Namespace (never a pod or Job): the Sluice user its pods' jobs belong to
(``agents.bridge.kube.Kube.namespace_user``; without it the bridge's ``--default-user``, else
the pods are refused: ``agents.bridge.owner``); the bridge's user must be an administrator or
listed for that user in ``SubmitFor`` (docs/security.md)."""
USER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
GPU_RESOURCE = "nvidia.com/gpu"
ANNOTATIONS = {
    "segment": "--segment N: nodes per segment, each segment in one topology block",
    "exclusive": "--exclusive=topo (whole base blocks) or node",
    "requeue": "--requeue=yes|expedite, or no",
    "partition": "-p PARTITION",
    "qos": "-q QOS",
    "account": "-A ACCOUNT",
    "time-limit": "-t TIME (minutes, HH:MM:SS, D-HH…)",
    "spread-segments": "--spread-segments (true)",
    "switches": "--switches N[@max-wait]",
    "nice": "--nice N",
}


class GangError(ValueError):
    """Why pods cannot become a Sluice job: ``reason`` is a name, the message says why."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


@dataclass(frozen=True, slots=True)
class Gang:
    """The pods that make one Sluice job: a Job (by uid) or one bare pod."""

    key: str  # the Job's or the bare pod's uid
    kind: str  # "Job" or "Pod"
    namespace: str
    name: str
    size: int


def _controller(pod: dict[str, Any]) -> dict[str, Any] | None:
    for ref in pod.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def gang_of(pod: dict[str, Any]) -> tuple[str, str, str, str]:
    """``(key, kind, namespace, name)`` of the gang a pod belongs to (no API call)."""
    meta = pod.get("metadata", {})
    owner = _controller(pod)
    if owner is not None and owner.get("kind") == "Job":
        return str(owner["uid"]), "Job", meta.get("namespace", ""), str(owner["name"])
    return str(meta.get("uid", "")), "Pod", meta.get("namespace", ""), meta.get("name", "")


def gang_size(job: dict[str, Any] | None) -> int:
    """Pods of one gang: the Job's parallelism (GangError when completions differ)."""
    if job is None:
        return 1
    spec = job.get("spec", {})
    parallelism = int(spec.get("parallelism") or 1)
    completions = spec.get("completions")
    if completions is not None and int(completions) != parallelism:
        raise GangError("GangShape", f"completions {completions} differ from parallelism "
                        f"{parallelism}: a gang runs all its pods at once")
    if parallelism < 1:
        raise GangError("GangShape", "parallelism 0: nothing to schedule")
    return parallelism


def _requests(pod: dict[str, Any]) -> dict[str, Decimal]:
    """The pod's effective requests: containers summed, init containers as a maximum."""
    spec = pod.get("spec", {})
    total: dict[str, Decimal] = {}

    def amounts(container: dict[str, Any]) -> dict[str, str]:
        res = container.get("resources") or {}
        return {**(res.get("limits") or {}), **(res.get("requests") or {})}

    for container in spec.get("containers") or []:
        for name, value in amounts(container).items():
            total[name] = total.get(name, Decimal(0)) + parse_quantity(value)
    for container in spec.get("initContainers") or []:
        for name, value in amounts(container).items():
            total[name] = max(total.get(name, Decimal(0)), parse_quantity(value))
    return total


COUNTED = ("cpu", "memory", GPU_RESOURCE)
"""What Sluice places a pod by: CPUs, memory, ``nvidia.com/gpu`` as GPUs (its GRES)."""
UNCOUNTED_OK = ("ephemeral-storage",)
"""Asked for and not placed by (every node has some; Slurm's ``--tmp`` is not modelled)."""


def _refuse_uncounted(requests: dict[str, Decimal]) -> None:
    """GangError ``UnsupportedResource`` for a request Sluice does not count: an extended
    resource other than ``nvidia.com/gpu`` (``amd.com/gpu``, ``example.com/fpga``), hugepages.
    No node's amount of it is known to Sluice, so the pod could be bound to a node without it,
    where the kubelet refuses it (``OutOf…``); kube-scheduler would filter those nodes out."""
    names = sorted(n for n, amount in requests.items()
                   if amount > 0 and n not in COUNTED and n not in UNCOUNTED_OK)
    if names:
        raise GangError("UnsupportedResource", f"the pod asks for {', '.join(names)}: Sluice "
                        f"places pods by {', '.join(COUNTED)} only (GPUs as nvidia.com/gpu or "
                        "DRA claims), and could bind it to a node without it")


@cache
def _default_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(add_help=False)
    add_parsers(parser.add_subparsers(dest="verb"))
    return parser.parse_args(["submit", "--", "kubernetes"])


def _defaults() -> argparse.Namespace:
    """``sluice submit``'s defaults, parsed once (building the parser is most of a pod's cost)."""
    return argparse.Namespace(**{name: copy.copy(value)  # lists and dicts: a copy each
                                 for name, value in vars(_default_args()).items()})


def _int(annotations: dict[str, str], name: str) -> int:
    value = annotations.get(PREFIX + name, "0")
    try:
        return int(value)
    except ValueError:
        raise GangError("BadAnnotation",
                        f"{PREFIX}{name}={value!r} is not a whole number") from None


def job_spec(gang: Gang, pod: dict[str, Any], annotations: dict[str, str],
             dra_gpus: int = 0, user: str = "", exclude: list[str] | None = None
             ) -> dict[str, Any]:
    """The JobSpec record (a plain dict, as ``sluice submit`` builds it) for a gang;
    ``dra_gpus``: the GPUs its pod's ResourceClaims ask for (``agents.bridge.claims``);
    ``user``: whose job it is (``agents.bridge.owner.owner``; never "": a job of the bridge's
    own user would lend any pod the bridge's standing in Sluice);
    ``exclude``: the nodes its pods may not go to (``agents.bridge.placement``)."""
    if not user:
        raise GangError("NoSluiceUser", f"namespace {gang.namespace}: no Sluice user for its pods")
    if not USER_NAME.fullmatch(user):
        raise GangError("BadAnnotation", f"namespace {gang.namespace}: {USER_KEY}={user!r} "
                                         "is not a user name")
    try:
        requests = _requests(pod)
        _refuse_uncounted(requests)
        cpu = max(1, cpus(requests.get("cpu", Decimal(1))))
        mem = mem_mb(requests.get("memory", Decimal(0)))
        gpus = max(math.ceil(requests.get(GPU_RESOURCE, Decimal(0))), dra_gpus)
    except QuantityError as exc:
        raise GangError("BadRequests", str(exc)) from exc
    args = _defaults()
    args.nodes, args.ntasks, args.cpus_per_task = str(gang.size), gang.size, cpu
    args.mem, args.gpus_per_node = mem, gpus
    args.uid = user
    args.job_name = f"{gang.namespace}/{gang.name}"
    args.command = ["kubernetes", gang.kind, f"{gang.namespace}/{gang.name}"]
    args.chdir = "/"
    args.exclude = ",".join(exclude or ())
    args.comment = f"k8s {gang.kind} {gang.namespace}/{gang.name} uid {gang.key}"
    args.segment, args.nice = _int(annotations, "segment"), _int(annotations, "nice")
    if args.nice < 0:  # the bridge's authority is not the pod's (docs/kubernetes.md)
        raise GangError("BadAnnotation", f"{PREFIX}nice={args.nice}: a negative nice is an "
                        "operator's (sluice update); a pod may only lower its priority")
    for name in ("partition", "qos", "account"):
        setattr(args, name, annotations.get(PREFIX + name, ""))
    args.time = annotations.get(PREFIX + "time-limit", "0")
    exclusive = annotations.get(PREFIX + "exclusive", "")
    if exclusive not in ("", "topo", "node"):
        raise GangError("BadAnnotation", f"{PREFIX}exclusive={exclusive!r}: topo or node")
    args.exclusive = exclusive
    requeue = annotations.get(PREFIX + "requeue", "")
    if requeue not in ("", "yes", "expedite", "no"):
        raise GangError("BadAnnotation", f"{PREFIX}requeue={requeue!r}: yes, expedite or no")
    args.requeue = requeue
    args.spread_segments = annotations.get(PREFIX + "spread-segments", "") == "true"
    args.switches = annotations.get(PREFIX + "switches", "")
    try:
        spec = build_spec(args)
    except ValueError as exc:
        raise GangError("BadAnnotation", str(exc)) from exc
    problem = spec_problem(spec)
    if problem:
        raise GangError("OutOfRange", problem)
    return spec
