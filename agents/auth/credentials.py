"""Request credentials in Kafka record headers: what a client adds, what the intake checks.

A request on ``sluice.requests`` carries two headers:

| header | value |
|---|---|
| ``sluice-request-id`` | a SLUID per request (with the value's digest, the replay key) |
| ``sluice-auth`` | ``munge <credential>`` or ``jwt <token>`` |

A MUNGE credential's payload is :func:`binding` of the request: its id and the SHA-256 of the
record value, so it cannot be moved to another request. A JWT (Slurm's auth/jwt) is a bearer
token: whoever holds it is its ``sun`` user until ``exp``. :class:`Verifier` (the intake) turns
the headers into a :class:`scheduler.Identity`, with ``denied`` set to a named reason when the
credential is missing a request id, malformed, expired, replayed or bound to other bytes.
A replay is the same request id **with the same value** seen at another position
(:func:`replay_key`): request ids are minted by each client's clock, and two clients can draw
the same one.
"""

from __future__ import annotations

import grp
import hashlib
import logging
import os
import pwd
from dataclasses import dataclass, field

from agents.auth import jwt_token, munge
from agents.auth.headers import (
    AUTH_HEADER,
    REQUEST_ID_HEADER,
    Headers,
    binding,
    client_headers,
    header,
)
from agents.auth.replay import ReplayCache
from scheduler.access.authz import DenialReason
from scheduler.access.identity import ANONYMOUS, Identity

__all__ = ["AUTH_HEADER", "REQUEST_ID_HEADER", "Verifier", "binding", "client_headers",
           "header", "replay_key"]

log = logging.getLogger(__name__)

R = DenialReason


def replay_key(request_id: str, value: bytes) -> bytes:
    """What the replay cache remembers of a request: its id **and** its value's digest.

    A replay is the same request sent again: the same id with the same bytes (a MUNGE
    credential is bound to both, a JWT to neither). Two different requests that share an id
    are not: ids are SLUIDs minted by each client's own clock, and two processes minting in
    the same millisecond draw the same id one time in 512 (``schemas.sluid.SluidGenerator``).
    With the id alone as the key, the second of two node daemons' reports that drew the same
    id was refused as ``CredentialReplayed``, and a run whose ``ReportJobExit`` it was never
    ended (about one run in 2,000 with 64 daemons; docs/benchmarks.md).
    """
    return request_id.encode() + b" " + hashlib.sha256(value).digest()[:16]


def _denied(reason: str, detail: str, user: str = "") -> Identity:
    return Identity(user=user, kind="denied", denied=reason, detail=detail)


@dataclass
class Verifier:
    """The intake's side: headers → the identity they prove (see the module docstring)."""

    munge_socket: str = ""
    jwt_key: bytes | None = None
    service_uids: frozenset[int] = field(default_factory=lambda: frozenset({0, os.getuid()}))
    replay: ReplayCache = field(default_factory=ReplayCache)

    def identity(self, value: bytes, headers: Headers | None, now_s: float,
                 position: str) -> Identity:
        """Who sent ``value`` (ANONYMOUS when no credential came with it)."""
        auth = header(headers, AUTH_HEADER)
        if auth is None:
            return ANONYMOUS
        raw_id = header(headers, REQUEST_ID_HEADER) or b""
        try:
            request_id, text = raw_id.decode("ascii"), auth.decode("ascii")
        except UnicodeDecodeError:
            return _denied(R.CREDENTIAL_INVALID, "credential headers are not ASCII")
        if not 8 <= len(request_id) <= 64:
            return _denied(R.CREDENTIAL_INVALID, f"missing or bad {REQUEST_ID_HEADER} header")
        kind, _, credential = text.partition(" ")
        if kind == "munge":
            found, expires = self._munge(credential, request_id, value)
        elif kind == "jwt":
            found, expires = self._jwt(credential)
        else:
            return _denied(R.CREDENTIAL_INVALID, f"unknown credential kind {kind[:20]!r}")
        if found.denied:
            return found
        if not self.replay.first_sight(replay_key(request_id, value), expires, now_s,
                                       position):
            return _denied(R.CREDENTIAL_REPLAYED, f"request {request_id} was seen before",
                           found.user)
        return found

    def _munge(self, credential: str, request_id: str, value: bytes) -> tuple[Identity, float]:
        try:
            proven = munge.decode(credential, self.munge_socket)
        except munge.MungeError as exc:
            if exc.code == munge.REPLAYED and exc.credential is not None:
                proven = exc.credential  # our own cache decides (a redelivery is no replay)
            elif exc.code == munge.EXPIRED:
                return _denied(R.CREDENTIAL_EXPIRED, str(exc)), 0.0
            elif exc.code in (munge.SOCKET, -1):
                log.error("munge is unavailable: %s", exc)
                return _denied(R.AUTH_UNAVAILABLE, f"the intake cannot reach munged: {exc}"), 0.0
            else:
                return _denied(R.CREDENTIAL_INVALID, str(exc)), 0.0
        if proven.payload != binding(request_id, value):
            return _denied(R.CREDENTIAL_MISMATCH,
                           "the credential was made for another request"), 0.0
        try:
            user = pwd.getpwuid(proven.uid).pw_name
        except KeyError:
            return _denied(R.CREDENTIAL_INVALID, f"uid {proven.uid} is unknown here"), 0.0
        identity = Identity(user=user, uid=proven.uid, gid=proven.gid,
                            groups=_groups(user, proven.gid), kind="munge",
                            service=proven.uid in self.service_uids, host=proven.host)
        return identity, float(proven.encode_time + max(proven.ttl, 1))

    def _jwt(self, token: str) -> tuple[Identity, float]:
        if self.jwt_key is None:
            return _denied(R.AUTH_UNAVAILABLE, "the intake has no JWT key (SLUICE_JWT_KEY)"), 0.0
        try:
            claims = jwt_token.verify(self.jwt_key, token)
        except jwt_token.TokenError as exc:
            return _denied(exc.reason, str(exc)), 0.0
        try:
            entry = pwd.getpwnam(claims.user)
            uid, gid, groups = entry.pw_uid, entry.pw_gid, _groups(claims.user, entry.pw_gid)
        except KeyError:
            uid, gid, groups = -1, -1, ()
        identity = Identity(user=claims.user, uid=uid, gid=gid, groups=groups, kind="jwt",
                            node=claims.node, service=uid in self.service_uids and not claims.node)
        return identity, float(claims.expires)


def _groups(user: str, gid: int) -> tuple[str, ...]:
    names = []
    for number in sorted(set(os.getgrouplist(user, gid))):
        try:
            names.append(grp.getgrgid(number).gr_name)
        except KeyError:
            names.append(str(number))
    return tuple(names)
