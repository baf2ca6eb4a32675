"""Signed node commands: the shard scheduler signs, node daemons check (issue 13, item 2).

Every record the worker writes to ``sluice.node-commands`` carries the header
``sluice-command-sig`` = ``v1 <expiry Unix ms> <base64 Ed25519 signature>``, the signature over::

    b"sluice-node-command/v1\\0" cluster \\0 node SLUID \\0 run SLUID \\0 expiry \\0 value

(``value``: the command's Avro bytes, exactly as written). The node daemon
(:class:`CommandChecker`) refuses, with a named reason, a command that is

| reason | when |
|---|---|
| ``CommandUnsigned`` | it has no signature header |
| ``CommandSignatureMalformed`` | the header is not ``v1 <ms> <base64>`` |
| ``CommandForOtherNode`` | the record names another node than the one whose key it has |
| ``CommandSignatureInvalid`` | the signature does not verify (forged, altered, re-keyed) |
| ``CommandExpired`` | its expiry is past on the node's clock |
| ``CommandReplayed`` | the same signed command was run before (cache kept until expiry) |
| ``NoCommandKey`` | the node has no usable public key (it runs nothing) |

The replay cache is a file in the node's state directory (``agents.auth.command_replays``),
on disk before the command runs, so a restarted daemon still refuses a command it has run; a
pass's commands are checked in one :meth:`CommandChecker.batch` (one fsync). Signing happens in
the shell (the worker), never in the pure core. Both sides use ``cryptography``; a node loads its
key without the ``serialization`` package (:mod:`agents.auth.daemon_keys`).
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.auth.command_replays import ReplayCache
from agents.auth.headers import sha256_hex
from agents.auth.key_files import KeyFileError

if TYPE_CHECKING:  # cryptography: loaded with the key (a node, at its first command)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from agents.auth.daemon_keys import CommandKey

__all__ = ["SIGNATURE_HEADER", "CommandChecker", "CommandSigner", "Refusal", "expiry_of",
           "signature_of", "signed_message"]

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "sluice-command-sig"
KEY_RELOAD_MS = 10_000
"""A signature the command key does not verify reads the key again, at most this often: a key
replaced on disk (rotated, or ``sluice up`` made a new one after its file was lost) is taken
without restarting every daemon, and a flood of forged commands costs one file read per
interval."""
_DOMAIN = b"sluice-node-command/v1"


class Refusal:
    """Named reasons a node refuses a command."""

    UNSIGNED = "CommandUnsigned"
    MALFORMED = "CommandSignatureMalformed"
    OTHER_NODE = "CommandForOtherNode"
    INVALID = "CommandSignatureInvalid"
    EXPIRED = "CommandExpired"
    REPLAYED = "CommandReplayed"
    NO_KEY = "NoCommandKey"


def signed_message(cluster: str, node_sluid: str, run_sluid: str, expiry_ms: int,
                   value: bytes) -> bytes:
    """The bytes a command's signature covers."""
    return b"\0".join((_DOMAIN, cluster.encode(), node_sluid.encode(), run_sluid.encode(),
                       str(expiry_ms).encode(), value))


def expiry_of(header: bytes | None) -> int:
    """The expiry (Unix ms) a ``v1 <ms> <base64>`` header names, 0 when it names none. Only
    meaningful once :meth:`CommandChecker.check` verified the signature over it (a refusal as
    ``CommandExpired`` comes after that check)."""
    parts = (header or b"").split(b" ")
    if len(parts) != 3 or parts[0] != b"v1" or not parts[1].isdigit():
        return 0
    return int(parts[1])


def signature_of(headers: Any) -> bytes | None:
    """The last :data:`SIGNATURE_HEADER` value of a Kafka record's headers (None if absent)."""
    found = None
    for key, value in headers or ():
        if key == SIGNATURE_HEADER:
            found = value if isinstance(value, bytes) else None
    return found


class CommandSigner:
    """The worker's side: one header per command."""

    def __init__(self, key: Ed25519PrivateKey, cluster: str, ttl_s: int) -> None:
        self._key, self._cluster, self._ttl_ms = key, cluster, max(1, ttl_s) * 1000

    def header(self, node_sluid: str, run_sluid: str, value: bytes, now_ms: int,
               ) -> tuple[str, bytes]:
        expiry = now_ms + self._ttl_ms
        signature = self._key.sign(signed_message(self._cluster, node_sluid, run_sluid, expiry,
                                                  value))
        return SIGNATURE_HEADER, f"v1 {expiry} {base64.b64encode(signature).decode()}".encode()


class CommandChecker:
    """The node's side: verify a command, remember it until it expires (one node's daemon, or
    the Kubernetes bridge for all its nodes, with ``node_sluid`` "" and ``node`` per check)."""

    def __init__(self, load_key: Callable[[], CommandKey], cluster: str, node_sluid: str,
                 cache_path: Path) -> None:
        self._load_key = load_key
        self._key: CommandKey | None = None  # loaded at the first command
        self._cluster, self._node = cluster, node_sluid
        self._seen = ReplayCache(cache_path)
        self._reloaded_ms: int | None = None  # when the key was last read again

    def batch(self) -> AbstractContextManager[None]:
        """Check several commands, their replay cache written once (one fsync) at the block's
        end: none of them may run before it ends (``agents.auth.command_replays``)."""
        return self._seen.batch()

    def check(self, value: bytes, header: bytes | None, record_node: str, run_sluid: str,
              now_ms: int, node: str = "") -> tuple[str, str] | None:
        """None when the command may run (and it is remembered), else (reason, detail).

        ``node`` is the node SLUID the command was addressed to (its record key) when one
        checker serves several nodes (the Kubernetes bridge); a node daemon's is its own."""
        own = node or self._node
        if header is None:
            return Refusal.UNSIGNED, f"no {SIGNATURE_HEADER} header"
        parts = header.decode(errors="replace").split(" ")
        try:
            if len(parts) != 3 or parts[0] != "v1":
                raise ValueError(parts[0][:16])
            expiry = int(parts[1])
            signature = base64.b64decode(parts[2], validate=True)
        except (ValueError, binascii.Error) as exc:
            return Refusal.MALFORMED, f"{SIGNATURE_HEADER} is not 'v1 <ms> <base64>' ({exc})"
        if not own or record_node != own:
            return Refusal.OTHER_NODE, f"the command names node {record_node[:40]!r}"
        key = self._public_key()
        if isinstance(key, str):
            return Refusal.NO_KEY, key
        message = signed_message(self._cluster, own, run_sluid, expiry, value)
        if not key.verify(signature, message):
            fresh = self._reloaded(key, now_ms)
            if fresh is None or not fresh.verify(signature, message):
                return Refusal.INVALID, "the signature does not verify with the command key"
        if expiry <= now_ms:
            return Refusal.EXPIRED, f"expired {(now_ms - expiry) // 1000} s ago"
        digest = sha256_hex(signature)[:32]
        if digest in self._seen:
            return Refusal.REPLAYED, "this signed command was run before"
        self._seen.add(digest, expiry, now_ms)
        return None

    def _reloaded(self, key: CommandKey, now_ms: int) -> CommandKey | None:
        """The command key read again, when it changed on disk and was not read in the last
        :data:`KEY_RELOAD_MS` (then it replaces the one held). Before, the key was read once:
        after the workers' key changed, every node refused every launch for good
        (``CommandSignatureInvalid``) and each job stayed RUNNING, never started, until the
        runs' reconciliation failed it and it was sent to a node again (fault round,
        2026-12-07)."""
        if self._reloaded_ms is not None and 0 <= now_ms - self._reloaded_ms < KEY_RELOAD_MS:
            return None
        self._reloaded_ms = now_ms
        try:
            fresh = self._load_key()
        except KeyFileError:
            return None
        if fresh.raw == key.raw:
            return None
        log.warning("the command key changed on disk: verifying with the new one")
        self._key = fresh
        return fresh

    def _public_key(self) -> CommandKey | str:
        if self._key is None:
            try:
                self._key = self._load_key()
            except KeyFileError as exc:
                return str(exc)
        return self._key
