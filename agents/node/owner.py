"""Who a job runs as on this node: its owner, resolved by name, or a named refusal.

The owner is the job's ``user`` in the signed ``LaunchRun`` (with ``AuthRequired`` the user a
credential proved at the intake). It is resolved with this host's user database (NSS: as Slurm,
the cluster's hosts must agree on names and uids) to a uid, a primary gid and the supplementary
groups (``os.getgrouplist``, what ``initgroups`` would set).

| reason | when |
|---|---|
| ``UnknownUser`` | the name is not in this host's user database |
| ``RootJobRefused`` | the owner is uid 0 and ``AllowRootJobs`` is off |
| ``NotDaemonUser`` | the daemon is not root: it can only run jobs of its own uid |
"""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass

__all__ = ["Owner", "OwnerRefusedError", "resolve_owner", "run_uids"]


class OwnerRefusedError(Exception):
    """The job cannot run as its owner here; ``reason`` is the named reason."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


@dataclass(frozen=True, slots=True)
class Owner:
    """A job's owner on this host, and whether the child must switch to it."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: str
    switch: bool  # False when the daemon already runs as this uid and is not root

    def spec(self) -> dict[str, object] | None:
        """What the supervisor needs to switch (None: no switch)."""
        if not self.switch:
            return None
        return {"uid": self.uid, "gid": self.gid, "groups": list(self.groups)}


def resolve_owner(name: str, allow_root: bool, daemon_uid: int | None = None) -> Owner:
    """The owner ``name`` on this host, or OwnerRefusedError with the named reason."""
    me = os.geteuid() if daemon_uid is None else daemon_uid
    try:
        entry = pwd.getpwnam(name) if name else None
    except KeyError:
        entry = None
    if entry is None:
        raise OwnerRefusedError("UnknownUser", f"user {name!r} is not known on this node")
    if entry.pw_uid == 0 and not allow_root:
        raise OwnerRefusedError("RootJobRefused", f"user {name!r} is uid 0 and AllowRootJobs is "
                                             "off on this node")
    if me not in (0, entry.pw_uid):
        raise OwnerRefusedError("NotDaemonUser", f"the node daemon runs as uid {me}, not root: "
                                            f"it cannot run jobs of {name!r} (uid {entry.pw_uid})")
    groups = tuple(sorted(set(os.getgrouplist(entry.pw_name, entry.pw_gid))))
    return Owner(entry.pw_name, entry.pw_uid, entry.pw_gid, groups, entry.pw_dir,
                 switch=me == 0)


def run_uids(name: str) -> frozenset[int]:
    """The real uids a run's processes have on this host: the daemon's own (its prolog and
    epilog) and its owner's, if this host knows the name (``agents.node.proctrack``: a run
    marker on a process of any other uid is not the run's)."""
    try:
        owner = {pwd.getpwnam(name).pw_uid} if name else set()
    except KeyError:
        owner = set()
    return frozenset({os.getuid(), *owner})
