"""Start and stop the local control plane: etcd, kube-apiserver, kube-controller-manager, kwok.

Everything listens on 127.0.0.1 only. etcd speaks plain HTTP on loopback; the API server
serves TLS with the certificates of :mod:`infra.kubernetes._certs` and authenticates clients
by certificate (RBAC authorization); the controller manager runs the Job, ReplicaSet,
garbage-collector and node-lifecycle controllers; kwok plays the kubelets of the fake nodes.
"""

from __future__ import annotations

import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from infra.kubernetes._build import binaries, ensure_built
from infra.kubernetes._certs import ensure_certs
from infra.kubernetes._errors import KubernetesSetupError
from infra.kubernetes._kubeconfig import write_kubeconfig
from infra.kubernetes._nodes import create_nodes
from infra.kubernetes._process import alive, launch, recorded, stop_all

__all__ = ["DEFAULT_PORT", "LocalCluster", "start", "stop"]

DEFAULT_PORT = 20712
"""The API server's port; etcd uses port-2 (clients) and port-1 (peers), the controller
manager port+1 and kwok port+2."""
SERVICE_RANGE = "10.0.0.0/24"


@dataclass(frozen=True, slots=True)
class LocalCluster:
    """A started control plane: its folder, API server address and admin kubeconfig."""

    folder: Path
    server: str
    kubeconfig: Path


def _ready(url: str, pki: Path) -> bool:
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    try:
        with urllib.request.urlopen(url, context=context, timeout=2) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _wait(folder: Path, name: str, check: object, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    pid = recorded(folder)[name]
    while time.monotonic() < deadline:
        if not alive(pid):
            tail = (folder / f"{name}.log").read_text(errors="replace").splitlines()[-15:]
            raise KubernetesSetupError(f"{name} exited at start; its log ends:\n"
                                       + "\n".join(tail))
        if callable(check) and check():
            return
        time.sleep(0.3)
    raise KubernetesSetupError(f"{name} was not ready within {timeout_s:.0f} s; "
                               f"see {folder / (name + '.log')}")


def _etcd_up(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
            return b'"true"' in answer.read()
    except (urllib.error.URLError, OSError):
        return False


def start(folder: Path, port: int = DEFAULT_PORT, nodes: int = 0, blocks: int = 1,
          build_log: Path | None = None, timeout_s: float = 240.0) -> LocalCluster:
    """Build what is missing, start the four processes, create ``nodes`` kwok nodes."""
    folder = folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    if any(alive(pid) for pid in recorded(folder).values()):
        raise KubernetesSetupError(f"a control plane already runs from {folder} "
                                   "(python -m infra.kubernetes stop --dir ...)")
    bins = ensure_built(build_log)
    pki = ensure_certs(folder / "pki")
    server = f"https://127.0.0.1:{port}"
    kubeconfig = write_kubeconfig(folder / "kubeconfig", server, pki, "admin")
    kcm_config = write_kubeconfig(folder / "controller-manager.kubeconfig", server, pki,
                                  "controller-manager")
    kwok_config = write_kubeconfig(folder / "kwok.kubeconfig", server, pki, "kwok")
    etcd_port, peer_port = port - 2, port - 1
    try:
        launch(folder, "etcd", [
            str(bins["etcd"]), "--name", "sluice-local", "--data-dir", str(folder / "etcd"),
            "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
            "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
            "--initial-cluster", f"sluice-local=http://127.0.0.1:{peer_port}",
            "--unsafe-no-fsync", "--quota-backend-bytes",
            str(2 * 1024**3), "--log-level", "warn",
        ])
        _wait(folder, "etcd", lambda: _etcd_up(etcd_port), timeout_s)
        launch(folder, "kube-apiserver", [
            str(bins["kube-apiserver"]), f"--etcd-servers=http://127.0.0.1:{etcd_port}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={port}", f"--cert-dir={folder / 'apiserver-certs'}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_RANGE}",
            "--authorization-mode=RBAC", "--allow-privileged=true", "--profiling=false",
            "--endpoint-reconciler-type=none", "--v=1",
        ])
        _wait(folder, "kube-apiserver", lambda: _ready(f"{server}/readyz", pki), timeout_s)
        launch(folder, "kube-controller-manager", [
            str(bins["kube-controller-manager"]), f"--kubeconfig={kcm_config}",
            f"--authentication-kubeconfig={kcm_config}",
            f"--authorization-kubeconfig={kcm_config}",
            "--bind-address=127.0.0.1", f"--secure-port={port + 1}",
            f"--cert-dir={folder / 'controller-manager-certs'}",
            f"--service-account-private-key-file={pki / 'sa.key'}",
            f"--root-ca-file={pki / 'ca.crt'}", "--leader-elect=false",
            "--use-service-account-credentials=true", "--profiling=false",
            "--controllers=*,-nodeipam,-service-lb-controller,-cloud-node-lifecycle-controller",
            "--v=1",
        ])
        launch(folder, "kwok", [
            str(bins["kwok"]), f"--kubeconfig={kwok_config}",
            f"--config={bins['kwok'].with_name('stages.yaml')}",
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            f"--server-address=127.0.0.1:{port + 2}", "--node-lease-duration-seconds=0",
            "--cidr=10.244.0.0/16", "--node-ip=127.0.0.1",
        ])
        _wait(folder, "kwok", lambda: True, 2.0)
        if nodes:
            create_nodes(kubeconfig, nodes, blocks)
    except BaseException:
        stop_all(folder)
        raise
    return LocalCluster(folder, server, kubeconfig)


def stop(folder: Path) -> list[str]:
    """Stop what :func:`start` started from ``folder`` (by PID); returns their names."""
    return stop_all(folder.resolve())


def built() -> bool:
    """True when every binary (and kwok's stage file) is in the cache."""
    paths = binaries()
    required = [p for p in paths if p != "kube-scheduler"]
    return all(paths[p].exists() for p in required) and \
        paths["kwok"].with_name("stages.yaml").exists()
