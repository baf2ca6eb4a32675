"""Who reads the HTTP API: the same credentials as requests, and Slurm's ``PrivateData=jobs``.

A client may send ``Authorization: Bearer <JWT>`` (Slurm auth/jwt: HS256, ``sun``, ``exp``) or
``X-Sluice-Munge: <credential>`` whose payload is :func:`api_binding` of the path it asks for
(the ``sluice`` CLI does). A missing or invalid credential reads as nobody in particular. While
the cluster configuration has ``AuthRequired`` on, a job row shows its ``command`` and
``workdir`` only to its owner, to operators and administrators, and to root or the service
user; others see the rest of the row. ``--export`` values are never in the views at all.
"""

from __future__ import annotations

import logging
import os
import pwd
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.auth import jwt_token, munge
from streams.settings import Settings

__all__ = ["PRIVATE_FIELDS", "ApiViewer", "Viewer", "api_binding", "private_view"]

log = logging.getLogger(__name__)

PRIVATE_FIELDS = ("command", "workdir", "script", "output", "error", "comment", "mail_user")
MUNGE_HEADER = "X-Sluice-Munge"


def api_binding(path: str) -> bytes:
    """The MUNGE payload of an API read of ``path``."""
    return f"sluice-api/1 GET {path}".encode()


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who asked (``user`` "" when unknown) and whether they are root or the service user."""

    user: str = ""
    service: bool = False


class ApiViewer:
    """Checks an API request's credential."""

    def __init__(self, settings: Settings) -> None:
        self.munge_socket = settings.munge_socket
        self.key: bytes | None = None
        if settings.jwt_key:
            try:
                self.key = jwt_token.read_key(Path(settings.jwt_key))
            except (OSError, ValueError) as exc:
                log.warning("API: JWT key unusable, bearer tokens read as anonymous: %s", exc)
        self.service_uids = frozenset({0, os.getuid()})

    def viewer(self, headers: Mapping[str, str], path: str) -> Viewer:
        """The reader of ``path`` (anonymous when no credential verifies)."""
        bearer = headers.get("Authorization", "")
        if bearer.startswith("Bearer ") and self.key is not None:
            try:
                claims = jwt_token.verify(self.key, bearer.removeprefix("Bearer ").strip())
            except jwt_token.TokenError:
                return Viewer()
            return Viewer(claims.user, claims.user in self._service_names() and not claims.node)
        credential = headers.get(MUNGE_HEADER, "")
        if credential:
            try:
                proven = munge.decode(credential, self.munge_socket)
                user = pwd.getpwuid(proven.uid).pw_name
            except (munge.MungeError, KeyError):
                return Viewer()
            if proven.payload == api_binding(path):
                return Viewer(user, proven.uid in self.service_uids)
        return Viewer()

    def _service_names(self) -> set[str]:
        names = set()
        for uid in self.service_uids:
            try:
                names.add(pwd.getpwuid(uid).pw_name)
            except KeyError:
                continue
        return names


_LAUNCH_REASONS = ("launch failed", "launch refused")
"""The reasons a node writes for a job it could not start (``agents/node/runs.py``): the step
that failed, then the working directory or output file it names."""


def private_view(row: dict[str, Any], viewer: Viewer, private: bool,
                 privileged: tuple[str, ...]) -> dict[str, Any]:
    """``row`` as ``viewer`` may see it: without the :data:`PRIVATE_FIELDS`, and a launch
    failure's reason cut before the path it names (``launch failed as alice: working
    directory /home/alice/x: Permission denied`` is ``launch failed as alice``)."""
    if not private or viewer.service or viewer.user in privileged:
        return row
    if viewer.user and row.get("user") == viewer.user:
        return row
    shown = {k: v for k, v in row.items() if k not in PRIVATE_FIELDS}
    reason = shown.get("reason")
    if isinstance(reason, str) and reason.startswith(_LAUNCH_REASONS):
        shown["reason"] = reason.split(":", 1)[0]
    steps = shown.get("steps")
    if isinstance(steps, list):  # a step's command name and its reason's words are private too
        shown["steps"] = [_private_step(step) for step in steps]
    return shown


def private_denial(row: dict[str, Any], viewer: Viewer, private: bool,
                   privileged: tuple[str, ...], owner: str) -> dict[str, Any]:
    """A refused request (``GET /v1/denials/<SLUID>``) as ``viewer`` may see it: with
    ``PrivateData=jobs``, who asked and the detail only to that requester, the owner of the
    job it named (``owner``), operators and the service; anyone else sees which request was
    refused, when and why by name (bob's refused cancel of alice's job named bob and quoted
    its detail to every user)."""
    if not private or viewer.service or viewer.user in privileged:
        return row
    if viewer.user and viewer.user in (row.get("requester"), owner):
        return row
    return {**row, "requester": "", "detail": ""}


def _private_step(step: Any) -> Any:
    """A step row without its command's name, its reason cut before what it quotes (``a task
    on node01 ended with exit code 126 (task 0 could not start: … working directory
    /home/alice/x …)`` is ``a task on node01 ended with exit code 126``)."""
    if not isinstance(step, dict):
        return step
    reason = step.get("reason")
    cut = reason.split(" (", 1)[0].split(":", 1)[0] if isinstance(reason, str) else reason
    return {**step, "name": "", "reason": cut}
