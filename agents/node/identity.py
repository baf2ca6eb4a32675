"""The node SLUID a daemon registers under, and the credential it was registered with.

The shard records who registered a node (``NodeRegistered.registrant``: ``jwt node n03``,
``munge root@10.0.0.3``) and refuses a registration of that name by another identity while the
node is in service (``NodeIdentityChanged``, docs/security.md). A daemon restarted with another
credential (a node JWT instead of munge, another user) but the same state directory sent its
``RegisterNode`` under its old SLUID: refused, while its heartbeats under that SLUID kept the
old node in service. Nothing ever took that node ``DOWN``, so nothing asked the refused daemon
to register again: the node stayed in service for good with reports it refused
(``NotNodeCredential``), its runs RUNNING until the runs' reconciliation failed them, and new
jobs placed there never reported (found in a fault round, 2026-12-07).

So the daemon keeps, beside its SLUID, what names its credential (``node.credential``); a start
whose credential names another identity mints a new SLUID. The old one falls silent, its node
goes ``DOWN`` after one node timeout (its runs fail and requeue once), and that ``DOWN`` asks
the refused registration again (``scheduler.nodes.registration_requests``): the node returns
under its new identity without an administrator. The host of a munge credential is munged's
to say: a daemon moved to another host with its state directory is not seen here, nor one
whose state directory predates ``node.credential``. Those the shard tells: a registration
refused under the SLUID of the node in service gets a ``RequestRegistration`` naming the
refused identity (``scheduler.nodes.registration_requests``), and the daemon whose credential
that is (:func:`refused_is_mine`) mints a new SLUID as above.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
from pathlib import Path

from schemas import SluidGenerator
from streams.settings import Settings

__all__ = ["IDENTITY_FILES", "credential_expiry_ms", "credential_of", "load_or_mint_sluid",
           "refused_is_mine"]

log = logging.getLogger("sluice.node")

IDENTITY_FILES = ("node.sluid", "commands.offset", "commands.seen")
"""What a daemon read under its SLUID: forgotten with it."""

_CREDENTIAL_FILE = "node.credential"


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _token_claims(token: str) -> dict[str, object]:
    """A JWT's claims, unverified (PyJWT's; the intake verifies: this only names the
    identity and reads its expiry). Imported here: only a daemon given a token pays for PyJWT
    and the cryptography it loads (tests/unit/test_light_imports.py)."""
    import jwt  # noqa: PLC0415

    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return {}
    return claims if isinstance(claims, dict) else {}


def credential_of(settings: Settings, name: str) -> str:
    """What names the identity a registration of node ``name`` by this daemon is recorded as
    (as ``Identity.registrant``, without munge's host): ``munge root``, ``jwt node n03``."""
    kind = settings.auth
    if kind == "munge":
        return f"munge {_user(os.geteuid())}"
    if kind == "jwt":
        if not settings.jwt:
            return f"jwt node {name}"  # it signs its own node JWT (agents.auth.signer)
        claims = _token_claims(settings.jwt)
        node = claims.get("node")
        return f"jwt node {node}" if node else f"jwt {claims.get('sun', '')}"
    return kind


def refused_is_mine(refused: str, credential: str) -> bool:
    """Whether a registration the shard refused as ``refused`` (``Identity.registrant``:
    ``munge root@10.0.0.3``, ``jwt node n03``) was this daemon's, whose credential is
    ``credential`` (:func:`credential_of`, without munge's host). Another identity's refusal
    (a registration forged under this node's SLUID with another node's JWT) is not: the
    daemon keeps its SLUID. A munge credential of the same user from another host cannot be
    told apart here; only a host holding the cluster's munge key makes one."""
    if not refused or not credential:
        return False
    if refused.startswith("munge "):
        refused = refused.split("@", 1)[0]
    return refused == credential


def credential_expiry_ms(settings: Settings) -> int | None:
    """When the token this daemon was given (``SLUICE_JWT``) expires, in Unix ms; None when
    its credential does not expire (munge, or a node JWT it signs itself with the key)."""
    if settings.auth != "jwt" or not settings.jwt:
        return None
    exp = _token_claims(settings.jwt).get("exp")
    return exp * 1000 if isinstance(exp, int) and not isinstance(exp, bool) else None


def load_or_mint_sluid(state_dir: Path, cluster_id: int, credential: str) -> str:
    """The SLUID this daemon registers under: the stored one, unless it was registered with
    another credential (then a new one, and what was read under the old one is forgotten)."""
    path, stored = state_dir / "node.sluid", state_dir / _CREDENTIAL_FILE
    before = stored.read_text().strip() if stored.exists() else None
    if path.exists() and before is not None and before != credential:
        log.warning("node: its credential changed (%s, was %s): registering under a new SLUID; "
                    "the old one goes DOWN after one node timeout and the node returns",
                    credential, before)
        for name in IDENTITY_FILES:
            with contextlib.suppress(FileNotFoundError):
                (state_dir / name).unlink()
    if before != credential:
        stored.write_text(credential + "\n")
    if path.exists():
        return path.read_text().strip()
    sluid = SluidGenerator(cluster_id).new()
    path.write_text(sluid + "\n")
    return sluid
