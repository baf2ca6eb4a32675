"""What the bridge keeps of a pod or a Job: the fields it reads, nothing else.

A pod may carry up to 256 KiB of annotations, megabytes of managed fields, env and volumes; the
bridge holds every waiting and running pod named for it (and each gang's Job annotations) in
memory, so a tenant's pods full of annotations filled the bridge's memory with what it never
reads (red team). It keeps the ``sluice.dev/`` annotations (and the Job's completion index), a
container's name and resources, and the placement fields.
"""

from __future__ import annotations

from typing import Any

from agents.bridge.gang import PREFIX

__all__ = ["MAX_ANNOTATION", "kept_annotations", "slim_pod"]

COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
MAX_ANNOTATION = 1024
"""The longest ``sluice.dev/`` annotation value kept (longer ones are cut: no option of
``sluice submit`` needs more, and a cut value is refused as a bad annotation)."""
_META = ("name", "namespace", "uid", "ownerReferences", "deletionTimestamp", "resourceVersion")
_SPEC = ("schedulerName", "nodeName", "resourceClaims", "nodeSelector", "tolerations",
         "restartPolicy")


def kept_annotations(meta: dict[str, Any]) -> dict[str, str]:
    """The annotations the bridge reads, each value at most ``MAX_ANNOTATION`` characters."""
    return {str(k): str(v)[:MAX_ANNOTATION] for k, v in (meta.get("annotations") or {}).items()
            if str(k).startswith(PREFIX) or k == COMPLETION_INDEX}


def _container(container: dict[str, Any]) -> dict[str, Any]:
    return {"name": container.get("name", ""), "resources": container.get("resources") or {}}


def slim_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod as the bridge keeps it."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    status = pod.get("status") or {}
    kept_spec: dict[str, Any] = {k: spec[k] for k in _SPEC if k in spec}
    for name in ("containers", "initContainers"):
        if name in spec:
            kept_spec[name] = [_container(c) for c in spec[name] or []]
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity")
    if node_affinity:
        kept_spec["affinity"] = {"nodeAffinity": node_affinity}
    return {"metadata": {**{k: meta[k] for k in _META if k in meta},
                         "annotations": kept_annotations(meta)},
            "spec": kept_spec,
            "status": {k: status[k] for k in ("phase", "containerStatuses",
                                              "resourceClaimStatuses") if k in status}}
