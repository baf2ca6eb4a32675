"""Sealed shard-inbox records: only the worker's own agents may speak to a shard.

The intake, the clock and the health agent add four headers to every record they write into
``sluice.shard-inbox``:

| header | value |
|---|---|
| ``sluice-origin`` | ``intake``, ``clock`` or ``health`` |
| ``sluice-stamp`` | the writer's clock, Unix ms: the time the shard decides the record at |
| ``sluice-identity`` | JSON of the verified :class:`scheduler.Identity` (intake only) |
| ``sluice-seal`` | HMAC-SHA256 (Python's ``hmac``) over the three and the value's SHA-256 |

with the per-cluster worker secret (``$SLUICE_HOME/worker/inbox.key``, mode 0600, made on the
first start; ``SLUICE_WORKER_SECRET`` names another file; every worker of a cluster needs the
same one). The shard ignores a record whose seal does not verify, so a plain Kafka producer
cannot forge a Tick, an identity or a time. A sealed record copied back into the inbox is
ignored when its seal was seen or its stamp is older than :data:`REPLAY_WINDOW_MS` behind the
shard's clock. See docs/security.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import hmac
import json
import os
import secrets
import tempfile
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from scheduler.access.identity import Identity

__all__ = ["REPLAY_WINDOW_MS", "SealChecker", "Sealed", "open_seal", "seal_headers",
           "worker_secret"]

ORIGIN_HEADER = "sluice-origin"
STAMP_HEADER = "sluice-stamp"
IDENTITY_HEADER = "sluice-identity"
SEAL_HEADER = "sluice-seal"
ORIGINS = frozenset({"intake", "clock", "health"})
REPLAY_WINDOW_MS = 300_000


def worker_secret(home: Path, create: bool = True) -> bytes:
    """The cluster's worker secret (created, mode 0600, when missing and ``create``)."""
    path = Path(os.environ.get("SLUICE_WORKER_SECRET", home / "worker" / "inbox.key"))
    if not path.exists() and not create:
        raise FileNotFoundError(f"no worker secret at {path}: run this where the worker runs "
                                "(same SLUICE_HOME) or set SLUICE_WORKER_SECRET")
    if not path.exists():  # written whole, then linked: a racing reader never sees it half
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".inbox-key-")
        with os.fdopen(fd, "wb") as out:
            out.write(secrets.token_bytes(32))
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
        Path(tmp).unlink()
    return path.read_bytes()


def _mac(secret: bytes, origin: bytes, stamp: bytes, identity: bytes, value: bytes) -> bytes:
    """HMAC-SHA256 of the sealed fields, hex (``hmac.new(secret, message, sha256)``), from a
    copy of the HMAC keyed once per secret: every request is sealed by the intake and verified
    by the shard, and the key's set-up each time was half of it. The library's HMAC, copied
    (its own ``copy``), never one of ours."""
    message = b"\0".join((origin, stamp, identity, hashlib.sha256(value).digest()))
    mac = _keyed(secret).copy()
    mac.update(message)
    return mac.hexdigest().encode()


@functools.lru_cache(maxsize=8)
def _keyed(secret: bytes) -> hmac.HMAC:
    """The HMAC-SHA256 of ``secret`` before any message: copied for each one."""
    return hmac.new(secret, digestmod=hashlib.sha256)


def seal_headers(secret: bytes, origin: str, stamp_ms: int, value: bytes,
                 identity: Identity | None = None) -> list[tuple[str, bytes]]:
    """The four headers that let a shard trust ``value``."""
    who = _identity_bytes(identity) if identity else b""
    stamp = str(stamp_ms).encode()
    return [
        (ORIGIN_HEADER, origin.encode()),
        (STAMP_HEADER, stamp),
        (IDENTITY_HEADER, who),
        (SEAL_HEADER, _mac(secret, origin.encode(), stamp, who, value)),
    ]


@dataclass(frozen=True, slots=True)
class Sealed:
    """What a verified seal vouches for."""

    origin: str
    stamp_ms: int
    identity: Identity | None
    seal: bytes


def open_seal(secret: bytes, value: bytes,
              headers: Sequence[tuple[str, bytes | None]] | None) -> Sealed | str:
    """The sealed facts of a record, or why it is not sealed."""
    found = {k: v or b"" for k, v in headers or ()}
    try:
        origin, stamp = found[ORIGIN_HEADER], found[STAMP_HEADER]
        who, seal = found[IDENTITY_HEADER], found[SEAL_HEADER]
    except KeyError as exc:
        return f"no {exc.args[0]} header"
    if not hmac.compare_digest(seal, _mac(secret, origin, stamp, who, value)):
        return "the seal does not verify"
    name = origin.decode(errors="replace")
    if name not in ORIGINS:
        return f"unknown origin {name!r}"
    return Sealed(name, int(stamp), _identity_of(who) if who else None, seal)


# A batch's requests mostly come from a few identities: their JSON is made, and read back,
# once per identity rather than once per record (``dataclasses.asdict`` and ``json`` were a
# few per cent of the worker's CPU under bench_submit). Identities are frozen: a cached one
# is the same value a fresh one would be.
@functools.lru_cache(maxsize=4096)
def _identity_bytes(identity: Identity) -> bytes:
    return json.dumps(dataclasses.asdict(identity), sort_keys=True).encode()


@functools.lru_cache(maxsize=4096)
def _identity_of(who: bytes) -> Identity:
    fields = json.loads(who)
    fields["groups"] = tuple(fields.get("groups", ()))
    return Identity(**fields)


class SealChecker:
    """The shard's memory of seals applied recently (a copied record is applied once)."""

    def __init__(self, size: int = 100_000) -> None:
        self._seen: OrderedDict[bytes, int] = OrderedDict()
        self.size = size

    def fresh(self, sealed: Sealed, now_ms: int) -> bool:
        """False for a seal seen before or a stamp older than the replay window."""
        if sealed.stamp_ms < now_ms - REPLAY_WINDOW_MS or sealed.seal in self._seen:
            return False
        self._seen[sealed.seal] = sealed.stamp_ms
        while len(self._seen) > self.size or (
            self._seen and next(iter(self._seen.values())) < now_ms - REPLAY_WINDOW_MS
        ):
            self._seen.popitem(last=False)
        return True
