"""What CLI commands share: sending requests and reading the views' HTTP API."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from schemas import SluidGenerator, encode
from streams.clients import producer
from streams.settings import Settings
from streams.topics import Topics

__all__ = ["ApiError", "Client"]


class ApiError(RuntimeError):
    """The views' API did not answer, or answered with an error."""


class Client:
    """A user's handle on one Sluice system."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.topics = Topics(settings)
        self.sluids = SluidGenerator(settings.cluster_id)
        self._producer: Any = None

    def send(self, key: str, name: str, record: dict[str, Any]) -> None:
        """Produce one request to ``sluice.requests`` and wait until the broker has it."""
        if self._producer is None:
            self._producer = producer(self.settings.bootstrap)
        errors: list[str] = []
        self._producer.produce(
            self.topics.requests, encode(name, record), key.encode(),
            on_delivery=lambda err, _msg: errors.append(str(err)) if err else None,
        )
        if self._producer.flush(30) or errors:
            raise ApiError(f"could not send {name}: {errors or 'broker did not acknowledge'}")

    def get(self, path: str, timeout_s: float = 5.0) -> dict[str, Any]:
        """GET a path of the views' API."""
        url = f"http://{self.settings.api}{path}"
        try:
            with urllib.request.urlopen(url, timeout=timeout_s) as answer:
                return dict(json.loads(answer.read()))
        except urllib.error.HTTPError as exc:
            body = json.loads(exc.read() or b"{}")
            raise ApiError(body.get("error", str(exc))) from exc
        except (urllib.error.URLError, OSError) as exc:
            raise ApiError(
                f"the views' API at {self.settings.api} does not answer ({exc}); "
                "is the system up (sluice up)?"
            ) from exc

    def wait_for_job(self, ref: str, timeout_s: float, done: bool = False) -> dict[str, Any]:
        """Poll until the job is known (or, with ``done``, has ended); return its row."""
        deadline = time.monotonic() + timeout_s
        delay = 0.05
        while True:
            try:
                job = self.get(f"/v1/jobs/{ref}")["job"]
                if not done or job["state"] not in {"PENDING", "RUNNING", "COMPLETING"}:
                    return dict(job)
            except ApiError as exc:
                if "no job" not in str(exc) and time.monotonic() > deadline:
                    raise
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {ref} did not {'end' if done else 'appear'} in time")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)
