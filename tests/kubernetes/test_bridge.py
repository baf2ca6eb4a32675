"""The bridge on the real local control plane: 8 kwok nodes in two topology blocks.

Pods with ``schedulerName: sluice`` become Sluice jobs through the authenticated intake; the
core places them (segment → one block), the bridge binds them; pods' end is the job's end; a
NotReady node under an expedite job requeues it and the re-created pods are bound again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.auth import jwt_token, munge
from cli.client import Client
from cli.up_auth import setup_auth, stop_munged
from tests.e2e.harness import LocalSystem, apply_config
from tests.e2e.ledger import facts
from tests.kubernetes.conftest import KubeCluster
from tests.kubernetes.harness import (
    EXPEDITE,
    LONG,
    block_of,
    bound_pods,
    job_manifest,
    start_bridge,
    start_bridged,
)
from tests.kubernetes.rbac import role_kubeconfig

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]

NOT_READY = "node-not-ready.stage.kwok.x-k8s.io"


@pytest.fixture
def system(kafka_bootstrap: str, tmp_path: Path, unique: str,
           kube_cluster: KubeCluster) -> Iterator[LocalSystem]:
    local = LocalSystem(kafka_bootstrap, tmp_path / "home", f"k8s{unique}")
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture
def munge_system(kafka_bootstrap: str, tmp_path: Path, unique: str,
                 kube_cluster: KubeCluster) -> Iterator[LocalSystem]:
    """A system whose processes and clients sign with munge, as ``sluice up`` sets them."""
    if not munge.available():
        pytest.skip("munged is not installed (Debian package 'munge')")
    local = LocalSystem(kafka_bootstrap, tmp_path / "home", f"k8m{unique}")
    setup = setup_auth(local.settings)
    if setup.kind != "munge":
        pytest.skip(setup.note)
    local.settings = local.settings.with_(auth="munge", munge_socket=setup.munge_socket,
                                          jwt_key=setup.jwt_key)
    local.client = Client(local.settings)
    try:
        yield local
    finally:
        local.stop()
        stop_munged(local.settings)


def _sluice_job(system: LocalSystem, name: str) -> dict[str, Any]:
    jobs = system.client.get("/v1/jobs?all=1")["jobs"]
    matching = [j for j in jobs if j["name"] == name]
    if not matching:  # the views may trail the bridge, which reads node-commands directly
        raise KeyError(f"no Sluice job named {name}")
    return dict(system.client.get(f"/v1/jobs/{matching[-1]['job_sluid']}")["job"])


def _state(system: LocalSystem, name: str) -> str:
    """The state of the newest Sluice job named ``name`` ("" before the views know it)."""
    jobs = [j for j in system.client.get("/v1/jobs?all=1")["jobs"] if j["name"] == name]
    return str(jobs[-1]["state"]) if jobs else ""


def _cli(system: LocalSystem, *argv: str) -> str:
    env = {**os.environ, **system.settings.as_env()}
    done = subprocess.run([sys.executable, "-m", "cli.main", *argv], env=env, check=False,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _placed(system: LocalSystem, name: str) -> dict[str, Any] | None:
    job = _sluice_job(system, name)
    return job if job["nodes"] else None


def _rerun(system: LocalSystem, name: str) -> dict[str, Any] | None:
    job = _sluice_job(system, name)
    return job if len(job["runs"]) >= 2 else None


def _all_bound(kube: KubeCluster, namespace: str, job: str, count: int) -> dict[str, str] | None:
    bound = bound_pods(kube, namespace, job)
    return bound if len(bound) == count else None


def _ended(system: LocalSystem, name: str) -> dict[str, Any] | None:
    job = _sluice_job(system, name)
    return None if job["state"] in ("PENDING", "RUNNING", "COMPLETING") else job


def test_a_segment_of_four_lands_in_one_block_and_ends_with_its_pods(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    start_bridged(system, kube_cluster)
    batch = kube_cluster.batch
    # Two long pods first: they take two nodes of one block.
    batch.create_namespaced_job(namespace, job_manifest("warm", 2, pod_annotations=LONG))
    warm = system.wait(lambda: _all_bound(kube_cluster, namespace, "warm", 2), 120,
                       "the first Job's 2 pods bound")
    warm_blocks = {block_of(kube_cluster, n) for n in warm.values()}

    batch.create_namespaced_job(namespace, job_manifest(
        "seg", 4, annotations={"sluice.dev/segment": "4"}))
    seg = system.wait(lambda: _all_bound(kube_cluster, namespace, "seg", 4), 120,
                      "the segment Job's 4 pods bound")
    blocks = {block_of(kube_cluster, n) for n in seg.values()}
    assert len(set(seg.values())) == 4, seg
    assert len(blocks) == 1, f"a segment of 4 spread over blocks: {seg}"
    assert blocks.isdisjoint(warm_blocks) or len(warm_blocks) == 2, (seg, warm)

    job = system.wait(lambda: _placed(system, f"{namespace}/seg"), 60,
                      "the views to show the placement")
    assert sorted(job["nodes"]) == sorted(seg.values())
    # `sluice queue` lists it; `sluice audit` says where it went and why (the block, the
    # segment, the other nodes busy with the first Job).
    queue = _cli(system, "queue")
    assert str(job["job_id"]) in queue
    audit = _cli(system, "audit", job["job_sluid"])
    (block,) = blocks
    assert "segments 0: " in audit and f"in {block}" in audit, audit
    assert "running job(s)" in audit, audit
    # kwok completes Job pods after a few seconds: the Sluice job ends with them.
    done = system.wait(lambda: _ended(system, f"{namespace}/seg"), 120, "the segment job to end")
    assert done["state"] == "COMPLETED", done
    assert done["exit_code"] == 0


def _pods_gone(kube: KubeCluster, namespace: str, job: str) -> bool:
    return not kube.core.list_namespaced_pod(namespace, label_selector=f"job-name={job}").items


def test_a_deleted_job_cancels_its_sluice_job_even_while_the_bridge_was_down(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    """``kubectl delete job`` is how a Kubernetes user ends a Job: its Sluice job ends
    CANCELLED and gives its nodes back, whether the bridge saw the pods go or was down then
    (its first list after the restart does not name them). Without this the job kept its
    nodes until its time limit. A node timeout of 60 s keeps the nodes up while the bridge,
    which heartbeats for them, is down."""
    start_bridged(system, kube_cluster, node_timeout_s=60)
    batch = kube_cluster.batch
    for name in ("seen", "unseen"):
        batch.create_namespaced_job(namespace, job_manifest(name, 2, pod_annotations=LONG))
        system.wait(lambda name=name: _all_bound(kube_cluster, namespace, name, 2), 120,
                    f"the {name} Job's pods bound")
        system.wait(lambda name=name: _state(system, f"{namespace}/{name}") == "RUNNING", 60,
                    f"the {name} job running")

    batch.delete_namespaced_job("seen", namespace, propagation_policy="Background")
    seen = system.wait(lambda: _ended(system, f"{namespace}/seen"), 120,
                       "the deleted Job's Sluice job to end")
    assert seen["state"] == "CANCELLED", seen

    system.kill("bridge")
    batch.delete_namespaced_job("unseen", namespace, propagation_policy="Background")
    system.wait(lambda: _pods_gone(kube_cluster, namespace, "unseen"), 120,
                "the pods of the Job deleted while the bridge was down to go")
    assert _state(system, f"{namespace}/unseen") == "RUNNING"  # nobody told Sluice yet
    start_bridge(system, kube_cluster)
    unseen = system.wait(lambda: _ended(system, f"{namespace}/unseen"), 120,
                         "the Sluice job of the Job deleted unseen to end")
    assert unseen["state"] == "CANCELLED", unseen
    # Both gave their nodes back: every node idle again (the epilogs were reported).
    system.wait_nodes_idle(len(kube_cluster.nodes), timeout_s=60)


def test_a_bad_annotation_is_named_on_the_pods(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    start_bridged(system, kube_cluster)
    kube_cluster.batch.create_namespaced_job(namespace, job_manifest(
        "bad", 2, annotations={"sluice.dev/segment": "four"}))

    def reason() -> str | None:
        pods = kube_cluster.core.list_namespaced_pod(namespace).items
        for pod in pods:
            for cond in pod.status.conditions or []:
                if cond.type == "PodScheduled" and cond.status == "False":
                    return str(cond.reason)
        return None

    assert system.wait(reason, 60, "the pods to say why") == "BadAnnotation"
    assert bound_pods(kube_cluster, namespace, "bad") == {}


def test_pods_and_submitted_jobs_share_one_queue_by_priority(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    # Multifactor priority (job size weighed), so a nice value lowers a job below another.
    start_bridged(system, kube_cluster, "PriorityWeightJobSize: 100000\n")
    nodes = len(kube_cluster.nodes)
    # A filler Job holds every node for a while, so the two next jobs queue behind it.
    whole = {"sluice.dev/exclusive": "node"}  # whole nodes: no sharing beside the filler
    kube_cluster.batch.create_namespaced_job(namespace, job_manifest(
        "fill", nodes, annotations=whole,
        pod_annotations={"pod-complete.stage.kwok.x-k8s.io/delay": "40s",
                         "pod-complete.stage.kwok.x-k8s.io/jitter-delay": "41s"}))
    system.wait(lambda: _all_bound(kube_cluster, namespace, "fill", nodes), 120,
                "the filler's pods bound")
    # Pods of a Job with a lower priority (nice), then a `sluice submit` job of the same size.
    kube_cluster.batch.create_namespaced_job(namespace, job_manifest(
        "low", nodes, annotations={**whole, "sluice.dev/nice": "20000"}))
    system.wait(lambda: _state(system, f"{namespace}/low") == "PENDING", 60,
                "the pods' job queued")
    sluid = system.client.sluids.new()
    system.client.send(sluid, "SubmitJob", {"job_sluid": sluid, "spec": {
        "user": "alice", "name": "cli-job", "nodes_min": nodes, "exclusive": True,
        "command": ["true"],
        "workdir": "/tmp", "time_limit_s": 60}})

    def out_of_queue() -> dict[str, Any] | None:
        job = system.client.get(f"/v1/jobs/{sluid}")["job"]
        return None if job["state"] == "PENDING" else dict(job)

    started = system.wait(out_of_queue, 240, "the submitted job to start")
    assert started["state"] in ("RUNNING", "COMPLETING", "COMPLETED", "FAILED", "TIMEOUT")
    fill = _sluice_job(system, f"{namespace}/fill")
    assert fill["state"] == "COMPLETED", fill  # its pods ended: the nodes came free
    assert started["start_ms"] >= fill["end_ms"], (started, fill)
    low = _sluice_job(system, f"{namespace}/low")
    assert low["state"] == "PENDING", low
    assert bound_pods(kube_cluster, namespace, "low") == {}


def test_a_not_ready_node_requeues_an_expedite_job_and_its_pods_are_bound_again(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    start_bridged(system, kube_cluster, EXPEDITE)
    kube_cluster.batch.create_namespaced_job(namespace, job_manifest(
        "exp", 2, annotations={"sluice.dev/requeue": "expedite"}, pod_annotations=LONG))
    first = system.wait(lambda: _all_bound(kube_cluster, namespace, "exp", 2), 120,
                        "the Job's 2 pods bound")
    victim = sorted(first.values())[0]
    kube_cluster.core.patch_node(victim, {"metadata": {"labels": {NOT_READY: "true"}}})
    try:
        def rebound() -> dict[str, str] | None:
            now = bound_pods(kube_cluster, namespace, "exp")
            fresh = {p: n for p, n in now.items() if p not in first}
            return now if len(now) == 2 and fresh and victim not in now.values() else None

        again = system.wait(rebound, 180, "the pods bound again on healthy nodes")
        assert victim not in again.values()
        job = system.wait(lambda: _rerun(system, f"{namespace}/exp"), 60,
                          "the views to show the second run")
        assert job["state"] in ("RUNNING", "PENDING"), job
    finally:  # kwok's node-initialize stage makes it Ready again (it runs last in this file)
        kube_cluster.core.patch_node(victim, {"metadata": {"labels": {NOT_READY: None}}})


def test_a_namespaces_user_owns_its_jobs_and_a_pod_cannot_claim_another(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    """The Namespace's ``sluice.dev/user`` names whose job a pod becomes; a ``sluice.dev/user``
    on the Job or its pods is ignored: pod creators choose no owner. (This harness runs without
    credentials, so no submitter is recorded here; with a credential, tests/security and the
    core's tests check that only an administrator may submit for another user and that the
    JobQueued names it.)"""
    kube_cluster.core.patch_namespace(
        namespace, {"metadata": {"annotations": {"sluice.dev/user": "alice"}}})
    start_bridged(system, kube_cluster)
    kube_cluster.batch.create_namespaced_job(namespace, job_manifest(
        "owned", 1, annotations={"sluice.dev/user": "mallory"},
        pod_annotations={"sluice.dev/user": "mallory"}))
    system.wait(lambda: _all_bound(kube_cluster, namespace, "owned", 1), 120,
                "the pod bound")
    job = system.wait(lambda: _placed(system, f"{namespace}/owned"), 60, "the views' job")
    assert job["user"] == "alice"
    ledger = [r.record for r in facts(system.settings, "JobQueued")
              if r.record["spec"]["name"] == f"{namespace}/owned"]
    assert [r["spec"]["user"] for r in ledger] == ["alice"]


def test_with_credentials_a_bridge_submit_for_lists_submits_for_the_namespaces_user(
        munge_system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    """AuthRequired on; the worker, the views and the test sign with munge (as root); the bridge
    with a JWT of its own user, ``sluice-bridge``, which is no administrator: ``NodeUsers`` lets
    it report for its nodes and ``SubmitFor`` submit for alice only. Its job for the alice
    namespace is alice's and the JobQueued names it; one for a namespace of bob's is refused
    (``UserMismatch``, the ledger names the bridge) and its pod stays unbound."""
    system = munge_system
    core = kube_cluster.core
    core.patch_namespace(namespace, {"metadata": {"annotations": {"sluice.dev/user": "alice"}}})
    other = f"{namespace}-bob"
    core.create_namespace({"metadata": {"name": other,
                                        "annotations": {"sluice.dev/user": "bob"}}})
    try:
        system.start("worker", "worker", "--loglevel", "info")
        system.start("projections", "projections")
        apply_config(system, "AuthRequired: true\nAuthNodeNames: ['kwok-node-*']\n"
                             "NodeUsers: [sluice-bridge]\nSubmitFor: {sluice-bridge: [alice]}\n")
        key = jwt_token.read_key(Path(system.settings.jwt_key))
        token = jwt_token.issue(key, "sluice-bridge", 3600, int(time.time()))
        system.start("bridge", "bridge", "--kubeconfig",
                     str(role_kubeconfig(kube_cluster, "bridge-rbac.yaml")),
                     "--heartbeat", "0.5",
                     env={"SLUICE_AUTH": "jwt", "SLUICE_JWT": token, "SLUICE_JWT_KEY": ""})
        system.wait_nodes_idle(len(kube_cluster.nodes), timeout_s=120)
        kube_cluster.batch.create_namespaced_job(namespace, job_manifest("signed", 1))
        kube_cluster.batch.create_namespaced_job(other, job_manifest("refused", 1))
        system.wait(lambda: _all_bound(kube_cluster, namespace, "signed", 1), 120,
                    "the pod bound")
        job = system.wait(lambda: _placed(system, f"{namespace}/signed"), 60, "the views' job")
        assert (job["user"], job["submitter"]) == ("alice", "sluice-bridge")
        ledger = [r.record for r in facts(system.settings, "JobQueued")
                  if r.record["spec"]["name"] == f"{namespace}/signed"]
        assert [(r["spec"]["user"], r["submitter"]) for r in ledger] == [
            ("alice", "sluice-bridge")]
        denied = system.wait(lambda: [r.record for r in facts(system.settings, "RequestDenied")
                                      if r.record["request"] == "SubmitJob"], 60,
                             "bob's job refused")
        assert [(d["reason"], d["requester"]) for d in denied] == [
            ("UserMismatch", "sluice-bridge")]
        assert bound_pods(kube_cluster, other, "refused") == {}
    finally:
        for item in kube_cluster.batch.list_namespaced_job(other).items:
            kube_cluster.batch.delete_namespaced_job(item.metadata.name, other,
                                                     propagation_policy="Background")
        core.delete_namespace(other)


def test_the_bridge_runs_only_signed_commands_and_its_pods_cannot_be_signalled(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str) -> None:
    """A KillRun written to node-commands by anyone but the worker (no signature) deletes no
    pod: the bridge checks each command as a node daemon does and reports the refusal
    (``NodeCommandRefused``, ``CommandUnsigned``). ``scancel -s`` of a job whose run is pods
    is refused by the core by name (``SignalUnsupported``): Kubernetes cannot signal them."""
    from confluent_kafka import Producer

    from schemas import encode
    from streams.topics import Topics

    start_bridged(system, kube_cluster)
    kube_cluster.batch.create_namespaced_job(namespace, job_manifest("kept", 1,
                                                                     pod_annotations=LONG))
    [(pod, node)] = system.wait(lambda: _all_bound(kube_cluster, namespace, "kept", 1), 120,
                                "the Job's pod bound").items()
    system.wait(lambda: _state(system, f"{namespace}/kept") == "RUNNING", 60, "the job running")
    job = _sluice_job(system, f"{namespace}/kept")
    node_sluid = system.client.get(f"/v1/nodes/{node}")["node"]["node_sluid"]
    forger = Producer({"bootstrap.servers": system.settings.bootstrap})
    forger.produce(Topics(system.settings).node_commands, encode("KillRun", {
        "job_sluid": job["job_sluid"], "run_sluid": job["run_sluid"], "node_sluid": node_sluid,
        "node_name": node, "reason": "TERMINATE", "issued_ms": int(time.time() * 1000)}),
        node_sluid.encode())
    assert forger.flush(30) == 0

    def refused() -> Any:
        return [f.record for f in facts(system.settings, "NodeCommandRefused")
                if f.record["run_sluid"] == job["run_sluid"]]

    [fact] = system.wait(refused, 60, "the forged KillRun refused")
    assert (fact["command"], fact["reason"], fact["name"]) == ("KillRun", "CommandUnsigned", node)
    assert pod in bound_pods(kube_cluster, namespace, "kept")  # not deleted
    assert _state(system, f"{namespace}/kept") == "RUNNING"

    env = {**os.environ, **system.settings.as_env()}
    done = subprocess.run([sys.executable, "-m", "cli.main", "cancel", "-s", "USR1",
                           str(job["job_id"])], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 1 and "SignalUnsupported" in done.stderr, done.stderr
    assert _state(system, f"{namespace}/kept") == "RUNNING"
    assert not [f for f in facts(system.settings, "RunSignalled")
                if f.record["job_sluid"] == job["job_sluid"]]
