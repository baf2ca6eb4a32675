"""The views' lag is measured when a scrape asks, at most once an interval (issue 17): an idle
views process nobody scrapes makes no Kafka request for it; and never under the views' lock."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from projections.metrics import FactMetrics, LagMonitor, MetricsRoutes
from projections.service import ProjectionService
from streams.settings import Settings


class _Reader:
    closed = False

    def close(self) -> None:
        self.closed = True


class _Counted(LagMonitor):
    def __init__(self, service: ProjectionService, clock: list[float]) -> None:
        super().__init__(service, interval_s=5.0, clock=lambda: clock[0])
        self.reader = self._reader = _Reader()  # no broker: measure() is replaced
        self.measured = 0

    def measure(self, reader: Any, topic: str) -> dict[int, int]:
        self.measured += 1
        return {0: self.measured}


def test_the_lag_is_measured_on_demand_and_at_most_once_an_interval(tmp_path: Path) -> None:
    clock = [100.0]
    monitor = _Counted(ProjectionService(Settings(home=tmp_path)), clock)
    assert monitor.measured == 0  # nothing until a scrape asks
    assert monitor.lag == {0: 1}
    clock[0] = 104.9
    assert monitor.lag == {0: 1}  # a measurement younger than the interval is served again
    assert monitor.measured == 1
    clock[0] = 105.0
    assert monitor.lag == {0: 2}
    monitor.stop()
    assert monitor.reader.closed
    clock[0] = 200.0
    assert monitor.lag == {0: 2}  # stopped: the last measurement, no request
    assert monitor.measured == 2


class _Slow(LagMonitor):
    """A broker that takes its time answering: measure() waits for ``answer``."""

    def __init__(self, service: ProjectionService) -> None:
        super().__init__(service, interval_s=5.0)
        self._reader = _Reader()
        self.asking, self.answer = threading.Event(), threading.Event()

    def measure(self, reader: Any, topic: str) -> dict[int, int]:
        self.asking.set()
        self.answer.wait(10)
        return {0: 7}


class _Routes:
    def __init__(self) -> None:
        self.handlers: dict[str, Callable[..., Any]] = {}

    def route(self, path: str, handler: Callable[..., Any]) -> None:
        self.handlers[path] = handler


def test_a_scrape_measures_the_lag_without_holding_the_views(tmp_path: Path) -> None:
    """The lag's broker round trips (2.7 s a scrape on a `sluice up` system) ran under the
    views' lock: every API answer, decision wait and fold waited behind each scrape (red
    team)."""
    service = ProjectionService(Settings(home=tmp_path))
    monitor = _Slow(service)
    api = _Routes()
    MetricsRoutes(service, FactMetrics(service.views), monitor).mount(api)
    for path in ("/metrics", "/metrics/sluice"):
        monitor.asking.clear()
        monitor.answer.clear()
        monitor._measured_at = None  # a fresh measurement for each route
        answers: list[Any] = []
        scrape = threading.Thread(target=lambda p=path, out=answers: out.append(
            api.handlers[p](p, {})))
        scrape.start()
        assert monitor.asking.wait(5)
        free = service.lock.acquire(timeout=1)
        if free:
            service.lock.release()
        monitor.answer.set()
        scrape.join(10)
        assert free, f"{path}: the views' lock was held while the lag was measured"
        status, _type, body = answers[0]
        assert status == 200
        assert b'sluice_projection_lag_records{ledger_partition="0"} 7' in body


class _CutOff(LagMonitor):
    """A consumer cut off for good (librdkafka#5301): every measurement with it fails."""

    def __init__(self, service: ProjectionService, clock: list[float]) -> None:
        from agents.group_watch import GroupWatch

        watch = GroupWatch("lag monitor", "unused:1", 60, probe=lambda: True,
                           clock=lambda: clock[0])
        super().__init__(service, interval_s=5.0, clock=lambda: clock[0], watch=watch)
        self.first = self._reader = _Reader()

    def measure(self, reader: Any, topic: str) -> dict[int, int]:
        if reader is self.first:
            raise RuntimeError("KafkaError{code=_TRANSPORT}")
        return {0: 3}


def test_a_cut_off_consumer_is_replaced_and_the_lag_measured_again(
    tmp_path: Path, monkeypatch: Any,
) -> None:
    """Before, the lag gauges kept the value measured before the stall for good."""
    from projections import metrics

    fresh = _Reader()
    monkeypatch.setattr(metrics, "consumer", lambda _bootstrap: fresh)
    clock = [100.0]
    monitor = _CutOff(ProjectionService(Settings(home=tmp_path)), clock)
    assert monitor.lag == {}
    clock[0] = 130.0
    assert monitor.lag == {}
    clock[0] = 161.0  # failing for 61 s while the broker answers a new client: replaced
    assert monitor.lag == {}
    clock[0] = 166.0
    assert monitor.lag == {0: 3}
    assert monitor.first.closed
