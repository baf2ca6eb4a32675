"""What CLI commands share: sending requests and reading the views' HTTP API.

Every request goes out with a request id and a credential of the kind ``SLUICE_AUTH`` (or the
system-wide client configuration's ``AuthType``) names: ``munge`` (munged vouches for the
calling Unix user), ``jwt`` (``SLUICE_JWT``, or a short token the client signs itself when it
can read ``SLUICE_JWT_KEY``: the user who ran ``sluice up``) or ``none``. A refused request
becomes a ``RequestDenied`` fact; :meth:`Client.await_decision` finds it in the views.

Submitting one job is :meth:`Client.submit`: one ``POST /v1/requests`` that hands the
encoded, signed request to the views' relay (``projections.relay``), which produces it with
its warm producer and answers once the views fold the shard's decision; when the API does not
answer (or ``SLUICE_RELAY=0``) the client produces the same record itself and holds a
``GET /v1/decisions`` long poll (``projections.decisions``) instead. A burst is
:meth:`Client.submit_many` (its own producer, one flush, then the long poll). Either returns a
typed :class:`Decision`. This module is the CLI's path, so it imports nothing heavy: no core,
no stream processor, no Kafka client until it produces itself, only the codec's one schema it
encodes.
"""

from __future__ import annotations

import json
import os
import time
import urllib.parse
from collections.abc import Callable, Iterable, Sequence

from agents.auth.signer import CredentialError, RequestSigner
from cli.api_http import connect, exchange
from cli.back_off import RATE_LIMITED, back_off, retries
from cli.contact import Contact
from cli.interrupts import deferred_interrupt
from schemas.frozen_record import FrozenRecord
from schemas.sluid import SluidGenerator
from schemas.writer import encode
from streams.settings import Settings

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (issue 17)
if TYPE_CHECKING:
    from typing import Any

    from streams.topics import Topics

__all__ = ["SLUID_TRIES", "ApiError", "Client", "Decision", "NoSuchJobError",
           "RequestTooLargeError",
           "SystemUnreachableError", "new_nonce", "request_subject"]

_set = object.__setattr__

DECISION_BATCH = 200
"""SLUIDs per ``GET /v1/decisions`` (the URL stays well under the API's 64 KiB line)."""
PATIENT_POLL_S = 5.0
"""How often a patient wait (``sbatch --wait``) asks views that do not answer again, once the
system counts as gone (``cli.contact``)."""
SLUID_TRIES = 5
"""Submissions of one job at most: the first, and one under a new SLUID each time another
client's submission turned out to hold the SLUID (``SluidInUse``: 1/512 for two clients that
mint in the same millisecond, so a fifth try is already a 1 in 10^13 event)."""
BUSY_RETRY_S = 1.0
WALK_WAIT_S = 60.0
"""How long a command that reads the whole history (sacct, sreport, ``scontrol show job``)
asks again while the views turn it away busy (one walk per user at a time)."""
"""How long a long poll waits after a busy answer of the views' API (its ``Retry-After``)."""


class ApiError(RuntimeError):
    """The views' API did not answer, or answered with an error."""


class ApiUnavailableError(ApiError):
    """The views' API does not answer at all (not started yet, or down)."""


class ApiBusyError(ApiUnavailableError):
    """The views' API turned the connection away unread (all its connections, or the caller's
    share of them, are taken): no answer yet; ask again after its ``Retry-After`` (1 s)."""


class SystemUnreachableError(ApiUnavailableError):
    """A waiting command has not heard the system for ``SLUICE_CONTACT_TIMEOUT`` seconds: its
    views' API does not answer, or no shard has cycled (``cli.contact``)."""


class NoSuchJobError(ApiError):
    """The views know no job by that id or SLUID (Slurm's ``Invalid job id specified``)."""


class RequestTooLargeError(ApiError):
    """A request is larger than ``SLUICE_MAX_REQUEST_BYTES``; it was not sent."""


TESTED = "TESTED"
"""The state of a test (``sbatch --test-only``) the shard says would be accepted."""


class Decision(FrozenRecord):
    """What became of one submission: queued (a job id), rejected by the shard, refused by
    the intake (``DENIED``), or not decided in time (``UNKNOWN``). A frozen record
    (schemas/frozen_record.py) whose attributes are in its ``__dict__``.

    ``state`` is the job's state (``PENDING``, ``RUNNING``…, ``REJECTED``), ``DENIED`` or
    ``UNKNOWN``; ``tasks``, for a job array, the number of its tasks (``job_id`` is its first
    task's); ``row`` the views' row of the job (empty when refused or unknown; None is {})."""

    __match_args__ = ("job_sluid", "state", "job_id", "reason", "detail", "tasks", "row")
    job_sluid: str
    state: str
    job_id: int
    reason: str
    detail: str
    tasks: int
    row: dict[str, Any]

    def __init__(self, job_sluid: str, state: str, job_id: int = 0,
                 reason: str = "", detail: str = "", tasks: int = 0,
                 row: dict[str, Any] | None = None) -> None:
        _set(self, "job_sluid", job_sluid)
        _set(self, "state", state)
        _set(self, "job_id", job_id)
        _set(self, "reason", reason)
        _set(self, "detail", detail)
        _set(self, "tasks", tasks)
        _set(self, "row", {} if row is None else row)

    @property
    def accepted(self) -> bool:
        """True when the shard queued the job."""
        return self.state not in ("REJECTED", "DENIED", "UNKNOWN")

    def sluid_taken(self, spec: dict[str, Any]) -> bool:
        """True when another submission holds the SLUID, so the job must go again under a new
        one: the shard refused it with ``SluidInUse``, or the job the views answer with (the
        one carrying this submission's nonce) is another user's. Only a client that read the
        nonce from the wire and submitted first could have made that so; this submission was
        then refused, and the other's job is never taken for this one."""
        if self.state == "REJECTED":
            return self.reason == "SluidInUse"
        owner, user = self.row.get("user"), spec.get("user")
        return bool(owner and user) and owner != user

    @classmethod
    def from_answer(cls, sluid: str, answer: dict[str, Any] | None) -> Decision:
        """The decision for one entry of a ``GET /v1/decisions`` answer."""
        if not answer:
            return cls(sluid, "UNKNOWN", detail="not decided in time")
        if "denial" in answer:
            denial = answer["denial"]
            return cls(sluid, "DENIED", reason=denial["reason"], detail=denial.get("detail", ""))
        if "dead_letter" in answer:  # the intake could not read it: it never reached the ledger
            letter = answer["dead_letter"]
            return cls(sluid, "DENIED", reason=letter["reason"],
                       detail="dead-lettered by the intake: "
                       f"{letter.get('detail') or letter.get('meaning') or ''}"
                       .rstrip(": "))
        if "test" in answer:  # sbatch --test-only: no job, the answer's row
            test = answer["test"]
            reason = test.get("reason", "")
            return cls(sluid, "REJECTED" if reason else TESTED, int(test.get("job_id") or 0),
                       reason, test.get("detail", ""), 0, test)
        job = answer["job"]
        return cls(sluid, job["state"], int(job.get("job_id") or 0), job.get("reason", ""),
                   job.get("detail", ""), int(answer.get("tasks", 0)), job)


class Client:
    """A user's handle on one Sluice system."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._topics: Topics | None = None
        self.sluids = SluidGenerator(settings.cluster_id)
        self._producer: Any = None
        self._kafka_log: Any = None
        self._signer = RequestSigner(settings)
        self.contact = Contact(settings.contact_timeout_s)
        """When the system was last heard (its views' answers): what waiting commands bound
        their wait by."""
        self.submitted: list[str] = []
        """The SLUIDs of the jobs this client has submitted (or was about to: a Ctrl-C inside
        a submission leaves its outcome unknown, and srun cancels them all)."""

    @property
    def topics(self) -> Topics:
        """The system's topic names (``streams.topics`` loads when first used: a ``sluice
        submit`` through the relay names none)."""
        if self._topics is None:
            from streams.topics import Topics

            self._topics = Topics(self.settings)
        return self._topics

    def send_record(self, key: str, request: Any) -> None:
        """Produce one typed request (``SubmitJob(...)``…) and wait until the broker has it."""
        from scheduler.records import as_record

        self.send(key, *as_record(request))

    def send(self, key: str, name: str, record: dict[str, Any]) -> None:
        """Produce one request to ``sluice.requests`` and wait until the broker has it.

        A request larger than the intake accepts (key + value, ``SLUICE_MAX_REQUEST_BYTES``)
        raises :class:`RequestTooLargeError` and is not sent.
        """
        self.send_many([(key, name, record)])

    def connect(self) -> None:
        """Build the producer now, so that its connection and metadata request run while
        the caller prepares what it sends (the first send then does not wait for them)."""
        if self._producer is None:
            from cli.kafka_log import quiet_logger
            from streams.clients import request_producer  # confluent_kafka: only when used

            # librdkafka's own lines are kept, not printed: the last one goes into the error
            logger, self._kafka_log = quiet_logger()
            self._producer = request_producer(self.settings.bootstrap, logger=logger)

    def send_many(self, requests: Iterable[tuple[str, str, dict[str, Any]]]) -> None:
        """Produce ``(key, record name, record)`` requests and wait, once, until the broker
        has them all. Every request is encoded and checked before the first is produced: one
        too large (:class:`RequestTooLargeError`) or not encodable (``ValueError``) sends none.
        """
        encoded = self._encode(requests)
        self._produce([(name, value, key, self.credential(value))
                       for name, value, key in encoded])

    def _encode(self, requests: Iterable[tuple[str, str, dict[str, Any]]]
                ) -> list[tuple[str, bytes, bytes]]:
        """``(name, value, key)`` of each request, each checked against the size limit."""
        limit = self.settings.max_request_bytes
        encoded = []
        for key, name, record in requests:
            value, key_bytes = encode(name, record), key.encode()
            size = len(value) + len(key_bytes)
            if size > limit:
                raise RequestTooLargeError(
                    f"the {name} is {size} bytes encoded, more than the limit of {limit} bytes "
                    "(SLUICE_MAX_REQUEST_BYTES); the intake would refuse it"
                )
            encoded.append((name, value, key_bytes))
        return encoded

    def _produce(self, signed: Sequence[tuple[str, bytes, bytes, list[tuple[str, bytes]]]]
                 ) -> None:
        """Produce ``(name, value, key, headers)`` records with this client's own producer."""
        self.connect()
        errors: list[str] = []
        with deferred_interrupt():  # a Ctrl-C inside librdkafka's calls garbles their errors
            for _name, value, key_bytes, headers in signed:
                while True:
                    try:
                        self._producer.produce(
                            self.topics.requests, value, key_bytes, headers=headers,
                            on_delivery=lambda err, _msg: errors.append(str(err)) if err else None,
                        )
                        break
                    except BufferError:  # the local queue is full: let it drain, then go on
                        self._producer.poll(0.05)
            unsent = self._producer.flush(30)
        if unsent or errors:
            names = sorted({name for name, _v, _k, _h in signed})
            why = f"{errors}" if errors else (
                f"the broker at {self.settings.bootstrap} did not acknowledge within 30 s")
            seen = self._kafka_log.last
            raise ApiError(f"could not send {', '.join(names)}: {why}"
                           + (f" (librdkafka: {seen})" if seen else ""))

    def submit(self, spec: dict[str, Any], wait_s: float = 60.0) -> Decision:
        """Submit one job (a JobSpec record) and return the shard's decision about it.

        Through the views' relay (``POST /v1/requests``: one HTTP exchange, the API's warm
        producer) unless ``SLUICE_RELAY=0``; straight to Kafka when the API does not answer
        or has no relay. The request and its credential are the same either way. When another
        client's submission holds the SLUID this client minted (:meth:`Decision.sluid_taken`),
        the job goes again under a new SLUID and nonce, up to :data:`SLUID_TRIES` times in all:
        the decision returned is always this job's own. A submission refused ``RateLimited``
        goes again after a back-off (:mod:`cli.back_off`), under a new SLUID.
        """
        if not self.settings.relay:
            return self.submit_many([spec], wait_s)[0]
        decision: Decision = self._backing_off(lambda left: self._submit_new(spec, left), wait_s)
        return decision

    def _submit_new(self, spec: dict[str, Any], wait_s: float) -> Decision:
        deadline = time.monotonic() + wait_s
        for _ in range(SLUID_TRIES):
            decision = self._submit_once(spec, max(deadline - time.monotonic(), 0.0))
            if not decision.sluid_taken(spec):
                break
        return decision

    def _backing_off(self, send: Any, wait_s: float) -> Any:
        """``send(wait_s)`` again, each time under a new SLUID, after a back-off while its
        answer is a ``RateLimited`` refusal (:mod:`cli.back_off`); the last answer. The time
        slept does not count against ``wait_s``."""
        refused, limit = 0, retries()
        deadline = time.monotonic() + wait_s
        while True:
            answer = send(max(deadline - time.monotonic(), 0.0))
            if _reason_of(answer) != RATE_LIMITED or refused >= limit:
                return answer
            refused += 1
            deadline += back_off(refused)

    def test_only(self, spec: dict[str, Any], wait_s: float = 60.0) -> Decision:
        """``sbatch --test-only``: send a ``TestSubmitJob`` of ``spec`` the way :meth:`submit`
        sends a job, and return the shard's answer: ``TESTED`` with the would-be job id and
        the planned start, nodes and CPUs in ``row`` (``start_ms``, ``nodes``, ``cpus``,
        ``partition``), or the refusal a submission would get (``REJECTED``, ``DENIED``), or
        ``UNKNOWN``. Nothing is queued. Refused ``RateLimited``, it goes again after a
        back-off (:mod:`cli.back_off`)."""
        decision: Decision = self._backing_off(
            lambda left: self._submit_once(spec, left, "TestSubmitJob"), wait_s)
        return decision

    def plan_starts(self, wait_s: float) -> dict[str, Any] | None:
        """``squeue --start``: send a ``PlanStarts`` (through the relay, else to Kafka, with
        this client's credential, as a submission) and return its decision from the views:
        ``{"starts": {"shards": {shard: answer}, "complete": bool}}``, ``{"denial": row}``, or
        None when no shard answered within ``wait_s`` (a worker or views of an older release
        never answer one). Raises :class:`ApiError` when it could not be sent. Refused
        ``RateLimited``, it goes again after a back-off (:mod:`cli.back_off`)."""
        answer: dict[str, Any] | None = self._backing_off(self._plan_starts_once, wait_s)
        return answer

    def plan_priorities(self, wait_s: float) -> dict[str, Any] | None:
        """``sprio``: a ``PlanPriorities``, sent and answered as :meth:`plan_starts`'s
        ``PlanStarts`` (``{"priorities": {"shards": …, "complete": bool}}``)."""
        answer: dict[str, Any] | None = self._backing_off(
            lambda left: self._plan_starts_once(left, "PlanPriorities"), wait_s)
        return answer

    def plan_shares(self, wait_s: float) -> dict[str, Any] | None:
        """``sshare``: a ``PlanShares``, sent and answered as :meth:`plan_starts`'s
        ``PlanStarts`` (``{"shares": {"shards": …, "complete": bool}}``)."""
        answer: dict[str, Any] | None = self._backing_off(
            lambda left: self._plan_starts_once(left, "PlanShares"), wait_s)
        return answer

    def _plan_starts_once(self, wait_s: float,
                          request: str = "PlanStarts") -> dict[str, Any] | None:
        sluid, nonce = self.sluids.new(), new_nonce()
        [(name, value, key)] = self._encode([(sluid, request,
                                              {"request_sluid": sluid, "nonce": nonce})])
        headers = self.credential(value)
        deadline = time.monotonic() + wait_s
        answer: Any = self._relay(key, value, headers, wait_s, False) if self.settings.relay \
            else _NOT_RELAYED
        if answer is _NOT_RELAYED:
            self._produce([(name, value, key, headers)])
        elif isinstance(answer, dict):
            return answer
        left = max(deadline - time.monotonic(), 0.0)
        return self.decisions([sluid], left, nonces={sluid: nonce})[sluid]

    def _submit_once(self, spec: dict[str, Any], wait_s: float,
                     request: str = "SubmitJob") -> Decision:
        """One submission (or test) of ``spec`` under a new SLUID and nonce, and its decision."""
        sluid, nonce = self.sluids.new(), new_nonce()
        if request == "SubmitJob":
            self.submitted.append(sluid)
        [(name, value, key)] = self._encode([(sluid, request,
                                              {"job_sluid": sluid, "spec": spec,
                                               "nonce": nonce})])
        headers = self.credential(value)
        deadline = time.monotonic() + wait_s
        arrays = {sluid} if spec.get("array") and request == "SubmitJob" else set()
        answer = self._relay(key, value, headers, wait_s, bool(arrays))
        if answer is _NOT_RELAYED:
            self._produce([(name, value, key, headers)])
        elif answer is not None:
            return Decision.from_answer(sluid, answer)
        # sent directly, or relayed without an answer yet: the long poll for the rest
        left = max(deadline - time.monotonic(), 0.0)
        try:
            found = self.decisions([sluid], left, arrays=arrays, nonces={sluid: nonce})
        except ApiUnavailableError as exc:  # sent: the job may be queued, its decision unread
            return Decision(sluid, "UNKNOWN", detail=str(exc))
        return Decision.from_answer(sluid, found[sluid])

    def submit_many(self, specs: Sequence[dict[str, Any]], wait_s: float = 60.0
                    ) -> list[Decision]:
        """Submit jobs in one burst (one flush) and return their decisions, in order. The
        jobs whose SLUID another client's submission holds go again, in a burst of their own,
        under new SLUIDs (up to :data:`SLUID_TRIES` bursts in all)."""
        deadline = time.monotonic() + wait_s
        decided: list[Decision] = []
        todo = list(range(len(specs)))
        sluid_tries, refused, limit = 0, 0, retries()
        while todo:
            found = self._submit_burst([specs[i] for i in todo],
                                       max(deadline - time.monotonic(), 0.0))
            if not decided:
                decided = found
            else:
                for i, decision in zip(todo, found, strict=True):
                    decided[i] = decision
            limited = [i for i in todo if _reason_of(decided[i]) == RATE_LIMITED]
            taken = [i for i in todo if decided[i].sluid_taken(specs[i])]
            sluid_tries += bool(taken)
            todo = sorted((taken if sluid_tries < SLUID_TRIES else []) + (
                limited if refused < limit else []))
            if limited and refused < limit:  # the refused part of the burst, after a back-off
                refused += 1
                deadline += back_off(refused)
        return decided

    def _submit_burst(self, specs: Sequence[dict[str, Any]], wait_s: float) -> list[Decision]:
        """One burst: each job under a new SLUID and nonce, one flush, then the long poll."""
        sluids = [self.sluids.new() for _ in specs]
        self.submitted.extend(sluids)
        nonces = {sluid: new_nonce() for sluid in sluids}
        self.send_many([(sluid, "SubmitJob", {"job_sluid": sluid, "spec": spec,
                                              "nonce": nonces[sluid]})
                        for sluid, spec in zip(sluids, specs, strict=True)])
        arrays = {sluid for sluid, spec in zip(sluids, specs, strict=True) if spec.get("array")}
        try:
            found = self.decisions(sluids, wait_s, arrays=arrays, nonces=nonces)
        except ApiUnavailableError as exc:  # sent: the jobs may be queued, decisions unread
            return [Decision(sluid, "UNKNOWN", detail=str(exc)) for sluid in sluids]
        return [Decision.from_answer(sluid, found.get(sluid)) for sluid in sluids]

    def _relay(self, key: bytes, value: bytes, headers: list[tuple[str, bytes]],
               wait_s: float, array: bool) -> Any:
        """``POST /v1/requests``: the decision (None: sent, not decided within the wait), or
        ``_NOT_RELAYED`` when the API does not answer or has no relay (nothing was sent)."""
        wait = min(wait_s, 55.0)  # below the relay's limit
        path = f"/v1/requests?wait={wait:.3f}{'&array=1' if array else ''}"
        http_headers = {RELAY_HEADERS[k]: v.decode("ascii") for k, v in headers
                        if k in RELAY_HEADERS}
        http_headers.update({"Sluice-Key": key.decode("ascii"),
                             "Content-Type": "application/octet-stream"})
        refused, limit = 0, retries()
        while True:
            try:
                status, payload = self._http("POST", path, http_headers, value, wait + 10)
            except _NotConnectedError:
                return _NOT_RELAYED
            except ApiUnavailableError:
                return None  # sent, no answer: the decision may still come (the long poll)
            if status != 429 or refused >= limit:
                break
            # over this user's budget at the relay: nothing was sent; Slurm's back-off, for
            # at least the relay's Retry-After
            refused += 1
            after = payload.get("retry_after_s")
            back_off(refused, float(after) if isinstance(after, int | float) else 1.0)
        if status == 404 or _busy(status, payload):  # no relay, or none free: nothing sent
            return _NOT_RELAYED
        if status != 200:
            raise ApiError(f"the views' relay refused the request: "
                           f"{payload.get('error', f'HTTP {status}')}")
        return payload.get("decisions", {}).get(key.decode())

    def wait_ended(self, sluid: str, timeout_s: float,
                   patient: Callable[[str], None] | None = None) -> Decision:
        """Wait until the job has ended (or the timeout: ``UNKNOWN``); its final decision.
        ``patient``: as in :meth:`decisions`."""
        found = self.decisions([sluid], timeout_s, ended=True, patient=patient)
        return Decision.from_answer(sluid, found.get(sluid))

    def decisions(self, sluids: Sequence[str], wait_s: float, ended: bool = False,
                  arrays: set[str] | frozenset[str] = frozenset(),
                  nonces: dict[str, int] | None = None,
                  patient: Callable[[str], None] | None = None,
                  ) -> dict[str, dict[str, Any] | None]:
        """``GET /v1/decisions`` (a long poll) for ``sluids``, in batches, until each is
        decided (with ``ended``: has ended) or ``wait_s`` has passed. ``nonces`` names the
        submissions by their nonces: the answer is each one's own decision, not another
        submission's under the same SLUID. A system silent for the contact timeout raises
        :class:`SystemUnreachableError`; with ``patient`` it is told why instead, and the wait
        goes on, polling every :data:`PATIENT_POLL_S` (Slurm's ``sbatch --wait`` retries for
        as long as its controller is away)."""
        deadline = time.monotonic() + wait_s
        found: dict[str, dict[str, Any] | None] = dict.fromkeys(sluids)
        pending = list(sluids)
        while pending:
            left = max(deadline - time.monotonic(), 0.0)
            batch = pending[:DECISION_BATCH]
            # below the views' limit, so a long wait is several polls; and no longer than the
            # system may stay silent, so a vanished one is noticed in time
            wait = min(left, 55.0, max(self.contact.left(), 1.0))
            query = urllib.parse.urlencode({
                "ids": ",".join(batch), "wait": f"{wait:.3f}",
                **({"until": "ended"} if ended else {}),
                **({"array": "1"} if arrays & set(batch) else {}),
                **({"nonces": ",".join(str(nonces.get(s, 0)) for s in batch)}
                   if nonces else {}),
            })
            try:
                answer = self.get(f"/v1/decisions?{query}", timeout_s=wait + 10)["decisions"]
            except ApiUnavailableError as exc:  # views starting, restarting or busy: until the wait
                if time.monotonic() >= deadline:
                    raise
                self._check_contact(patient)
                pause = PATIENT_POLL_S if self.contact.lost() else 0.2
                if isinstance(exc, ApiBusyError):  # its Retry-After: no herd of reconnects
                    pause = max(pause, BUSY_RETRY_S)
                time.sleep(min(pause, max(deadline - time.monotonic(), 0.0)))
                continue
            for sluid in batch:
                found[sluid] = answer.get(sluid)
            pending = [s for s in pending if found[s] is None]
            if time.monotonic() >= deadline:
                break
            if pending:
                self._check_contact(patient)
        return found

    def _check_contact(self, patient: Callable[[str], None] | None = None) -> None:
        """Once the system has been silent too long: raise :class:`SystemUnreachableError`,
        or tell ``patient`` why."""
        why = self.contact.lost()
        if why is None:
            return
        if patient is None:
            raise SystemUnreachableError(why)
        patient(why)

    def credential(self, value: bytes) -> list[tuple[str, bytes]]:
        """The request-id and credential headers for one request value."""
        try:
            return self._signer.headers(value)
        except CredentialError as exc:
            raise ApiError(str(exc)) from exc

    def denials(self, subject: str) -> list[dict[str, Any]]:
        """The refused requests the views keep about ``subject`` (a job or node SLUID)."""
        return list(self.get(f"/v1/denials/{subject}")["denials"])

    def await_decision(self, subject: str, request: str, before: set[str],
                       changed: Any = None, timeout_s: float = 10.0) -> dict[str, Any] | None:
        """Wait for a new refusal of ``request`` about ``subject`` (returned), or until
        ``changed()`` says the request took effect, or the timeout (None)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for denial in self.denials(subject):
                if denial["event_sluid"] not in before and denial["request"] in (request, ""):
                    return denial
            if changed is not None and changed():
                return None
            time.sleep(0.1)
        return None

    def get(self, path: str, timeout_s: float = 5.0, busy_wait_s: float | None = None
            ) -> dict[str, Any]:
        """GET a path of the views' API. A busy answer (its connections, or a walk of the
        whole history: ``projections.walk_gate``) is asked again after its ``Retry-After``
        for up to ``busy_wait_s`` (by default :data:`WALK_WAIT_S` for a walk of the history:
        sacct, sreport, ``scontrol show job``; none for the rest), then raised
        (:class:`ApiBusyError`)."""
        if busy_wait_s is None:
            busy_wait_s = WALK_WAIT_S if _walks_history(path) else 0.0
        deadline = time.monotonic() + busy_wait_s
        while True:
            try:
                headers = self._signer.api_headers(path.partition("?")[0])
            except CredentialError as exc:
                raise ApiError(str(exc)) from exc
            try:
                status, payload = self._http("GET", path, headers, None, timeout_s)
            except ApiUnavailableError as exc:
                self.contact.failed(str(exc))
                raise
            if not _busy(status, payload) or time.monotonic() + BUSY_RETRY_S > deadline:
                break
            time.sleep(BUSY_RETRY_S)
        if _busy(status, payload):  # no answer yet, as when the views restart: try again
            raise ApiBusyError(str(payload["error"]))
        if status != 200:
            raise ApiError(payload.get("error", f"HTTP Error {status}"))
        self.contact.answered(payload)
        return payload

    def job(self, ref: str) -> dict[str, Any]:
        """The views' row of one job, by the id or SLUID a user typed (``GET /v1/jobs/REF``,
        the reference quoted: it is one path segment); ApiError names a job there is not."""
        if not ref or ref in (".", ".."):
            raise NoSuchJobError(f"no job {ref!r}")
        try:
            row = self.get(f"/v1/jobs/{urllib.parse.quote(ref, safe='')}").get("job")
        except ApiUnavailableError:
            raise
        except ApiError as exc:
            if str(exc).startswith("no job "):
                raise NoSuchJobError(str(exc)) from exc
            raise
        if not isinstance(row, dict):
            raise NoSuchJobError(f"no job {ref}")
        return row

    def _http(self, method: str, path: str, headers: dict[str, str], body: bytes | None,
              timeout_s: float) -> tuple[int, dict[str, Any]]:
        """One request to the views' API: (status, JSON payload). Raises
        :class:`ApiUnavailableError` when there is no answer (``_NotConnectedError``, a
        subclass, when the request never reached the API)."""
        host, _, port = self.settings.api.rpartition(":")
        try:  # cli.api_http, not http.client: its email parser and ssl are a quarter of a call
            sock = connect(host.strip("[]"), int(port), timeout_s)
        except (OSError, ValueError) as exc:
            raise _NotConnectedError(self._unavailable(exc)) from exc
        try:
            status, text = exchange(sock, method, host, path, headers, body)
        except (OSError, ValueError) as exc:
            raise ApiUnavailableError(self._unavailable(exc)) from exc
        try:
            payload = json.loads(text or b"{}")
        except ValueError:
            payload = {"error": f"HTTP {status}: {text[:200]!r}"}
        return status, dict(payload)

    def _unavailable(self, exc: BaseException) -> str:
        return (f"the views' API at {self.settings.api} does not answer ({exc}); "
                "is the system up (sluice up)?")


_BUSY_PREFIX = "the API serves too many "
"""How the views' API words a connection it turned away unread (``projections.http``: all
its connections, or the caller's share of them, are taken): nothing of the request was read."""


def _walks_history(path: str) -> bool:
    """Whether ``GET path`` reads every job ever stored (``projections.walk_gate``)."""
    route, _, query = path.partition("?")
    route = route.rstrip("/")
    return route in ("/v1/history", "/v1/usage") or (
        route == "/v1/jobs" and "all=1" in query.split("&") and "array=" not in query)


def _busy(status: int, payload: dict[str, Any]) -> bool:
    """The API turned the connection away unread (a 503 before the request was read)."""
    return status == 503 and str(payload.get("error", "")).startswith(_BUSY_PREFIX)


def _reason_of(answer: Any) -> str:
    """The refusal reason of a :class:`Decision` or a ``plan_starts`` answer ("" if none)."""
    if isinstance(answer, Decision):
        return answer.reason if answer.state == "DENIED" else ""
    if isinstance(answer, dict) and isinstance(answer.get("denial"), dict):
        return str(answer["denial"].get("reason", ""))
    return ""


def request_subject(row: dict[str, Any], ref: str) -> str:
    """The SLUID a request about the job a user named ``ref`` (its views ``row``) is for: the
    array's when ``ref`` is an array's job id or SLUID, as Slurm's ``scancel 37`` cancels
    every task of array 37 (``37_2`` names that task alone), else the job's own."""
    array = str(row.get("array_job_sluid") or "")
    if array and int(row.get("array_task_id", -1)) >= 0 and (
            ref == array or (ref.isdecimal() and ref == str(row.get("array_job_id")))):
        return array
    return str(row["job_sluid"])


def new_nonce() -> int:
    """A submission's nonce: 63 random bits, never 0 (0 says "none" on the wire)."""
    return (int.from_bytes(os.urandom(8), "big") >> 1) or 1


class _NotConnectedError(ApiUnavailableError):
    """The API could not be reached: nothing of the request was sent."""


_NOT_RELAYED = object()
RELAY_HEADERS = {"sluice-request-id": "Sluice-Request-Id", "sluice-auth": "Sluice-Auth"}
"""The request's Kafka headers and the HTTP headers the relay takes them in
(``projections.relay``)."""

