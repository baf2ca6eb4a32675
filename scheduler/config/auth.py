"""Authentication and authorization settings of the cluster configuration.

| key | default | meaning |
|---|---|---|
| ``AuthRequired`` | ``false`` | refuse every request that carries no verified credential |
| ``Administrators`` | ``[]`` | AdminLevel=Administrator (besides root and the service user) |
| ``AuthNodeNames`` | ``[]`` | glob patterns of node names that may register (with ``Nodes``) |
| ``NodeUsers`` | ``[]`` | users whose credential is a node credential (besides root/service) |

``Operators`` (AdminLevel=Operator) stays under the scheduler settings. See docs/security.md.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AuthConfig"]


@dataclass(frozen=True, slots=True)
class AuthConfig:
    """Who must prove who they are, and who holds which level."""

    required: bool = False
    administrators: tuple[str, ...] = ()
    node_names: tuple[str, ...] = ()
    node_users: tuple[str, ...] = ()
