"""What CLI commands share: sending requests and reading the views' HTTP API.

Every request goes out with a request id and a credential of the kind ``SLUICE_AUTH`` (or the
system-wide client configuration's ``AuthType``) names: ``munge`` (munged vouches for the
calling Unix user), ``jwt`` (``SLUICE_JWT``, or a short token the client signs itself when it
can read ``SLUICE_JWT_KEY``: the user who ran ``sluice up``) or ``none``. A refused request
becomes a ``RequestDenied`` fact; :meth:`Client.await_decision` finds it in the views.

Submitting is :meth:`Client.submit` (one job) or :meth:`Client.submit_many` (a burst, one
flush): each sends, then holds one ``GET /v1/decisions`` long poll (``projections.decisions``)
that the views answer the instant they fold the shard's decision, and returns a typed
:class:`Decision`. This module is the CLI's path, so it imports nothing heavy: no core, no
stream processor, only the codec's one schema it encodes.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.auth.signer import CredentialError, RequestSigner
from schemas import SluidGenerator, encode
from streams.clients import request_producer
from streams.settings import Settings
from streams.topics import Topics

__all__ = ["ApiError", "Client", "Decision", "RequestTooLargeError"]

DECISION_BATCH = 200
"""SLUIDs per ``GET /v1/decisions`` (the URL stays well under the API's 64 KiB line)."""


class ApiError(RuntimeError):
    """The views' API did not answer, or answered with an error."""


class ApiUnavailableError(ApiError):
    """The views' API does not answer at all (not started yet, or down)."""


class RequestTooLargeError(ApiError):
    """A request is larger than ``SLUICE_MAX_REQUEST_BYTES``; it was not sent."""


@dataclass(frozen=True)
class Decision:
    """What became of one submission: queued (a job id), rejected by the shard, refused by
    the intake (``DENIED``), or not decided in time (``UNKNOWN``)."""

    job_sluid: str
    state: str
    """The job's state (``PENDING``, ``RUNNING``…, ``REJECTED``), ``DENIED`` or ``UNKNOWN``."""
    job_id: int = 0
    reason: str = ""
    detail: str = ""
    tasks: int = 0
    """For a job array, the number of its tasks (``job_id`` is its first task's)."""
    row: dict[str, Any] = field(default_factory=dict)
    """The views' row of the job (empty when refused or unknown)."""

    @property
    def accepted(self) -> bool:
        """True when the shard queued the job."""
        return self.state not in ("REJECTED", "DENIED", "UNKNOWN")

    @classmethod
    def from_answer(cls, sluid: str, answer: dict[str, Any] | None) -> Decision:
        """The decision for one entry of a ``GET /v1/decisions`` answer."""
        if not answer:
            return cls(sluid, "UNKNOWN", detail="not decided in time")
        if "denial" in answer:
            denial = answer["denial"]
            return cls(sluid, "DENIED", reason=denial["reason"], detail=denial.get("detail", ""))
        job = answer["job"]
        return cls(sluid, job["state"], int(job.get("job_id") or 0), job.get("reason", ""),
                   job.get("detail", ""), int(answer.get("tasks", 0)), job)


class Client:
    """A user's handle on one Sluice system."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.topics = Topics(settings)
        self.sluids = SluidGenerator(settings.cluster_id)
        self._producer: Any = None
        self._signer = RequestSigner(settings)

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
            self._producer = request_producer(self.settings.bootstrap)

    def send_many(self, requests: Iterable[tuple[str, str, dict[str, Any]]]) -> None:
        """Produce ``(key, record name, record)`` requests and wait, once, until the broker
        has them all. Every request is encoded and checked before the first is produced: one
        too large (:class:`RequestTooLargeError`) or not encodable (``ValueError``) sends none.
        """
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
        self.connect()
        errors: list[str] = []
        for _name, value, key_bytes in encoded:
            while True:
                try:
                    self._producer.produce(
                        self.topics.requests, value, key_bytes,
                        headers=self.credential(value),
                        on_delivery=lambda err, _msg: errors.append(str(err)) if err else None,
                    )
                    break
                except BufferError:  # the local queue is full: let it drain, then go on
                    self._producer.poll(0.05)
        if self._producer.flush(30) or errors:
            names = sorted({name for name, _v, _k in encoded})
            raise ApiError(f"could not send {', '.join(names)}: "
                           f"{errors or 'broker did not acknowledge'}")

    def submit(self, spec: dict[str, Any], wait_s: float = 60.0) -> Decision:
        """Submit one job (a JobSpec record) and return the shard's decision about it."""
        return self.submit_many([spec], wait_s)[0]

    def submit_many(self, specs: Sequence[dict[str, Any]], wait_s: float = 60.0
                    ) -> list[Decision]:
        """Submit jobs in one burst (one flush) and return their decisions, in order."""
        sluids = [self.sluids.new() for _ in specs]
        self.send_many([(sluid, "SubmitJob", {"job_sluid": sluid, "spec": spec})
                        for sluid, spec in zip(sluids, specs, strict=True)])
        arrays = {sluid for sluid, spec in zip(sluids, specs, strict=True) if spec.get("array")}
        found = self.decisions(sluids, wait_s, arrays=arrays)
        return [Decision.from_answer(sluid, found.get(sluid)) for sluid in sluids]

    def wait_ended(self, sluid: str, timeout_s: float) -> Decision:
        """Wait until the job has ended (or the timeout: ``UNKNOWN``); its final decision."""
        found = self.decisions([sluid], timeout_s, ended=True)
        return Decision.from_answer(sluid, found.get(sluid))

    def decisions(self, sluids: Sequence[str], wait_s: float, ended: bool = False,
                  arrays: set[str] | frozenset[str] = frozenset()
                  ) -> dict[str, dict[str, Any] | None]:
        """``GET /v1/decisions`` (a long poll) for ``sluids``, in batches, until each is
        decided (with ``ended``: has ended) or ``wait_s`` has passed."""
        deadline = time.monotonic() + wait_s
        found: dict[str, dict[str, Any] | None] = dict.fromkeys(sluids)
        pending = list(sluids)
        while pending:
            left = max(deadline - time.monotonic(), 0.0)
            batch = pending[:DECISION_BATCH]
            wait = min(left, 55.0)  # below the views' limit, so a long wait is several polls
            query = urllib.parse.urlencode({
                "ids": ",".join(batch), "wait": f"{wait:.3f}",
                **({"until": "ended"} if ended else {}),
                **({"array": "1"} if arrays & set(batch) else {}),
            })
            try:
                answer = self.get(f"/v1/decisions?{query}", timeout_s=wait + 10)["decisions"]
            except ApiUnavailableError:  # the views are starting (or restarting): until the wait
                if time.monotonic() >= deadline:
                    raise
                time.sleep(min(0.2, max(deadline - time.monotonic(), 0.0)))
                continue
            for sluid in batch:
                found[sluid] = answer.get(sluid)
            pending = [s for s in pending if found[s] is None]
            if time.monotonic() >= deadline:
                break
        return found

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

    def get(self, path: str, timeout_s: float = 5.0) -> dict[str, Any]:
        """GET a path of the views' API."""
        try:
            headers = self._signer.api_headers(path.partition("?")[0])
        except CredentialError as exc:
            raise ApiError(str(exc)) from exc
        host, _, port = self.settings.api.rpartition(":")
        try:  # http.client, not urllib.request: a third of the import time, same protocol
            connection = http.client.HTTPConnection(host, int(port), timeout=timeout_s)
            try:
                connection.request("GET", path, headers=headers)
                answer = connection.getresponse()
                status, body = answer.status, answer.read()
            finally:
                connection.close()
        except (OSError, ValueError, http.client.HTTPException) as exc:
            raise ApiUnavailableError(
                f"the views' API at {self.settings.api} does not answer ({exc}); "
                "is the system up (sluice up)?"
            ) from exc
        try:
            payload = json.loads(body or b"{}")
        except ValueError:
            payload = {"error": f"HTTP {status}: {body[:200]!r}"}
        if status != 200:
            raise ApiError(payload.get("error", f"HTTP Error {status}"))
        return dict(payload)
