"""What the relay (``POST /v1/requests``) refuses before a request reaches Kafka.

Every request the relay forwards costs the intake a credential check and, when refused, the
ledger one ``RequestDenied`` fact. The relay is reachable by every local user (and every host
that reaches the API), even where Kafka takes only SASL principals, so two cheap checks stand
in front of the producer:

1. **the credential's form** (:func:`credential_refusal`), never its proof: the relay does not
   decode a MUNGE credential (munged decodes a credential once: the intake must be the one) and
   holds no JWT key. It refuses, with ``401`` and the reason the intake would have named, what
   it can tell is bad without either: no credential while the cluster's ``AuthRequired`` is in
   force (``Unauthenticated``), a request id outside 8 to 64 ASCII characters, a credential kind
   other than ``munge``/``jwt``, a MUNGE credential that is not ``MUNGE:<base64>:``, a JWT that
   is not three base64url parts with a JSON header naming ``HS256`` and claims with an integer
   ``exp`` (``CredentialInvalid``), and a JWT whose own ``exp`` passed more than
   :data:`EXPIRY_LEEWAY_S` ago by the views' clock (``CredentialExpired``). A request that
   passes may still be refused by the intake, which records it as always.
2. **a budget per peer** (:class:`PeerBudgets`): a token bucket per local uid that owns the
   client's socket (``projections.peer_uid``), or per address for a client on another host
   (or every client, when the kernel cannot name uids), as slurmctld's ``rate_limit.c`` keeps
   one per user: ``rl_bucket_size`` tokens (:data:`DEFAULT`), ``rl_refill_rate`` more every
   ``rl_refill_period`` seconds, each forwarded request takes one; an empty bucket is answered
   ``429`` with ``Retry-After`` and nothing is produced. Root and the views' own user are not
   limited (slurmctld exempts root and ``SlurmUser``). Set with ``SLUICE_RELAY_RATE_LIMIT``
   (``rl_bucket_size=…,rl_refill_rate=…,rl_refill_period=…,rl_table_size=…``; ``off``: none).

:func:`relay_refusals` counts both by reason (``sluice_relay_refused_total{reason}``), never
by peer or credential (a label per peer is unbounded; a credential is a secret).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import threading
import time
from collections.abc import Callable, Mapping

from agents.rate_limit import Buckets, RateLimitConfig, parse_rate_limits
from projections.exposition import Counter

__all__ = ["DEFAULT", "EXPIRY_LEEWAY_S", "Peer", "PeerBudgets", "budget_config",
           "credential_refusal", "relay_refusals", "retry_after"]

Peer = tuple[str, object]
"""Whose budget a request takes: ``("uid", 1000)`` or ``("address", "10.0.0.7")``."""

DEFAULT = RateLimitConfig(enabled=True, bucket_size=1000, refill_rate=200, refill_period_s=1)
"""The relay's budget per peer: a burst of 1,000 requests, then 200 a second. Slurm limits
nothing unless ``rl_enable`` (then 30 and 2 a second); the relay's budget is always on, so it
is sized to never slow an honest user's loop of ``sbatch`` (a served call takes ~30 ms here,
sbatch's own rate on the same machine is ~220 a second) while a flood of requests whose
credential the relay cannot judge costs the ledger at most 200 ``RequestDenied`` a second per
local user. The intake's per-user limit (``agents.rate_limit``, Slurm's ``rl_*``) stays opt-in."""
EXPIRY_LEEWAY_S = 60
"""A JWT is refused by the relay only this long after its ``exp`` (the views' clock and the
intake's may differ a little; the intake decides the rest)."""
_MUNGE = re.compile(r"MUNGE:[A-Za-z0-9+/]+={0,2}:")
_B64URL = re.compile(r"[A-Za-z0-9_-]+")
_MAX_CREDENTIAL = 8192
"""Characters of a credential at most (a MUNGE credential for a request is ~250, a JWT ~200)."""


def budget_config(text: str) -> RateLimitConfig:
    """The relay's budget from ``SLUICE_RELAY_RATE_LIMIT`` ("" : :data:`DEFAULT`; ``off``:
    disabled). Raises ValueError naming a bad parameter (``parse_rate_limits``'s words)."""
    text = text.strip()
    if not text:
        return DEFAULT
    if text.lower() in ("off", "0", "false", "no"):
        return RateLimitConfig(enabled=False)
    parsed = parse_rate_limits(text)
    given = {name for item in text.split(",") for name in [item.partition("=")[0].strip()]}
    return RateLimitConfig(
        enabled=True,
        bucket_size=parsed.bucket_size if "rl_bucket_size" in given else DEFAULT.bucket_size,
        refill_rate=parsed.refill_rate if "rl_refill_rate" in given else DEFAULT.refill_rate,
        refill_period_s=parsed.refill_period_s if "rl_refill_period" in given
        else DEFAULT.refill_period_s,
        table_size=parsed.table_size)


def credential_refusal(headers: Mapping[str, str], auth_required: bool,
                       now_s: float) -> tuple[str, str] | None:
    """``(reason, why)`` when the request's credential headers (HTTP names, lower case) are
    bad on their face, else None (the intake checks the rest). See the module docstring."""
    auth = headers.get("sluice-auth")
    if auth is None:
        if auth_required:
            return ("Unauthenticated", "this cluster requires a credential (AuthRequired); "
                    "send a Sluice-Auth header (munge or jwt)")
        return None
    request_id = headers.get("sluice-request-id", "")
    if not (auth.isascii() and request_id.isascii()):
        return "CredentialInvalid", "the Sluice-Auth and Sluice-Request-Id headers must be ASCII"
    if not 8 <= len(request_id) <= 64:
        return "CredentialInvalid", "a Sluice-Request-Id of 8 to 64 characters is required"
    kind, _, credential = auth.partition(" ")
    if len(credential) > _MAX_CREDENTIAL:
        return "CredentialInvalid", f"the credential is longer than {_MAX_CREDENTIAL} characters"
    if kind == "munge":
        if _MUNGE.fullmatch(credential) is None:
            return "CredentialInvalid", "not a MUNGE credential (MUNGE:<base64>:)"
        return None
    if kind == "jwt":
        return _jwt_refusal(credential, now_s)
    return "CredentialInvalid", f"unknown credential kind {kind[:20]!r} (munge or jwt)"


def _jwt_refusal(token: str, now_s: float) -> tuple[str, str] | None:
    parts = token.split(".")
    if len(parts) != 3 or not all(_B64URL.fullmatch(p) for p in parts):
        return "CredentialInvalid", "not a JWT (three base64url parts)"
    header, claims = _json_part(parts[0]), _json_part(parts[1])
    if not isinstance(header, dict) or header.get("alg") != "HS256":
        return "CredentialInvalid", "not an HS256 JWT"
    exp = claims.get("exp") if isinstance(claims, dict) else None
    if type(exp) is not int:
        return "CredentialInvalid", "the JWT has no integer exp claim"
    if exp + EXPIRY_LEEWAY_S < now_s:
        return "CredentialExpired", "the JWT's exp has passed"
    return None


def _json_part(part: str) -> object:
    """A JWT part's JSON, None when it is not JSON. ``[`` nested 5,000 deep (it fits the
    8,192 characters) raised ``RecursionError``: a ``500`` and a traceback in the views' log
    per request, before any budget was taken (red team)."""
    try:
        return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (binascii.Error, ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError
        return None


class PeerBudgets:
    """A token bucket per peer (see the module docstring), on the views' monotonic clock."""

    def __init__(self, config: RateLimitConfig,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.clock = clock
        self._table: Buckets[Peer] = Buckets(config)
        self._lock = threading.Lock()

    def admit(self, peer: Peer | None) -> float:
        """Take a token of ``peer``'s bucket: 0.0 when the request may go on, else the seconds
        until a token comes (the ``Retry-After``). ``None`` (root, the views' user) is never
        limited. A full table makes room by dropping the buckets that are full again; when none
        is, a new peer is refused for a refill period (no peer can grow it without bound)."""
        config = self.config
        if not config.enabled or peer is None:
            return 0.0
        now = self.clock()
        period = int(now // config.refill_period_s)
        with self._lock:
            taken, bucket = self._table.take(peer, period)
        if bucket is None:  # a full table: a new peer waits for a refill period
            return float(config.refill_period_s)
        if taken:
            return 0.0
        return max((period + 1) * config.refill_period_s - now, 0.001)


def relay_refusals() -> Counter:
    """``sluice_relay_refused_total{reason}``: requests the relay refused before Kafka, by
    the reason it answered (``Unauthenticated``, ``CredentialInvalid``, ``CredentialExpired``:
    401; ``RateLimited``: 429)."""
    return Counter("sluice_relay_refused_total", "Requests the views' relay refused before "
                   "Kafka, by reason (401: a credential bad on its face; 429: the peer's "
                   "budget)", ("reason",))


def retry_after(seconds: float) -> int:
    """A ``Retry-After`` value: whole seconds, at least 1."""
    return max(1, math.ceil(seconds))
