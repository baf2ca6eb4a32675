"""The runs' lease of a node daemon cut off from the broker (``agents.node.fence``): pure, with
the times passed in, and the supervisor's side of it with real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from agents.health_watch import DEFAULT_TIMEOUT_S, heartbeat_interval_s
from agents.node.fence import (
    EARLIEST_DOWN_SHARE,
    FenceConfigError,
    HeartbeatLease,
    fence_interval_s,
    run_horizon_s,
)
from agents.node.proctrack import RunScope
from agents.node.supervised import Supervised
from tests.unit.node.procs import token, wait_count, wait_gone

FENCE_S = 7.0
BEAT_S = 10 / 3


def _lease(start: float = 100.0) -> HeartbeatLease:
    return HeartbeatLease(FENCE_S, start)


def test_the_fence_interval_is_shorter_than_the_earliest_down_by_a_fifth_of_the_timeout() -> None:
    fence = fence_interval_s(DEFAULT_TIMEOUT_S, heartbeat_interval_s(DEFAULT_TIMEOUT_S))
    assert fence == pytest.approx(7.0)
    assert EARLIEST_DOWN_SHARE * DEFAULT_TIMEOUT_S - fence == pytest.approx(2.0)


@pytest.mark.parametrize(("timeout_s", "heartbeat_s"), [(3.0, 1.5), (10.0, 5.0), (0.0, 1.0),
                                                        (10.0, 0.0)])
def test_a_heartbeat_too_slow_for_the_timeout_is_refused(timeout_s: float,
                                                          heartbeat_s: float) -> None:
    with pytest.raises(FenceConfigError):
        fence_interval_s(timeout_s, heartbeat_s)


def test_the_default_heartbeat_of_any_timeout_is_accepted() -> None:
    for timeout_s in (0.5, 2.0, 3.0, 10.0, 300.0):
        assert fence_interval_s(timeout_s, heartbeat_interval_s(timeout_s)) < timeout_s


def test_delivered_heartbeats_move_the_lease_to_their_send_time_plus_the_fence() -> None:
    lease = _lease()
    assert lease.grant(101.0) == pytest.approx(FENCE_S - 1)  # from the start
    lease.delivered(103.0)
    assert lease.grant(104.0) == pytest.approx(103.0 + FENCE_S - 104.0)
    lease.delivered(102.0)  # an older heartbeat's report, late: no step back
    assert lease.granted == pytest.approx(110.0)
    assert lease.lapsed_at is None


def test_each_run_lives_the_lease_plus_its_horizon_a_run_not_requeued_for_ever() -> None:
    lease = _lease()
    lease.delivered(103.0)
    for now in (104.0, 106.0, 109.9):  # sent, never delivered
        assert lease.grant(now) > 0
    assert lease.grant(110.0) <= 0
    assert lease.lapsed_at == pytest.approx(110.0)
    assert lease.expired(110.0, 0.0)  # an expedited job's run: fenced now
    assert not lease.expired(110.0 + 119.9, 120.0)  # a requeueable one: the requeue delay on
    assert lease.expired(110.0 + 120.0, 120.0)
    assert not lease.expired(10_000.0, None)  # a job not requeued: never


def test_a_late_delivery_moves_the_lease_of_the_runs_whose_deadline_has_not_passed() -> None:
    lease = _lease()
    assert lease.grant(108.0) <= 0 and lease.lapsed_at == pytest.approx(107.0)
    lease.delivered(106.0)  # sent before the lease ran out, delivered after
    assert lease.grant(108.5) == pytest.approx(106.0 + FENCE_S - 108.5)
    assert lease.lapsed_at is None
    assert not lease.expired(108.5, 120.0)


@pytest.mark.parametrize(("launch", "horizon"), [
    ({"restart_after_ms": 0}, 0.0), ({"restart_after_ms": 120_000}, 120.0),
    ({"restart_after_ms": -1}, None), ({}, 0.0), ({"restart_after_ms": "x"}, 0.0),
    ({"restart_after_ms": True}, 0.0)])
def test_a_runs_horizon_comes_from_its_launch_and_defaults_to_zero(launch: dict[str, object],
                                                                    horizon: float | None) -> None:
    assert run_horizon_s(launch) == horizon


def _beats_through_a_cut(cut: tuple[float, float]) -> list[float]:
    """A heartbeat every BEAT_S from 100 s; while the link is cut, they wait in the producer
    and are delivered when it is back (as librdkafka retries them); the daemon looks every
    0.25 s. Returns the times it was fenced at."""
    lease, queued, sent, now = _lease(), [], 100.0, 100.0
    fenced: list[float] = []
    while now < 160.0:
        if now >= sent:
            queued.append(sent)
            sent += BEAT_S
        if not cut[0] <= now < cut[1]:
            for beat in queued:
                lease.delivered(beat)
            queued = []
        if lease.grant(now) <= 0:
            fenced.append(now)
        now += 0.25
    return fenced


def test_a_cut_shorter_than_the_fence_less_a_heartbeat_fences_nothing() -> None:
    # a heartbeat is sent as the cut begins: the one before is the basis; the daemon looks
    # every 0.25 s
    assert _beats_through_a_cut((130.0, 130.0 + FENCE_S - BEAT_S - 0.3)) == []


def test_a_cut_as_long_as_the_fence_fences_until_a_heartbeat_gets_through_again() -> None:
    fenced = _beats_through_a_cut((130.0, 130.0 + FENCE_S))
    assert fenced, "never fenced"
    assert 130.0 < fenced[0] <= 130.0 + FENCE_S and fenced[-1] < 130.0 + FENCE_S + 0.5


def test_a_supervisor_kills_its_run_whole_when_its_lease_runs_out(tmp_path: Path) -> None:
    t = token()
    process = _start(["sh", "-c", f"( setsid env -i sleep {t} & ) ; sleep {t} & wait"],
                     tmp_path, fence_s=30.0, lease_s=30.0)
    wait_count(t, 2)
    began = time.monotonic()
    process.feed(1.0)  # the lease: 1 s left, far sooner than 30 s of silence
    assert process.wait(15) == 128 + signal.SIGKILL
    assert 0.9 <= time.monotonic() - began < 10
    assert wait_gone(t, 5) == []


def test_a_supervisor_fed_a_renewed_lease_lets_its_run_end_as_its_command_does(
        tmp_path: Path) -> None:
    process = _start(["sh", "-c", "sleep 2.5; exit 5"], tmp_path, fence_s=30.0, lease_s=1.0)
    deadline = time.monotonic() + 15
    while process.poll() is None and time.monotonic() < deadline:
        process.feed(1.0)  # each delivered heartbeat renews it
        time.sleep(0.2)
    assert process.wait(1) == 5


def test_a_run_started_on_a_spent_lease_is_killed_at_once(tmp_path: Path) -> None:
    process = _start(["sleep", "30"], tmp_path, fence_s=30.0, lease_s=0.0)
    assert process.wait(10) == 128 + signal.SIGKILL


def test_a_supervisor_adds_its_runs_horizon_to_every_lease(tmp_path: Path) -> None:
    process = _start(["sleep", "30"], tmp_path, fence_s=1.0, lease_s=0.0, horizon_s=1.5)
    began = time.monotonic()
    process.feed(0.0)  # the daemon's lease is spent: the run has its horizon left
    assert process.wait(15) == 128 + signal.SIGKILL
    assert 1.4 <= time.monotonic() - began < 10


def test_a_run_never_fenced_outlives_a_spent_lease_and_a_silent_lifeline(tmp_path: Path) -> None:
    process = _start(["sh", "-c", "sleep 2; exit 4"], tmp_path, fence_s=0.5, lease_s=0.0,
                     horizon_s=None)
    process.feed(0.0)
    assert process.wait(15) == 4


def _start(argv: list[str], tmp_path: Path, fence_s: float, lease_s: float,
           horizon_s: float | None = 0.0) -> Supervised:
    scope = RunScope("sL" + uuid.uuid4().hex[:12].upper())
    env = {**os.environ, "SLUICE_RUN_SLUID": scope.run_sluid}
    return Supervised.start(scope, argv, env, tmp_path, subprocess.DEVNULL,
                            subprocess.DEVNULL, tmp_path, fence_s=fence_s, lease_s=lease_s,
                            horizon_s=horizon_s)


def test_a_node_whose_heartbeat_is_too_slow_for_the_fence_refuses_to_start(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "SLUICE_HOME": str(tmp_path), "KAFKA_BOOTSTRAP": "127.0.0.1:1",
           "SLUICE_NODE_TIMEOUT": "3"}
    refused = subprocess.run(
        [sys.executable, "-m", "cli.main", "node", "--name", "n01", "--cpus", "1", "--mem", "64",
         "--heartbeat", "2"], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert refused.returncode == 2
    assert refused.stderr.startswith("sluice node: a heartbeat every 2 s is too slow for the "
                                     "node timeout of 3 s")
    assert "Traceback" not in refused.stderr
