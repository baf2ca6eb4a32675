"""Authentication and authorization settings of the cluster configuration.

| key | default | meaning |
|---|---|---|
| ``AuthRequired`` | ``false`` | refuse every request that carries no verified credential |
| ``Administrators`` | ``[]`` | AdminLevel=Administrator (besides root and the service user) |
| ``AuthNodeNames`` | ``[]`` | glob patterns of node names that may register (with ``Nodes``) |
| ``NodeUsers`` | ``[]`` | users whose credential is a node credential (besides root/service) |
| ``SubmitFor`` | ``{}`` | user → the users (globs) it may submit jobs for, never root: the |
| | | Kubernetes bridge for its namespaces' users, a portal for its users (administrators may |
| | | submit for anyone, as root may use ``sbatch --uid``) |

``Operators`` (AdminLevel=Operator) stays under the scheduler settings. See docs/security.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

__all__ = ["AuthConfig"]


@dataclass(frozen=True, slots=True)
class AuthConfig:
    """Who must prove who they are, and who holds which level."""

    required: bool = False
    administrators: tuple[str, ...] = ()
    node_names: tuple[str, ...] = ()
    node_users: tuple[str, ...] = ()
    submit_for: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(submitter, the user globs it may submit for), sorted by submitter."""

    def may_submit_for(self, submitter: str, user: str) -> bool:
        """Whether ``submitter`` may submit a job for ``user`` (``SubmitFor``; never root)."""
        if user == "root":
            return False
        for name, patterns in self.submit_for:
            if name == submitter:
                return any(fnmatchcase(user, pattern) for pattern in patterns)
        return False
