"""Who is asking: the verified identity the intake forwards with a request.

The intake verifies a request's credential (munge or JWT, ``agents/auth``) and stamps the
identity it proved into the shard-inbox record; the shard runner hands the core the request
wrapped in :class:`Attributed`. A request that reaches :func:`scheduler.decide` bare (tests, the
simulator, a legacy caller) is :data:`ANONYMOUS`. The core never trusts a record's own ``user``
field when an identity is present (:mod:`scheduler.access.authz`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ANONYMOUS", "Attributed", "Identity"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Identity:
    """A requester as the intake proved it (``kind`` ``none``: no credential came with it).

    ``service`` marks root or the Sluice service user (the identity that runs the worker):
    always an administrator and a node credential. ``node`` is the node a node JWT names.
    ``denied`` is the named reason the intake refused the credential (expired, replayed,
    malformed, bound to other bytes); the core turns it into a ``RequestDenied``.
    """

    user: str = ""
    uid: int = -1
    gid: int = -1
    groups: tuple[str, ...] = ()
    kind: str = "none"
    node: str = ""
    service: bool = False
    denied: str = ""
    detail: str = ""
    host: str = ""
    """Where a munge credential was made (munged's origin IPv4 address); "" for a JWT."""

    @property
    def authenticated(self) -> bool:
        """True when a credential proved this identity."""
        return self.kind != "none" and not self.denied

    @property
    def registrant(self) -> str:
        """How a node registration by this identity is recorded ("" without a credential): a
        node JWT names its node; munge names the user and the host the credential came from."""
        if not self.authenticated:
            return ""
        if self.node:
            return f"{self.kind} node {self.node}"
        return f"{self.kind} {self.user}" + (f"@{self.host}" if self.host else "")


ANONYMOUS = Identity()
"""No credential: accepted only while the cluster's ``AuthRequired`` is off."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Attributed:
    """A request and who sent it (never on the wire: the shell builds it from inbox headers)."""

    request: Any
    identity: Identity
