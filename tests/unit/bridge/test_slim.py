"""The bridge keeps only what it reads of a pod (agents/bridge/slim.py): a tenant's pods full
of annotations, env and managed fields filled its memory (red team)."""

from __future__ import annotations

import json
from typing import Any

from agents.bridge.gang import Gang, job_spec
from agents.bridge.placement import allowed
from agents.bridge.slim import MAX_ANNOTATION, slim_pod
from tests.unit.bridge.test_placement import _node


def _fat_pod() -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ml", "uid": "u", "resourceVersion": "7",
                     "ownerReferences": [{"kind": "Job", "name": "train", "uid": "j",
                                          "controller": True}],
                     "labels": {f"l{i}": "x" * 63 for i in range(1000)},
                     "annotations": {"junk": "x" * 250_000, "sluice.dev/segment": "2",
                                     "sluice.dev/partition": "p" * 5000,
                                     "batch.kubernetes.io/job-completion-index": "3"},
                     "managedFields": [{"manager": "m", "fieldsV1": {"f": "x" * 100_000}}]},
        "spec": {"schedulerName": "sluice", "nodeSelector": {"pool": "gpu"},
                 "tolerations": [{"operator": "Exists"}],
                 "affinity": {"podAntiAffinity": {"x": "y" * 10_000}},
                 "volumes": [{"name": f"v{i}", "emptyDir": {}} for i in range(1000)],
                 "containers": [{"name": "m", "image": "i", "env": [
                     {"name": f"E{i}", "value": "v" * 100} for i in range(1000)],
                     "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": "1"}}}]},
        "status": {"phase": "Pending", "conditions": [{"message": "m" * 10_000}]}}


def test_a_fat_pod_is_kept_small_with_all_the_bridge_reads() -> None:
    fat = _fat_pod()
    slim = slim_pod(fat)
    assert len(json.dumps(slim)) < 3000 < len(json.dumps(fat)) // 100
    meta = slim["metadata"]
    assert meta["annotations"] == {"sluice.dev/segment": "2",
                                   "sluice.dev/partition": "p" * MAX_ANNOTATION,
                                   "batch.kubernetes.io/job-completion-index": "3"}
    assert meta["ownerReferences"][0]["uid"] == "j" and meta["uid"] == "u"
    gang = Gang("j", "Job", "ml", "train", 1)
    annotations = {"sluice.dev/segment": "1"}
    assert job_spec(gang, slim, annotations, user="alice") == \
        job_spec(gang, fat, annotations, user="alice")
    node = _node("n", {"pool": "gpu"})
    assert allowed(slim, node) and allowed(fat, node)
