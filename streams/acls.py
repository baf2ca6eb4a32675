"""The ACL table of a secured Sluice system, as confluent-kafka ``AclBinding``s.

One row per (principal, resource, operation); everything not listed is denied
(``allow.everyone.if.no.acl.found=false``). ``admin`` is a super-user and needs no row. The
table is built from :class:`~streams.settings.Settings` (topic prefix, cluster name), so each
system on a shared cluster gets its own. ``docs/security.md`` shows it for prefix ``sluice``.

Principals (``User:<name>``; the names are :data:`PRINCIPALS`, overridable per system):

* ``worker``: the faust worker, which hosts the intake, the clock, health *and* the shard
  scheduler (one process, so one principal holding those four roles' rows);
* ``views``: the projections process (views, metrics, notifications);
* ``node``: every node daemon;
* ``user``: the CLI of users (submitting goes through ``sluice.requests`` only).
"""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from streams.settings import Settings
from streams.topics import Topics

__all__ = ["ANONYMOUS", "PRINCIPALS", "AclRow", "acl_table", "bindings", "users_listener_table"]

PRINCIPALS = ("worker", "views", "node", "user")

_R, _W, _D, _C = "READ", "WRITE", "DESCRIBE", "CREATE"


@dataclass(frozen=True, slots=True, order=True)
class AclRow:
    """One allowed operation: ``principal`` may ``operation`` on ``kind`` ``name``."""

    principal: str
    kind: str  # TOPIC, GROUP, TRANSACTIONAL_ID
    pattern: str  # LITERAL or PREFIXED
    name: str
    operation: str
    why: str

    def binding(self) -> AclBinding:
        """The confluent-kafka binding of this row (host ``*``, ALLOW)."""
        return AclBinding(
            ResourceType[self.kind], self.name, ResourcePatternType[self.pattern],
            f"User:{self.principal}", "*", AclOperation[self.operation], AclPermissionType.ALLOW,
        )


def _topic(principal: str, name: str, ops: str, why: str, pattern: str = "LITERAL",
           kind: str = "TOPIC") -> list[AclRow]:
    return [AclRow(principal, kind, pattern, name, op, why) for op in ops.split(",")]


def acl_table(settings: Settings, names: dict[str, str] | None = None) -> list[AclRow]:
    """Every row for ``settings``' system; ``names`` renames principals (role → user name)."""
    who = {p: p for p in PRINCIPALS} | (names or {})
    t, p = Topics(settings), settings.prefix
    worker, views, node, user = who["worker"], who["views"], who["node"], who["user"]
    rw, r, w = f"{_R},{_W},{_D}", f"{_R},{_D}", f"{_W},{_D}"
    rows = [
        # users: submit, and watch job starts
        *_topic(user, t.requests, w, "submit/cancel/... requests"),
        *_topic(user, t.job_starts, r, "sluice watch"),
        *_topic(user, "sluice-watch-", _D, "sluice watch's readers (assign(), no commit: a "
                "commit makes a group, and a flood of them filled the broker's heap)", "PREFIXED",
                "GROUP"),
        # the worker: intake (requests -> shard inbox), clock and health (-> shard inbox)
        *_topic(worker, t.requests, r, "intake reads requests"),
        *_topic(worker, t.heartbeats, f"{_R},{_W},{_D}",
                "health reads heartbeats, and writes its probe (agents/health_watch.py, rule 2)"),
        *_topic(worker, t.shard_inbox, rw, "intake, clock, health write; scheduler reads"),
        *_topic(worker, t.dead_letters, w, "intake dead-letters bad records"),
        *_topic(worker, f"{p}-worker", _R, "faust's consumer group", "LITERAL", "GROUP"),
        *_topic(worker, f"{p}-worker-shards", _R,
                "the shard scheduler's inbox group (agents/shard_loop.py)", "LITERAL", "GROUP"),
        *_topic(worker, f"{p}-worker-intake", _R,
                "the intake's requests group (agents/intake_loop.py)", "LITERAL", "GROUP"),
        *_topic(worker, f"{p}-worker-health", _R,
                "the health agent's heartbeats group (agents/health_loop.py)", "LITERAL",
                "GROUP"),
        *_topic(worker, f"{p}-intake-progress", _R,
                "the intake's own progress (committed offsets, agents/intake_progress.py)",
                "LITERAL", "GROUP"),
        *_topic(worker, f"{p}-worker-", f"{_R},{_W},{_D},{_C}",
                "faust's own changelog and leader topics", "PREFIXED"),
        # the shard scheduler (in the worker): the only writer of the ledger and node commands
        *_topic(worker, t.events, rw, "scheduler writes facts; reads them back at recovery"),
        *_topic(worker, t.node_commands, w, "scheduler sends node commands"),
        *_topic(worker, f"{p}.shard.", w, "the shards' transactional ids", "PREFIXED",
                "TRANSACTIONAL_ID"),
        # node daemons: their commands in, registrations/reports and heartbeats out
        *_topic(node, t.node_commands, r, "node daemons read their commands"),
        *_topic(node, t.requests, w, "RegisterNode and run reports"),
        *_topic(node, t.heartbeats, w, "NodeHeartbeat"),
        *_topic(node, t.dead_letters, w, "a node command it cannot read (its DeadLetterWriter)"),
        # the views: read the ledger, publish job starts (and Slurm jobcomp topics)
        *_topic(views, t.events, r, "views fold the ledger"),
        *_topic(views, t.dead_letters, rw, "a ledger record they cannot read (DeadLetterWriter): "
                "refused, it stopped the views' process (red team); read: the requests' dead "
                "letters by SLUID (projections/dead_letter_index.py)"),
        *_topic(views, t.requests, w, "the API's relay (POST /v1/requests) forwards clients' "
                "signed requests; the intake checks their credentials"),
        *_topic(views, t.job_starts, rw, "notifications published (and re-read at start)"),
        *_topic(views, t.jobcomp_start, rw, "jobcomp/kafka job-start"),
        *_topic(views, t.jobcomp_finish, rw, "jobcomp/kafka job-completion"),
        *_topic(views, f"{p}.projections.", w, "the notifications' transactional id",
                "PREFIXED", "TRANSACTIONAL_ID"),
    ]
    # assign()-only readers (ledger reads, node daemons, CLI) still name a group
    rows += [AclRow(x, "GROUP", "LITERAL", "sluice-reader-unused", _D,
                    "assign()-only readers (no join, no commit)")
             for x in (worker, views, node, user)]
    return sorted(set(rows))


ANONYMOUS = "ANONYMOUS"


def users_listener_table(settings: Settings) -> list[AclRow]:
    """What ``ANONYMOUS`` may do: the principal of every client of the bundled secured broker's
    users' listener (PLAINTEXT, ``sluice up``). A request carries its own credential (munge or
    JWT), checked by the intake, so anyone may write ``requests``; they may read the ledger (a
    client waits there for its decision; ``sluice replay``), the job starts and the jobcomp
    starts (``sluice watch``), ``assign()``-only (DESCRIBE on their groups' names: no join, no
    commit). Nothing else: no other topic is writable and no system group joinable (the
    worker's, whose partitions a stranger would take). The TypeScript client's groups alone
    take joins and commits (kafkajs has no ``assign()``)."""
    t = Topics(settings)
    rows = [
        *_topic(ANONYMOUS, t.requests, f"{_W},{_D}", "requests (each signed by its user)"),
        *_topic(ANONYMOUS, t.events, f"{_R},{_D}", "a client's decision; sluice replay"),
        *_topic(ANONYMOUS, t.job_starts, f"{_R},{_D}", "job-start notifications"),
        *_topic(ANONYMOUS, t.jobcomp_start, f"{_R},{_D}", "sluice watch --jobcomp"),
        # assign()-only readers never join nor commit: DESCRIBE, not READ. With READ anyone
        # committed offsets (4 KiB of metadata each) into new groups under these names until
        # the broker's heap was full: it died (OutOfMemoryError) in 40 s (red team, 8 Dec 2026)
        *_topic(ANONYMOUS, "sluice-reader-unused", _D, "assign()-only readers (no commit)",
                "LITERAL", "GROUP"),
        *_topic(ANONYMOUS, "sluice-watch-", _D, "sluice watch's readers (assign(), no commit)",
                "PREFIXED", "GROUP"),
        *_topic(ANONYMOUS, "sluice-ts-client-", f"{_R},{_D},DELETE",
                "the TypeScript client's own groups (clients/ts)", "PREFIXED", "GROUP"),
    ]
    return sorted(set(rows))


def bindings(settings: Settings, names: dict[str, str] | None = None) -> list[AclBinding]:
    """The table as ``AclBinding``s, for ``AdminClient.create_acls``."""
    return [row.binding() for row in acl_table(settings, names)]
