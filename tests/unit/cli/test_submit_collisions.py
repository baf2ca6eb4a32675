"""A client whose job SLUID another client's submission holds submits again under a new one and
is told its own job, whether through the relay, the long poll, or a burst (``submit_many``).

The system behind the client is the real core (``decide``/``evolve``), the real views and the
real ``GET /v1/decisions`` answer, in memory: only Kafka and HTTP are faked."""

from __future__ import annotations

import threading
import urllib.parse
from typing import Any

import pytest

from cli.client import SLUID_TRIES, Client, new_nonce
from projections.api_auth import Viewer
from projections.decisions import decisions
from projections.views import Views
from scheduler import ShardState, as_record, decide, evolve, from_record, initial_state
from schemas import decode, encode
from schemas.sluid import SluidGenerator
from streams.settings import Settings
from tests.unit.core.gwt import T0

SPEC: dict[str, Any] = {"user": "alice", "command": ["true"], "workdir": "/tmp"}


class System:
    """One shard and its views, deciding each request as it arrives."""

    def __init__(self) -> None:
        self.state: ShardState = initial_state("s0", 9)
        self.views = Views()
        self.lock = threading.RLock()
        self.folded = threading.Condition(self.lock)
        self.submitted: list[tuple[str, int]] = []

    def take(self, value: bytes) -> None:
        name, record = decode(value)
        if name == "SubmitJob":
            self.submitted.append((record["job_sluid"], record["nonce"]))
        for fact in decide(self.state, from_record(name, record), T0):
            self.state = evolve(self.state, fact)
            self.views.apply(*as_record(fact))

    def freshness(self) -> dict[str, Any]:
        return {}

    def answer(self, path: str) -> dict[str, Any]:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
        query["wait"] = ["0"]
        _status, payload = decisions(self, query, Viewer())  # type: ignore[arg-type]
        return payload

    def queued_jobs(self) -> list[tuple[int, int]]:
        return sorted((job.job_id, job.nonce) for job in self.state.jobs.values())


class FakeClient(Client):
    """The real client over :class:`System` instead of Kafka and the views' HTTP API."""

    def __init__(self, system: System, sluids: list[str], relay: bool = True) -> None:
        super().__init__(Settings(auth="none", relay=relay, cluster_id=3))
        self.system = system
        self.minted = list(sluids)  # the SLUIDs to mint first (a collision made on purpose)
        real = self.sluids
        self.sluids = type("Seam", (), {"new": lambda _s: self.minted.pop(0)
                                        if self.minted else real.new()})()

    def _produce(self, signed: Any) -> None:
        for _name, value, _key, _headers in signed:
            self.system.take(value)

    def _http(self, method: str, path: str, headers: dict[str, str], body: bytes | None,
              timeout_s: float) -> tuple[int, dict[str, Any]]:
        if method == "POST":  # the relay: produce, then the decision about this record
            assert body is not None
            self.system.take(body)
            nonce = decode(body)[1]["nonce"]
            key = headers["Sluice-Key"]
            return 200, self.system.answer(f"/v1/decisions?ids={key}&nonces={nonce}")
        return 200, self.system.answer(path)


def _taken_by_another(system: System, sluid: str, user: str = "alice") -> None:
    """Another client's submission, under ``sluid``, decided first."""
    system.take(encode("SubmitJob", {"job_sluid": sluid, "spec": {**SPEC, "user": user},
                                     "nonce": new_nonce()}))


@pytest.mark.parametrize("relay", [True, False], ids=["relay", "long-poll"])
def test_a_client_whose_sluid_is_taken_submits_again_and_is_told_its_own_job(
        relay: bool) -> None:
    system = System()
    clash = SluidGenerator(3).new()
    _taken_by_another(system, clash)  # the same spec: a parallel sbatch --wrap loop
    client = FakeClient(system, [clash], relay=relay)
    decision = client.submit(dict(SPEC))
    assert decision.accepted and decision.job_id == 2 and decision.job_sluid != clash
    assert [s for s, _n in system.submitted[1:]] == [clash, decision.job_sluid]
    own = system.submitted[-1][1]
    assert system.queued_jobs()[1] == (2, own)  # both jobs queued, each once
    assert len(system.queued_jobs()) == 2


def test_a_job_the_views_answer_for_another_user_is_not_taken_for_ours(
        monkeypatch: pytest.MonkeyPatch) -> None:
    system = System()
    clash, nonce = SluidGenerator(3).new(), 12345
    # mallory read alice's SLUID and nonce off the wire and submitted them first
    system.take(encode("SubmitJob", {"job_sluid": clash, "spec": {**SPEC, "user": "mallory"},
                                     "nonce": nonce}))
    nonces = iter([nonce])
    monkeypatch.setattr("cli.client.new_nonce", lambda: next(nonces, 0) or new_nonce())
    decision = FakeClient(system, [clash]).submit(dict(SPEC))
    assert decision.accepted and decision.job_sluid != clash
    assert decision.row["user"] == "alice" and decision.job_id == 2
    assert system.state.jobs[clash].spec.user == "mallory"  # hers, charged to her


def test_a_burst_resubmits_only_its_jobs_whose_sluid_was_taken() -> None:
    system = System()
    generator = SluidGenerator(3)
    clashes = [generator.new() for _ in range(2)]
    for sluid in clashes:
        _taken_by_another(system, sluid)
    client = FakeClient(system, [clashes[0], generator.new(), clashes[1]], relay=False)
    specs = [{**SPEC, "name": str(i)} for i in range(3)]
    found = client.submit_many(specs)
    assert [d.accepted for d in found] == [True, True, True]
    assert [d.row["name"] for d in found] == ["0", "1", "2"]
    assert not {d.job_sluid for d in found} & set(clashes)
    assert len({d.job_id for d in found}) == 3 and len(system.queued_jobs()) == 5


def test_an_array_whose_sluid_is_taken_goes_again() -> None:
    system = System()
    clash = SluidGenerator(3).new()
    _taken_by_another(system, clash)
    decision = FakeClient(system, [clash]).submit({**SPEC, "array": "0-2"})
    assert decision.accepted and decision.tasks == 3 and decision.job_sluid != clash


def test_the_tries_are_bounded_and_the_last_refusal_is_reported() -> None:
    system = System()
    generator = SluidGenerator(3)
    clashes = [generator.new() for _ in range(SLUID_TRIES)]
    for sluid in clashes:
        _taken_by_another(system, sluid)
    decision = FakeClient(system, clashes).submit(dict(SPEC))
    assert (decision.state, decision.reason) == ("REJECTED", "SluidInUse")
    assert len(system.submitted) == 2 * SLUID_TRIES


def test_a_nonce_is_63_random_bits_and_never_zero() -> None:
    nonces = {new_nonce() for _ in range(1000)}
    assert len(nonces) == 1000 and all(0 < n < 1 << 63 for n in nonces)
