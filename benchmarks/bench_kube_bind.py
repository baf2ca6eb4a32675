"""Pods bound per second and pod created → bound latency: Sluice's bridge next to kube-scheduler.

Usage::

    .venv/bin/python -m infra.kubernetes build --with-scheduler     # once (cached)
    .venv/bin/python benchmarks/bench_kube_bind.py [--pods 1000] [--nodes 100] [--creators 8]

Starts the local control plane (etcd, kube-apiserver, kube-controller-manager, kwok; port
``--port``, default 20812, apart from the tests' 20712) with ``--nodes`` kwok nodes (32 CPUs,
256 GiB, 8 GPUs each, in 4 topology blocks), and a broker (``KAFKA_BOOTSTRAP`` or a local one).
Then, one scheduler at a time, on the same control plane:

1. **kube-scheduler** (built from k8s.io/kubernetes, same version as the API server, default
   profile, no leader election) schedules ``--pods`` bare pods of ``schedulerName:
   default-scheduler``;
2. **Sluice** (worker, projections and ``sluice bridge``) schedules the same pods with
   ``schedulerName: sluice``: each pod is one Sluice job (intake, decision, ledger, LaunchRun,
   Binding).

Each pod requests 1 CPU and 1 GiB, so all fit at once (3,200 CPUs on 100 nodes): the figures are
the schedulers' throughput, not the queue's. ``--creators`` threads create the pods as fast as
the API server takes them. One watch (started before the first pod) sees every pod: the time of
its ADDED event is "created", the first event that shows ``spec.nodeName`` is "bound" (both on
this process's clock). Printed per scheduler: pods bound per second (bound pods over first
created → last bound), created → bound p50 / p99 / max, and the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from broker import BenchBroker, machine_line
from kubernetes import client, watch
from kubernetes import config as kube_config

from infra.kubernetes import start, stop
from infra.kubernetes._build import binaries, ensure_built
from tests.e2e.harness import LocalSystem


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


class PodClock(threading.Thread):
    """One watch of a namespace's pods: when each was first seen and first seen bound."""

    def __init__(self, core: client.CoreV1Api, namespace: str) -> None:
        super().__init__(daemon=True)
        self.core, self.namespace = core, namespace
        self.created: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self.ready = threading.Event()
        self._stop = threading.Event()

    def run(self) -> None:
        version = self.core.list_namespaced_pod(self.namespace).metadata.resource_version
        self.ready.set()
        while not self._stop.is_set():
            stream: Any = watch.Watch().stream(
                self.core.list_namespaced_pod, self.namespace, resource_version=version,
                timeout_seconds=30, _request_timeout=60)
            for event in stream:
                now = time.perf_counter()
                pod = event["object"]
                version = pod.metadata.resource_version
                name = pod.metadata.name
                self.created.setdefault(name, now)
                if pod.spec.node_name:
                    self.bound.setdefault(name, now)
                if self._stop.is_set():
                    return

    def stop(self) -> None:
        self._stop.set()


def pod(name: str, scheduler: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"schedulerName": scheduler, "restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "bench:1", "resources": {
                         "requests": {"cpu": "1", "memory": "1Gi"}}}]}}


def measure(core: client.CoreV1Api, label: str, scheduler: str, pods: int, creators: int,
            timeout_s: float) -> None:
    namespace = f"bench-{label}"
    core.create_namespace({"metadata": {"name": namespace}})
    deadline = time.monotonic() + 60
    while not core.list_namespaced_service_account(namespace).items:
        if time.monotonic() > deadline:
            raise SystemExit(f"no default service account in {namespace}")
        time.sleep(0.2)
    clock = PodClock(core, namespace)
    clock.start()
    clock.ready.wait(30)
    before = load()
    began = time.perf_counter()
    with ThreadPoolExecutor(creators) as pool:
        list(pool.map(lambda i: core.create_namespaced_pod(namespace, pod(f"p{i:05d}",
                                                                          scheduler)),
                      range(pods)))
    created_s = time.perf_counter() - began
    deadline = time.monotonic() + timeout_s
    while len(clock.bound) < pods and time.monotonic() < deadline:
        time.sleep(0.2)
    clock.stop()
    latencies = [clock.bound[n] - clock.created[n] for n in clock.bound if n in clock.created]
    first = min(clock.created.values(), default=began)
    last = max(clock.bound.values(), default=first)
    rate = len(clock.bound) / max(last - first, 1e-9)
    print(f"{label}: {len(clock.bound)}/{pods} pods bound; created in {created_s:.1f} s "
          f"({pods / created_s:.0f} pods/s); {rate:.0f} pods bound/s "
          f"(first created → last bound {last - first:.1f} s)")
    if latencies:
        print(f"{label}: created → bound p50 {statistics.median(latencies) * 1000:.0f} ms, "
              f"p99 {pct(latencies, 0.99) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms")
    print(f"{label}: load {before} → {load()}")
    core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    core.delete_namespace(namespace)


def with_kube_scheduler(core: client.CoreV1Api, folder: Path, kubeconfig: Path,
                        args: argparse.Namespace) -> None:
    """Measure kube-scheduler (default profile, no leader election, no serving port)."""
    with (folder / "kube-scheduler.log").open("wb") as log:
        scheduler = subprocess.Popen(
            [str(binaries()["kube-scheduler"]), f"--kubeconfig={kubeconfig}",
             "--leader-elect=false", "--secure-port=0", "--v=1"],
            stdout=log, stderr=subprocess.STDOUT)
        try:
            time.sleep(3)
            measure(core, "kube-scheduler", "default-scheduler", args.pods, args.creators,
                    args.timeout)
        finally:
            scheduler.terminate()
            scheduler.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--creators", type=int, default=8)
    parser.add_argument("--port", type=int, default=20812)
    parser.add_argument("--timeout", type=float, default=600.0, help="per scheduler, seconds")
    parser.add_argument("--only", choices=("kube-scheduler", "sluice"), default=None)
    args = parser.parse_args()
    print(machine_line())
    ensure_built(say=True, optional=True)
    folder = Path(tempfile.mkdtemp(prefix="bench-kube-"))
    cluster = start(folder / "cp", port=args.port, nodes=args.nodes, blocks=4)
    loader: Any = kube_config
    api = loader.new_client_from_config(str(cluster.kubeconfig))
    api.configuration.connection_pool_maxsize = args.creators + 4
    core = client.CoreV1Api(api)
    broker = BenchBroker.start("bench-kube-") if args.only != "kube-scheduler" else None
    try:
        deadline = time.monotonic() + 120
        while sum(1 for n in core.list_node().items if any(
                c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])) \
                < args.nodes:
            if time.monotonic() > deadline:
                raise SystemExit("the kwok nodes did not turn Ready")
            time.sleep(0.5)
        print(f"control plane: {args.nodes} kwok nodes Ready; {args.pods} pods of 1 CPU, "
              f"{args.creators} creating threads")
        if args.only in (None, "kube-scheduler"):
            with_kube_scheduler(core, folder, cluster.kubeconfig, args)
        if broker is not None:
            system = LocalSystem(broker.bootstrap, folder / "sluice", f"benchkube{os.getpid()}")
            try:
                system.start("worker", "worker", "--loglevel", "warning")
                system.start("projections", "projections")
                system.start("bridge", "bridge", "--kubeconfig", str(cluster.kubeconfig),
                             "--heartbeat", "2")
                system.wait_nodes_idle(args.nodes, timeout_s=180)
                measure(core, "sluice", "sluice", args.pods, args.creators, args.timeout)
            finally:
                system.stop()
    finally:
        if broker is not None:
            broker.stop()
        stop(folder / "cp")
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
