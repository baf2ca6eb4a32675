"""Issue #12's attacks, on a system started with ``sluice up`` (real broker, real munged).

Each attack is made the way an attacker with plain Kafka access would (a producer, no
credential, one message) or as another Unix user (``runuser -u nobody``); each must have no
effect, and where the record reached the intake the ledger must show a ``RequestDenied``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agents.auth import jwt_token
from agents.auth.headers import AUTH_HEADER, REQUEST_ID_HEADER
from agents.auth.signer import RequestSigner
from cli.client import Client
from schemas import SluidGenerator, encode
from streams.clients import producer
from streams.settings import Settings
from streams.topics import Topics
from tests.e2e.harness import free_port
from tests.e2e.ledger import facts

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]

SITE = Path(__file__).resolve().parents[2]
PACKAGES = Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / (
    "site-packages")
HOUR_MS = 3_600_000
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"


@dataclass
class UpSystem:
    """A system ``sluice up`` started, and how to talk to it."""

    env: dict[str, str]
    home: Path
    public: Path  # a directory every user can read (the client conf, job output)

    @property
    def settings(self) -> Settings:
        return Settings.from_env(self.env)

    def sluice(self, *argv: str, as_user: str = "", extra: dict[str, str] | None = None,
               ) -> subprocess.CompletedProcess[str]:
        if as_user:  # another Unix user: only what the docs say (SLUICE_CONF), nothing of ours
            env = {"PATH": "/usr/bin:/bin", "SLUICE_CONF": str(self.public / "sluice.conf"),
                   "PYTHONPATH": f"{SITE}:{PACKAGES}", "HOME": "/nonexistent", **(extra or {})}
            argv_full = [RUNUSER, "-u", as_user, "--", "/usr/bin/python3", "-m", "cli.main",
                         *argv]
        else:
            env = {**self.env, **(extra or {})}
            argv_full = [sys.executable, "-m", "cli.main", *argv]
        return subprocess.run(argv_full, cwd=self.public, env=env, capture_output=True,
                              text=True, timeout=120, check=False)

    def job(self, ref: str) -> dict[str, Any]:
        return dict(Client(self.settings).get(f"/v1/jobs/{ref}")["job"])

    def wait(self, predicate: Callable[[], Any], what: str, timeout_s: float = 60) -> Any:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}")

    def denials(self, request: str, subject: str = "") -> list[dict[str, Any]]:
        return [f.record for f in facts(self.settings, "RequestDenied")
                if f.record["request"] == request
                and (not subject or f.record["subject_sluid"] == subject)]

    def raw(self, key: str, name: str, record: dict[str, Any],
            headers: list[tuple[str, bytes]] | None = None, topic: str = "") -> None:
        out = producer(self.settings.bootstrap)
        out.produce(topic or Topics(self.settings).requests, encode(name, record), key.encode(),
                    headers=headers or [])
        assert out.flush(30) == 0


@pytest.fixture(scope="module")
def up(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpSystem]:
    if shutil.which("munged") is None and not Path("/usr/sbin/munged").exists():
        pytest.skip("munged is not installed (Debian package 'munge')")
    if os.getuid() != 0:
        pytest.skip("runuser needs root")
    base = tmp_path_factory.mktemp("auth")
    public = Path(f"/tmp/auth-public-{base.parent.name}-{base.name}")  # nobody must read it
    public.mkdir(mode=0o777, exist_ok=True)
    public.chmod(0o777)
    unique = uuid.uuid4().hex[:10]
    env = {
        **os.environ, "KAFKA_BOOTSTRAP": kafka_bootstrap, "SLUICE_HOME": str(base / "home"),
        "SLUICE_TOPIC_PREFIX": f"sec{unique}", "SLUICE_CLUSTER": f"sec{unique}",
        "SLUICE_API": f"127.0.0.1:{free_port()}",
        "SLUICE_WORKER_METRICS": f"127.0.0.1:{free_port()}",
    }
    env.pop("SLUICE_AUTH", None)
    system = UpSystem(env, base / "home", public)
    try:
        started = system.sluice("up", "--nodes", "2", "--cpus", "4", "--mem", "2048")
        assert started.returncode == 0, started.stdout + started.stderr
        assert "AuthRequired is on" in started.stdout
        shutil.copy(system.home / "run" / "sluice.conf", public / "sluice.conf")
        (public / "sluice.conf").chmod(0o644)
        yield system
    finally:
        down = system.sluice("down")
        shutil.rmtree(public, ignore_errors=True)
        assert down.returncode == 0, down.stderr


def _running_job(up: UpSystem, *argv: str) -> dict[str, Any]:
    # as nobody: sluice up's nodes refuse jobs of uid 0 (AllowRootJobs is off)
    submitted = up.sluice("submit", "--parsable", *argv, "--", "sleep", "600",
                          as_user="nobody")
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    return up.wait(lambda: (j := up.job(job_id))["state"] == "RUNNING" and j, "job running")


def _held_root_job(up: UpSystem) -> dict[str, Any]:
    """A job of root's that stays pending (held): sluice up's nodes would refuse to run it."""
    submitted = up.sluice("submit", "--parsable", "-H", "--", "sleep", "600")
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    return up.wait(lambda: (j := up.job(job_id))["state"] == "PENDING" and j, "held job")


def test_a_raw_cancel_without_a_credential_is_denied_and_the_job_keeps_running(
    up: UpSystem,
) -> None:
    job = _running_job(up)
    up.raw(job["job_sluid"], "CancelJob", {"job_sluid": job["job_sluid"], "user": ""})
    denied = up.wait(lambda: up.denials("CancelJob", job["job_sluid"]), "a RequestDenied")
    assert denied[0]["reason"] == "Unauthenticated"
    time.sleep(1)
    row = up.job(job["job_sluid"])
    assert row["state"] == "RUNNING" and row["job_id"] == job["job_id"]
    assert row["nodes"] == job["nodes"]


def test_a_forged_exit_report_does_not_end_the_job(up: UpSystem) -> None:
    job = _running_job(up)
    node = Client(up.settings).get(f"/v1/nodes/{job['nodes'][0]}")["node"]
    report = {"job_sluid": job["job_sluid"], "run_sluid": job["run_sluid"],
              "node_sluid": node["node_sluid"], "node_name": node["name"], "exit_code": 0}
    up.raw(job["job_sluid"], "ReportJobExit", report)
    nobody_headers = _signed_as_nobody(up, "ReportJobExit", report)
    up.raw(job["job_sluid"], "ReportJobExit", report, headers=nobody_headers)
    denied = up.wait(lambda: len(up.denials("ReportJobExit", job["job_sluid"])) >= 2,
                     "two RequestDenied")
    assert denied
    reasons = {d["reason"] for d in up.denials("ReportJobExit", job["job_sluid"])}
    assert reasons == {"Unauthenticated", "NotNodeCredential"}
    assert up.job(job["job_sluid"])["state"] == "RUNNING"


def test_apply_config_and_node_registration_need_credentials(up: UpSystem) -> None:
    client = Client(up.settings)
    before = client.get("/v1/config")["config"]["cluster"]["digest"]
    nodes_before = {n["name"]: n["node_sluid"] for n in client.get("/v1/nodes")["nodes"]}
    sluids = SluidGenerator(up.settings.cluster_id)
    config_sluid, fake, again = sluids.new(), sluids.new(), sluids.new()
    up.raw(config_sluid, "ApplyConfig", {"config_sluid": config_sluid, "kind": "cluster",
                                         "text": "Operators: [mallory]\n", "source": "evil"})
    for sluid, name in ((fake, "node99"), (again, "node01")):
        up.raw(sluid, "RegisterNode", {"node_sluid": sluid, "name": name, "cpus": 64,
                                       "mem_mb": 1 << 20, "gpus": 8})
    up.wait(lambda: up.denials("ApplyConfig", config_sluid), "ApplyConfig denied")
    up.wait(lambda: len(up.denials("RegisterNode")) >= 2, "RegisterNode denied")
    assert client.get("/v1/config")["config"]["cluster"]["digest"] == before
    nodes_after = {n["name"]: n["node_sluid"] for n in client.get("/v1/nodes")["nodes"]}
    assert nodes_after == nodes_before


def test_a_user_cannot_change_a_pending_jobs_command(up: UpSystem) -> None:
    submitted = up.sluice("submit", "--parsable", "-H", "--", "true")
    assert submitted.returncode == 0, submitted.stderr
    job = up.wait(lambda: up.job(submitted.stdout.strip()), "held job")
    change = {"job_sluid": job["job_sluid"], "user": "",
              "changes": {"command": json.dumps(["sh", "-c", "evil"])}}
    up.raw(job["job_sluid"], "UpdateJob", change)
    headers = RequestSigner(up.settings).headers(encode("UpdateJob", change))
    up.raw(job["job_sluid"], "UpdateJob", change, headers=headers)  # even the owner, root
    up.wait(lambda: len(up.denials("UpdateJob", job["job_sluid"])) >= 2, "UpdateJob denied")
    reasons = {d["reason"] for d in up.denials("UpdateJob", job["job_sluid"])}
    assert reasons == {"Unauthenticated", "CommandImmutable"}
    assert up.job(job["job_sluid"])["command"] == ["true"]


def test_ticks_not_sealed_by_the_worker_move_no_clock(up: UpSystem) -> None:
    job = _running_job(up, "-t", "30:00")
    inbox = Topics(up.settings).shard_inbox
    ahead = int(time.time() * 1000) + HOUR_MS
    tick = {"shard": up.settings.shard_name(0), "time_ms": ahead}
    up.raw(up.settings.shard_name(0), "Tick", tick, topic=inbox)
    forged = [("sluice-origin", b"clock"), ("sluice-stamp", str(ahead).encode()),
              ("sluice-identity", b""), ("sluice-seal", b"0" * 64)]
    up.raw(up.settings.shard_name(0), "Tick", tick, headers=forged, topic=inbox)
    # a later request proves the shard has read past the ticks
    marker = _running_job(up)
    assert marker["state"] == "RUNNING"
    assert up.job(job["job_sluid"])["state"] == "RUNNING"
    latest = max(f.record["time_ms"] for f in facts(up.settings))
    assert latest < int(time.time() * 1000) + 60_000


def test_replayed_expired_malformed_and_moved_credentials_are_denied(up: UpSystem) -> None:
    submitted = up.sluice("submit", "--parsable", "-H", "--", "true")
    job = up.wait(lambda: up.job(submitted.stdout.strip()), "held job")
    sluid = job["job_sluid"]
    release = {"job_sluid": sluid, "user": ""}
    signed = RequestSigner(up.settings).headers(encode("HoldJob", {**release, "admin": True}))
    up.raw(sluid, "ReleaseJob", release, headers=signed)  # the credential of another request
    key = jwt_token.read_key(Path(up.settings.jwt_key))
    old = jwt_token.issue(key, "root", 60, int(time.time()) - 3600)
    up.raw(sluid, "ReleaseJob", release,
           headers=[(REQUEST_ID_HEADER, b"s0123456789AB"), (AUTH_HEADER, b"jwt " + old.encode())])
    up.raw(sluid, "ReleaseJob", release,
           headers=[(REQUEST_ID_HEADER, b"s0123456789AC"), (AUTH_HEADER, b"munge garbage")])
    hold = {"job_sluid": sluid, "user": "", "admin": False}
    hold_headers = RequestSigner(up.settings).headers(encode("HoldJob", hold))
    up.raw(sluid, "HoldJob", hold, headers=hold_headers)
    up.raw(sluid, "HoldJob", hold, headers=hold_headers)  # the same record again
    up.wait(lambda: len(up.denials("ReleaseJob", sluid)) >= 3, "three ReleaseJob denied")
    up.wait(lambda: up.denials("HoldJob", sluid), "the replayed HoldJob denied")
    reasons = sorted(d["reason"] for d in up.denials("ReleaseJob", sluid))
    assert reasons == ["CredentialExpired", "CredentialInvalid", "CredentialMismatch"]
    assert [d["reason"] for d in up.denials("HoldJob", sluid)] == ["CredentialReplayed"]
    assert up.job(sluid)["state"] == "PENDING"


def test_two_requests_that_drew_the_same_request_id_are_both_decided(up: UpSystem) -> None:
    """Request ids are SLUIDs each client mints with its own clock: two node daemons minting
    in the same millisecond drew the same id (1 in 512), and the intake refused the second
    report as CredentialReplayed, so a run never ended (docs/benchmarks.md, the lost exit).
    A replay is the same id with the same bytes; two different requests are both decided."""
    first, second = _held_root_job(up), _held_root_job(up)
    request_id = SluidGenerator(up.settings.cluster_id).new()
    for job in (first, second):
        cancel = {"job_sluid": job["job_sluid"], "user": ""}
        signer = RequestSigner(up.settings)
        signer.sluids = _Same(request_id)  # type: ignore[assignment]
        up.raw(job["job_sluid"], "CancelJob", cancel,
               headers=signer.headers(encode("CancelJob", cancel)))
    for job in (first, second):
        up.wait(lambda job=job: up.job(job["job_sluid"])["state"] == "CANCELLED",
                f"job {job['job_id']} cancelled")
        assert up.denials("CancelJob", job["job_sluid"]) == []


class _Same:
    """A SLUID generator that draws the same id every time (two clients that collided)."""

    def __init__(self, sluid: str) -> None:
        self.sluid = sluid

    def new(self) -> str:
        return self.sluid


def test_nobody_cannot_cancel_roots_job_and_is_told_why(up: UpSystem) -> None:
    job = _held_root_job(up)
    answer = up.sluice("cancel", str(job["job_id"]), as_user="nobody")
    assert answer.returncode != 0
    assert "NotOwner" in answer.stderr, answer.stderr
    assert "Traceback" not in answer.stderr
    time.sleep(1)
    assert up.job(job["job_sluid"])["state"] == "PENDING"
    queue = up.sluice("queue")
    assert str(job["job_id"]) in queue.stdout


def test_a_second_unix_user_submits_and_owns_the_job_whatever_user_env_says(up: UpSystem) -> None:
    answer = up.sluice("submit", "--parsable", "-W", "--", "true", as_user="nobody",
                       extra={"USER": "root", "LOGNAME": "root"})
    assert answer.returncode == 0, answer.stdout + answer.stderr
    job_id = answer.stdout.strip().splitlines()[0]
    shown = up.sluice("show", "job", job_id, as_user="nobody")
    assert shown.returncode == 0, shown.stderr
    assert up.job(job_id)["user"] == "nobody"
    assert "nobody" in shown.stdout


def _signed_as_nobody(up: UpSystem, name: str, record: dict[str, Any]) -> list[tuple[str, bytes]]:
    """Headers a real munge credential of user nobody gives ``record``."""
    script = (
        "import json,sys;from agents.auth.headers import client_headers;"
        "from schemas import encode;"
        f"v=encode({name!r},json.loads(sys.argv[1]));"
        f"h=client_headers(v,'s0NOBODY00000{int(time.time()) % 100:02d}','munge',"
        f"munge_socket={up.settings.munge_socket!r});"
        "print(json.dumps([[k,x.decode()] for k,x in h]))"
    )
    out = subprocess.run(
        [RUNUSER, "-u", "nobody", "--", "/usr/bin/python3", "-c", script, json.dumps(record)],
        env={"PYTHONPATH": f"{SITE}:{PACKAGES}", "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True, timeout=60, cwd="/tmp",
    )
    return [(k, v.encode()) for k, v in json.loads(out.stdout)]


def test_only_the_owner_and_operators_see_a_jobs_command_in_the_api(up: UpSystem) -> None:
    job = _held_root_job(up)
    mine = up.sluice("show", "job", str(job["job_id"]))
    assert "Command=sleep" in mine.stdout  # scontrol show job's layout
    theirs = up.sluice("show", "job", str(job["job_id"]), as_user="nobody")
    assert theirs.returncode == 0, theirs.stderr
    assert "Command=(null)" in theirs.stdout and "WorkDir=(null)" in theirs.stdout
    assert "UserId=root" in theirs.stdout
    import urllib.request

    with urllib.request.urlopen(f"http://{up.settings.api}/v1/jobs/{job['job_id']}") as answer:
        anonymous = json.loads(answer.read())["job"]
    assert "command" not in anonymous and anonymous["state"] == "PENDING"


def test_an_administrator_submits_for_a_user_and_the_job_runs_as_that_user(
    up: UpSystem,
) -> None:
    """``sluice submit --uid`` (sbatch's, root's only): root submits for nobody; the job is
    nobody's, runs as nobody and its JobQueued names root."""
    out = up.public / f"uid-{uuid.uuid4().hex[:8]}.out"
    answer = up.sluice("submit", "--parsable", "-W", "--uid", "nobody", "-D", str(up.public),
                       "-o", str(out), "--", "id", "-un")
    assert answer.returncode == 0, answer.stdout + answer.stderr
    job_id = answer.stdout.strip().splitlines()[0]
    assert out.read_text().strip() == "nobody"
    job = up.job(job_id)
    assert (job["user"], job["submitter"], job["state"]) == ("nobody", "root", "COMPLETED")
    shown = up.sluice("show", "job", job_id)
    assert "UserId=nobody" in shown.stdout and "Submitter=root" in shown.stdout, shown.stdout
    queued = [f.record for f in facts(up.settings, "JobQueued")
              if f.record["job_sluid"] == job["job_sluid"]]
    assert [(r["spec"]["user"], r["submitter"]) for r in queued] == [("nobody", "root")]


def test_a_user_cannot_submit_for_another_and_is_told_why(up: UpSystem) -> None:
    answer = up.sluice("submit", "--parsable", "--uid", "root", "--", "true", as_user="nobody")
    assert answer.returncode != 0
    assert "UserMismatch" in answer.stderr, answer.stderr
    assert "Traceback" not in answer.stderr
