"""The bridge while the API server is out of reach (a restart), on the real local control
plane: the bridge reaches it through a TCP proxy of the test's that is cut for a while. It
must not end, and what it could not do (a kill, a binding) is done once the server answers
(found by a red team: urllib3's errors ended the bridge)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.harness import LocalSystem
from tests.kubernetes.conftest import KubeCluster
from tests.kubernetes.harness import LONG, bound_pods, job_manifest, start_bridged

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.slow]


class CutProxy:
    """A TCP proxy to one address; ``cut()`` closes every connection and refuses new ones
    until ``restore()``, as an API server that restarts does."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.open = True
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.open:
                client.close()
                continue
            try:
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        self.open = False
        with self.lock:
            for s in self.sockets:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            self.sockets.clear()

    def restore(self) -> None:
        self.open = True

    def close(self) -> None:
        self.cut()
        self.listener.close()


@pytest.fixture
def system(kafka_bootstrap: str, tmp_path: Path, unique: str,
           kube_cluster: KubeCluster) -> Iterator[LocalSystem]:
    local = LocalSystem(kafka_bootstrap, tmp_path / "home", f"k8p{unique}")
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture
def proxied(kube_cluster: KubeCluster, tmp_path: Path) -> Iterator[tuple[KubeCluster, CutProxy]]:
    """The cluster as the bridge sees it: its kubeconfig's server through a CutProxy."""
    config = yaml.safe_load(kube_cluster.kubeconfig.read_text())
    server = config["clusters"][0]["cluster"]["server"]
    host, _, port = server.removeprefix("https://").rpartition(":")
    if host not in ("127.0.0.1", "localhost"):
        pytest.skip("the proxy keeps the API server's address only for a loopback server")
    proxy = CutProxy(host, int(port))
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
    path = tmp_path / "proxied.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    try:
        yield KubeCluster(path, kube_cluster.api, kube_cluster.nodes), proxy
    finally:
        proxy.close()


def test_the_bridge_outlives_an_api_server_out_of_reach_and_kills_its_run_after(
        system: LocalSystem, kube_cluster: KubeCluster, namespace: str,
        proxied: tuple[KubeCluster, CutProxy]) -> None:
    bridge_view, proxy = proxied
    start_bridged(system, bridge_view)
    kube_cluster.batch.create_namespaced_job(namespace, job_manifest("a", 2,
                                                                     pod_annotations=LONG))
    system.wait(lambda: len(bound_pods(kube_cluster, namespace, "a")) == 2, 120,
                "the pods bound")
    name = f"{namespace}/a"
    job = next(j for j in system.client.get("/v1/jobs?all=1")["jobs"] if j["name"] == name)
    proxy.cut()
    # Cancelled while the API server is out of reach: the KillRuns' pod deletions fail.
    system.client.send(job["job_sluid"], "CancelJob", {
        "job_sluid": job["job_sluid"], "user": "root", "reason": "scancel"})
    time.sleep(10)
    assert system.processes["bridge"].poll() is None, system.log_tail()
    proxy.restore()
    # Once it answers, the kills are done again: the run's pods deleted, the nodes free.
    system.wait(lambda: not bound_pods(kube_cluster, namespace, "a"), 120,
                "the cancelled run's pods deleted")
    system.wait_nodes_idle(len(kube_cluster.nodes), timeout_s=120)
    assert system.processes["bridge"].poll() is None
