"""The sending side of credentials: one :class:`RequestSigner` per client or node daemon.

``Settings.auth`` picks the kind: ``munge`` (munged vouches for the calling Unix user),
``jwt`` (``SLUICE_JWT``; else, when this user can read ``SLUICE_JWT_KEY``, a short token it
signs itself: for a node daemon a node JWT naming its node), or ``none``.
"""

from __future__ import annotations

import os
import pwd
import time
from pathlib import Path

from agents.auth.headers import client_headers
from schemas import SluidGenerator
from streams.settings import Settings

__all__ = ["CredentialError", "RequestSigner"]

OWN_TOKEN_S = 300


class CredentialError(RuntimeError):
    """No credential can be made (munged unreachable, no token, an unreadable key)."""


class RequestSigner:
    """Makes the request-id and credential headers of each request value."""

    def __init__(self, settings: Settings, node: str = "") -> None:
        self.settings, self.node = settings, node
        self.sluids = SluidGenerator(settings.cluster_id)
        self._token, self._token_until = settings.jwt, float("inf") if settings.jwt else 0.0

    def headers(self, value: bytes) -> list[tuple[str, bytes]]:
        """The headers for one request value."""
        kind = self.settings.auth
        if kind != "munge":  # munge's module loads ctypes and libmunge: only when used
            token = self._own_token() if kind == "jwt" else ""
            return client_headers(value, self.sluids.new(), kind, token=token)
        from agents.auth import munge  # noqa: PLC0415

        try:
            return client_headers(value, self.sluids.new(), kind,
                                  munge_socket=self.settings.munge_socket)
        except munge.MungeError as exc:
            raise CredentialError(f"no munge credential: {exc}") from exc

    def api_headers(self, path: str) -> dict[str, str]:
        """Headers that tell the views' API who reads ``path`` (none for kind ``none``)."""
        kind = self.settings.auth
        if kind == "jwt":
            return {"Authorization": f"Bearer {self._own_token()}"}
        if kind == "munge":
            from agents.auth import munge  # noqa: PLC0415

            payload = f"sluice-api/1 GET {path}".encode()  # projections.api_auth.api_binding
            try:
                return {"X-Sluice-Munge": munge.encode(payload, self.settings.munge_socket)}
            except munge.MungeError as exc:
                raise CredentialError(f"no munge credential: {exc}") from exc
        return {}

    def _own_token(self) -> str:
        now = time.time()
        if self._token and now < self._token_until:
            return self._token
        if not self.settings.jwt_key:
            raise CredentialError("SLUICE_AUTH is jwt but there is no token: set SLUICE_JWT to "
                                  "one from 'sluice token' (an administrator issues it)")
        from agents.auth import jwt_token  # noqa: PLC0415 -- PyJWT: only to sign a token

        try:
            key = jwt_token.read_key(Path(self.settings.jwt_key))
        except (OSError, ValueError) as exc:
            raise CredentialError(f"no JWT: {exc}; set SLUICE_JWT to a token from "
                                  "'sluice token'") from exc
        user = pwd.getpwuid(os.getuid()).pw_name
        self._token = jwt_token.issue(key, user, OWN_TOKEN_S, int(now), self.node)
        self._token_until = now + OWN_TOKEN_S / 2
        return self._token
