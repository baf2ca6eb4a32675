"""Authorization: may this identity make this request? (pure; called by :func:`scheduler.decide`)

The rules, in order (docs/security.md):

1. a credential the intake refused (``Identity.denied``) → refused with that reason;
2. no credential while the configuration's ``AuthRequired`` is on → ``Unauthenticated``
   (a request about a job or run this shard does not know is left to its handler, which
   ignores it: requests by SLUID go to every shard);
   no credential while it is off → the legacy rules of each handler (the record's ``user``);
3. with a verified identity the record's own ``user`` must be empty or equal to it
   (``UserMismatch``); the request goes on carrying the verified user;
4. AdminLevel (Slurm's): root and the Sluice service user, and ``Administrators``, are
   administrators; ``Operators`` are operators. Users act on their own jobs only (cancel, hold,
   release, update, requeue, signal (a ``CancelJob`` with ``signal``), start steps); operators
   and administrators on all; a user ``SubmitFor`` lists for a job's owner may cancel (or
   signal) that job (and nothing else of it); an admin hold
   needs an operator; ``DrainNode``/``ResumeNode`` and the reservations' requests
   (``CreateReservation``, ``DeleteReservation``) need an operator; ``ApplyConfig`` an
   administrator (so the first configuration of an empty cluster comes from root or the
   service user);
5. nobody changes a job's command, batch script, working directory or environment (plain or
   sealed) after submission; only an operator sets a negative ``nice`` (Slurm's
   ``validate_job_create_req`` and ``_update_job``: a user may raise a job's nice, or lower it
   to 0, not below), in a submission, a test or an update (``NotOperator``); without a
   credential, by the record's user, as every legacy rule;
6. ``RegisterNode`` needs a node credential (root or the service user, a ``NodeUsers`` user,
   or a node JWT naming that node) and a name the configuration lists (``Nodes`` or
   ``AuthNodeNames``; with ``AuthRequired`` and neither set, no name is listed); a name
   registered by one identity (``Identity.registrant``: the node JWT, or munge user and host)
   may not be registered by another while that node is in service (``NodeIdentityChanged``;
   once it is DOWN a replacement host may take the name); run reports need a node credential
   of a node that runs the job's run (of the node they name when the job is unknown but that
   node is the shard's: a failed epilog or prolog drains it), a ``ReportCommandRefused`` one
   of the reporting node,
   and either the very identity that registered that node (``NotNodeCredential`` otherwise);
7. ``Tick``, ``NodeFailed``, ``NodeResponding``, ``NodeClockAhead`` and ``CloseCycle`` are
   internal: never accepted from the intake.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, replace
from typing import Any, Final

from scheduler.access.identity import Identity
from scheduler.jobs.refusals import RefuseSubmission
from scheduler.records import (
    ApplyConfig,
    CancelJob,
    CloseCycle,
    CreateReservation,
    DeleteReservation,
    DrainNode,
    HoldJob,
    NodeClockAhead,
    NodeFailed,
    NodeResponding,
    RegisterNode,
    ReleaseJob,
    ReportCommandRefused,
    ReportEpilog,
    ReportJobExit,
    ReportProlog,
    ReportStepExit,
    RequeueJob,
    ResumeNode,
    StartStep,
    SubmitJob,
    TestSubmitJob,
    Tick,
    UpdateJob,
)
from scheduler.shard.model import Job
from scheduler.shard.reasons import NodeState
from scheduler.shard.state import ShardState
from schemas.digits import ascii_integer

__all__ = ["Denial", "DenialReason", "authorize", "level_of"]

USER, OPERATOR, ADMINISTRATOR = 0, 1, 2
IMMUTABLE_FIELDS = frozenset({"command", "workdir", "env", "sealed_env", "user", "script"})
"""What no update changes, whoever asks: what the job runs and as whom (``sealed_env`` is the
environment a node opens: an operator who could replace it, with a box sealed anew to the nodes'
public key for the job's user, would run code as that user, ``LD_PRELOAD``)."""


class DenialReason:
    """Named reasons of ``RequestDenied`` (the text is the sentence a user reads)."""

    UNAUTHENTICATED: Final = "Unauthenticated"
    CREDENTIAL_EXPIRED: Final = "CredentialExpired"
    CREDENTIAL_REPLAYED: Final = "CredentialReplayed"
    CREDENTIAL_INVALID: Final = "CredentialInvalid"
    CREDENTIAL_MISMATCH: Final = "CredentialMismatch"
    AUTH_UNAVAILABLE: Final = "AuthUnavailable"
    RATE_LIMITED: Final = "RateLimited"
    """The intake refused the request: its user's rate-limit bucket was empty (retryable)."""
    USER_MISMATCH: Final = "UserMismatch"
    NOT_OWNER: Final = "NotOwner"
    NOT_OPERATOR: Final = "NotOperator"
    NOT_ADMINISTRATOR: Final = "NotAdministrator"
    NOT_NODE_CREDENTIAL: Final = "NotNodeCredential"
    NODE_NOT_LISTED: Final = "NodeNotListed"
    NOT_RUN_NODE: Final = "NotRunNode"
    NODE_IDENTITY_CHANGED: Final = "NodeIdentityChanged"
    NOT_INTERNAL: Final = "InternalRequest"
    IMMUTABLE: Final = "CommandImmutable"


@dataclass(frozen=True, slots=True)
class Denial:
    """Why a request is refused, and what it named."""

    reason: str
    detail: str
    subject_sluid: str = ""


R = DenialReason
_JOB_REQUESTS = (CancelJob, HoldJob, ReleaseJob, UpdateJob, RequeueJob, StartStep)
_REPORTS = (ReportJobExit, ReportProlog, ReportEpilog, ReportStepExit)
# (a RefuseSubmission is the intake's verdict on a submission or test it refused, marked by the
# intake alone: decided without an identity, as the clock's and health agent's requests)
_INTERNAL = (Tick, NodeFailed, NodeResponding, NodeClockAhead, CloseCycle, RefuseSubmission)
_SUBMISSIONS = (SubmitJob, TestSubmitJob)  # a test (sbatch --test-only) is authorized as one
_RESERVATIONS = (CreateReservation, DeleteReservation)  # scontrol create|update|delete resv


def level_of(state: ShardState, identity: Identity) -> int:
    """Slurm's AdminLevel of a verified identity: USER, OPERATOR or ADMINISTRATOR."""
    if identity.service or identity.user in state.config.auth.administrators:
        return ADMINISTRATOR
    if identity.user in state.config.scheduler.operators:
        return OPERATOR
    return USER


def authorize(state: ShardState, request: Any, identity: Identity) -> tuple[Any, Denial | None]:
    """The request to decide (carrying the verified user) and None, or the refusal."""
    subject = subject_of(state, request)
    if identity.denied:
        return request, Denial(identity.denied, identity.detail, subject)
    if isinstance(request, _INTERNAL):
        if identity.kind == "none":
            return request, None  # the shell accepts these only from the clock and health agents
        return request, Denial(R.NOT_INTERNAL, f"{type(request).__name__} is internal", subject)
    if not identity.authenticated:
        if isinstance(request, _SUBMISSIONS) and request.submitter:
            request = replace(request, submitter="")  # only a credential names a submitter
        if isinstance(request, RegisterNode):
            request = replace(request, registrant="")  # only a credential names a registrant
            bound = _bound_elsewhere(state, request.name, "")
            if bound is not None:
                return request, replace(bound, subject_sluid=subject)
        if not state.config.auth.required or _about_unknown(state, request):
            level, who = _claimed_level(state, request), _claimed_user(request)
            return request, (_nice_denial(request, level, who, subject)
                             or _admin_comment_denial(request, level, who, subject))
        return request, Denial(R.UNAUTHENTICATED, "a credential is required", subject)
    claimed = _claimed_user(request)
    if claimed and claimed != identity.user and not _submits_for(state, request, identity):
        detail = f"the record says user {claimed!r}, the credential proves {identity.user!r}"
        return request, Denial(R.USER_MISMATCH, detail, subject)
    denial = _check(state, request, identity)
    if denial is not None:
        return request, replace(denial, subject_sluid=subject)
    return _with_user(state, request, identity), None


def _check(state: ShardState, request: Any, identity: Identity) -> Denial | None:
    level = level_of(state, identity)
    who = identity.user
    if isinstance(request, UpdateJob):
        fixed = sorted(IMMUTABLE_FIELDS & set(request.changes))
        if fixed:
            return Denial(R.IMMUTABLE, f"{', '.join(fixed)} cannot change after submission")
    nice = _nice_denial(request, level, who) or _admin_comment_denial(request, level, who)
    if nice is not None:
        return nice
    if isinstance(request, _JOB_REQUESTS):
        if level >= OPERATOR:
            return None
        if isinstance(request, HoldJob) and request.admin:
            return Denial(R.NOT_OPERATOR, f"{who} is no operator: an admin hold needs one")
        foreign = [j for j in _targets(state, request.job_sluid) if j.spec.user != who]
        if foreign and not _cancels_for(state, request, identity):
            verb = ("signal" if isinstance(request, CancelJob) and request.signal
                    else type(request).__name__.removesuffix("Job").lower())
            return Denial(R.NOT_OWNER, f"{who} may not {verb} job {foreign[0].job_id} "
                                       f"of user {foreign[0].spec.user}")
        return None
    if isinstance(request, ApplyConfig) and level < ADMINISTRATOR:
        return Denial(R.NOT_ADMINISTRATOR, f"{who} is no administrator")
    if isinstance(request, (DrainNode, ResumeNode, *_RESERVATIONS)) and level < OPERATOR:
        return Denial(R.NOT_OPERATOR, f"{who} is no operator")
    if isinstance(request, RegisterNode):
        return _check_register(state, request, identity)
    if isinstance(request, _REPORTS):
        return _check_report(state, request, identity)
    if isinstance(request, ReportCommandRefused):
        if not is_node_credential(state, identity, request.node_name):
            return Denial(R.NOT_NODE_CREDENTIAL, f"{identity.user} holds no node credential "
                                                 f"for {request.node_name}")
        return _not_registrant(state, request.node_name, identity)
    return None


def _check_register(state: ShardState, req: RegisterNode, identity: Identity) -> Denial | None:
    if not is_node_credential(state, identity, req.name):
        return Denial(R.NOT_NODE_CREDENTIAL, f"{identity.user} holds no node credential "
                                             f"for {req.name}")
    config = state.config
    listed = config.node_named(req.name) is not None or any(
        fnmatch.fnmatchcase(req.name, pattern) for pattern in config.auth.node_names
    )
    if not listed and (config.auth.required or config.nodes or config.auth.node_names):
        return Denial(R.NODE_NOT_LISTED, f"node {req.name} is not in the cluster configuration "
                                         "(Nodes or AuthNodeNames)")
    return _bound_elsewhere(state, req.name, identity.registrant)


def _bound_elsewhere(state: ShardState, name: str, registrant: str) -> Denial | None:
    """The refusal when ``name`` is in service, registered by another identity."""
    sluid = state.node_by_name.get(name)
    node = state.nodes.get(sluid) if sluid is not None else None
    if node is None or not node.registrant or node.registrant == registrant:
        return None
    if node.state == NodeState.DOWN:
        return None  # a replacement host may take the name of a dead one
    who = registrant or "a registration without a credential"
    return Denial(R.NODE_IDENTITY_CHANGED,
                  f"node {name} is registered by {node.registrant}; {who} may not register it "
                  "while it is in service")


def _check_report(state: ShardState, req: Any, identity: Identity) -> Denial | None:
    """A run report needs the node credential of the node it names, whenever the job or that
    node is this shard's: a failed epilog or prolog drains the node it names even when the job
    is unknown (made up, or purged since). Only a report naming neither is another shard's."""
    job = state.jobs.get(req.job_sluid)
    if job is None and req.node_name not in state.node_by_name:
        return None
    if not is_node_credential(state, identity, req.node_name):
        return Denial(R.NOT_NODE_CREDENTIAL, f"{identity.user} holds no node credential "
                                             f"for {req.node_name}")
    if job is not None and req.node_name not in job.nodes:
        return Denial(R.NOT_RUN_NODE, f"{req.node_name} does not run job {job.job_id}")
    return _not_registrant(state, req.node_name, identity)


def _not_registrant(state: ShardState, name: str, identity: Identity) -> Denial | None:
    """The refusal of a node's report by a node credential other than the one that registered
    it (``NodeRegistered.registrant``: another host's munge credential, another ``NodeUsers``
    user, another node's JWT); a node registered without a credential binds none. Without it
    any node credential reported for every node: a ``NodeUsers`` daemon of one host could end,
    or fail, the runs of every other host."""
    sluid = state.node_by_name.get(name)
    node = state.nodes.get(sluid) if sluid is not None else None
    if node is None or not node.registrant or node.registrant == identity.registrant:
        return None
    return Denial(R.NOT_NODE_CREDENTIAL, f"node {name} is registered by {node.registrant}; "
                                         f"{identity.registrant} may not report for it")


def is_node_credential(state: ShardState, identity: Identity, name: str) -> bool:
    """Root or the service user, a ``NodeUsers`` user, or a node JWT for ``name``."""
    if identity.node:
        return identity.node == name
    return identity.service or identity.user in state.config.auth.node_users


def _targets(state: ShardState, job_sluid: str) -> list[Job]:
    job = state.jobs.get(job_sluid)
    if job is not None:
        return [job]
    return [state.jobs[s] for s in sorted(state.arrays.get(job_sluid, ())) if s in state.jobs]


def _about_unknown(state: ShardState, request: Any) -> bool:
    """A request about a job this shard does not have (another shard's, or gone)."""
    if isinstance(request, _JOB_REQUESTS):
        return not _targets(state, request.job_sluid)
    if isinstance(request, _REPORTS):  # a node of this shard's can be drained by one
        return request.job_sluid not in state.jobs and request.node_name not in state.node_by_name
    if isinstance(request, ReportCommandRefused):
        return request.node_sluid not in state.nodes
    return False


def _submits_for(state: ShardState, request: Any, identity: Identity) -> bool:
    """An administrator may submit a job for another user (Slurm's ``sbatch --uid``, which
    only root may use), and a user ``SubmitFor`` lists for that user (the Kubernetes bridge
    for its namespaces' users, a portal for its users): never for root."""
    if not isinstance(request, _SUBMISSIONS):
        return False
    return level_of(state, identity) >= ADMINISTRATOR or state.config.auth.may_submit_for(
        identity.user, request.spec.user)


def _cancels_for(state: ShardState, request: Any, identity: Identity) -> bool:
    """A user ``SubmitFor`` lists for the owners of every job a ``CancelJob`` names may cancel
    them: the Kubernetes bridge cancels the job of a gang whose pods were deleted, a portal
    what its users ask to cancel. Only cancel: holding, updating or requeueing another user's
    job still needs an operator."""
    if not isinstance(request, CancelJob):
        return False
    auth = state.config.auth
    targets = _targets(state, request.job_sluid)
    return bool(targets) and all(
        j.spec.user == identity.user or auth.may_submit_for(identity.user, j.spec.user)
        for j in targets)


def _nice_denial(request: Any, level: int, who: str, subject: str = "") -> Denial | None:
    """``NotOperator`` when a non-operator asks for a negative nice: a submission's (or
    test's) spec, or an update's new value (one that is no whole number is the handler's
    ``InvalidUpdate``). Slurm refuses it alike: ``Invalid nice value`` at submission,
    ``Access/permission denied`` at an update."""
    if level >= OPERATOR:
        return None
    if isinstance(request, _SUBMISSIONS):
        nice: int | None = request.spec.nice
    elif isinstance(request, UpdateJob) and "nice" in request.changes:
        nice = ascii_integer(request.changes["nice"].strip())
    else:
        return None
    if nice is None or nice >= 0:
        return None
    return Denial(R.NOT_OPERATOR, f"{who or 'a user'} is no operator: only an operator sets a "
                                  f"negative nice ({nice}); a user may raise it, or lower it "
                                  "to 0", subject)


def _admin_comment_denial(request: Any, level: int, who: str, subject: str = "") -> Denial | None:
    """``NotAdministrator`` when a non-administrator sets a job's ``AdminComment`` (submission,
    update): Slurm's ``_update_job`` takes it from root or SlurmUser (``validate_slurm_user``)."""
    if level >= ADMINISTRATOR:
        return None
    if isinstance(request, _SUBMISSIONS):
        asked = bool(request.spec.admin_comment)
    else:
        asked = isinstance(request, UpdateJob) and "admin_comment" in request.changes
    if not asked:
        return None
    return Denial(R.NOT_ADMINISTRATOR, f"{who or 'a user'} is no administrator: only an "
                                       "administrator sets AdminComment", subject)


def _claimed_level(state: ShardState, request: Any) -> int:
    """The AdminLevel of the user a request names, where no credential proves one (the
    legacy rules, ``AuthRequired`` off): root and ``Administrators``, then ``Operators``; no
    user at all is an agent's request, as the handlers read it (an operator's)."""
    claimed = _claimed_user(request)
    if not claimed:
        return OPERATOR
    if claimed == "root" or claimed in state.config.auth.administrators:
        return ADMINISTRATOR
    return OPERATOR if claimed in state.config.scheduler.operators else USER


def _claimed_user(request: Any) -> str:
    if isinstance(request, _SUBMISSIONS):
        return request.spec.user
    return str(getattr(request, "user", "") or "")


def _with_user(state: ShardState, request: Any, identity: Identity) -> Any:
    """The request as its handler must see it: the verified user (operators act as agents)."""
    if isinstance(request, RegisterNode):
        return replace(request, registrant=identity.registrant)
    if isinstance(request, _SUBMISSIONS):
        if request.spec.user in ("", identity.user):
            return replace(request, spec=replace(request.spec, user=identity.user),
                           submitter="")
        # another user's: authorize let it through only when _submits_for allowed it
        return replace(request, submitter=identity.user)
    if isinstance(request, (DrainNode, *_RESERVATIONS)):  # (only an operator's reaches here)
        return replace(request, user="", by=identity.user)  # named in the fact
    if not hasattr(request, "user"):
        return request
    if level_of(state, identity) >= OPERATOR or (
            _cancels_for(state, request, identity) and not _owns_all(state, request, identity)):
        return replace(request, user="")
    return replace(request, user=identity.user)  # the owner: named (a signal's requester)


def _owns_all(state: ShardState, request: Any, identity: Identity) -> bool:
    return all(j.spec.user == identity.user for j in _targets(state, request.job_sluid))


def subject_of(state: ShardState, request: Any) -> str:
    """The job, node or configuration SLUID a request names ("" if none)."""
    for name in ("job_sluid", "node_sluid", "config_sluid", "request_sluid"):
        value = getattr(request, name, "")
        if value:
            return str(value)
    name = getattr(request, "name", "")
    return state.node_sluid_by_name(name) if isinstance(name, str) and name else ""
