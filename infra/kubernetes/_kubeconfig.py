"""Kubeconfig files for the local control plane's clients (admin, controller manager, kwok)."""

from __future__ import annotations

from pathlib import Path

import yaml

__all__ = ["write_kubeconfig"]


def write_kubeconfig(path: Path, server: str, pki: Path, client: str) -> Path:
    """A kubeconfig for ``client`` (its cert and key under ``pki``) talking to ``server``."""
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "sluice-local",
        "clusters": [{"name": "sluice-local", "cluster": {
            "server": server, "certificate-authority": str(pki / "ca.crt")}}],
        "users": [{"name": client, "user": {
            "client-certificate": str(pki / f"{client}.crt"),
            "client-key": str(pki / f"{client}.key")}}],
        "contexts": [{"name": "sluice-local", "context": {
            "cluster": "sluice-local", "user": client}}],
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path
