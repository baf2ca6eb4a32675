"""The views' lag is measured when a scrape asks, at most once an interval (issue 17): an idle
views process nobody scrapes makes no Kafka request for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from projections.metrics import LagMonitor
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
