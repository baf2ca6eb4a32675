"""The one error of infra.kubernetes: a piece could not be built, started or reached."""

from __future__ import annotations

__all__ = ["KubernetesSetupError"]


class KubernetesSetupError(RuntimeError):
    """The local control plane could not be built, started or reached (the message says why)."""
