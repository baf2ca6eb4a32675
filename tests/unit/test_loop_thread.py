"""The worker's loops as app services (agents.loop_thread): one service class per loop, each
known to mode by its own qualified name (a class renamed after it was made crashed the worker
at start: mode keys a service class's tasks by the name it had when made)."""

from __future__ import annotations

import threading
from typing import Any

from agents.loop_thread import LoopService, install_loop


class _App:
    def __init__(self) -> None:
        self.services: list[type[Any]] = []

    def service(self, cls: type[Any]) -> type[Any]:
        self.services.append(cls)
        return cls


class _Loop:
    def __init__(self) -> None:
        self.stopping = threading.Event()

    def run(self) -> None:
        self.stopping.wait(5)


def test_each_loop_gets_a_service_class_mode_knows() -> None:
    app = _App()
    install_loop(app, "shard", _Loop)
    install_loop(app, "intake", _Loop)
    shard, intake = app.services
    assert issubclass(shard, LoopService) and issubclass(intake, LoopService)
    assert (shard.thread_name, intake.thread_name) == ("shard", "intake")
    ids = [cls._get_class_id() for cls in (shard, intake)]
    assert len(set(ids)) == 2
    assert all(class_id in (LoopService._tasks or {}) for class_id in ids)  # start() looks them up
    assert isinstance(shard.make(), _Loop)
