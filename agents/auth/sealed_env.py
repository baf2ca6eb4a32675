"""Sealed ``--export`` values: readable by the node daemons only (issue 13, item 4).

The client seals the job's environment to the nodes' X25519 public key (``EnvPublicKey``):

1. a fresh X25519 key pair per submission; ``shared = X25519(ephemeral, node public key)``;
2. ``key = HKDF-SHA256(shared, salt=ephemeral public ‖ node public, info="sluice-env/v1")``;
3. ``ChaCha20Poly1305(key)`` over the JSON of the variables, a random 12-byte nonce, and as
   associated data ``"sluice-env/v1\\0" cluster "\\0" user`` — so a sealed environment copied
   into another user's job (or another cluster's) does not open.

The blob is ``b"SLX1" ‖ ephemeral public (32) ‖ nonce (12) ‖ ciphertext``, in base64, carried in
``JobSpec.sealed_env`` (so in ``SubmitJob``, ``JobQueued`` and ``LaunchRun``); only a holder
of the nodes' private key (``SLUICE_ENV_KEY``) opens it. Only ``cryptography`` primitives are
used (an ECIES / HPKE-base-mode construction), nothing home-made.
"""

from __future__ import annotations

import base64
import binascii
import json
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = ["SealedEnvError", "open_env", "seal_env"]

_MAGIC = b"SLX1"
_INFO = b"sluice-env/v1"


class SealedEnvError(ValueError):
    """A sealed environment that does not open (wrong key, user, cluster, or altered)."""


def _raw(key: X25519PublicKey) -> bytes:
    """The key's 32 bytes (``public_bytes_raw``: ``public_bytes(Raw, Raw)`` without importing
    the ``serialization`` package, a third of a ``sluice submit``'s CPU, issue 17)."""
    return key.public_bytes_raw()


def _key(shared: bytes, ephemeral: bytes, node: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=ephemeral + node,
                info=_INFO).derive(shared)


def _aad(cluster: str, user: str) -> bytes:
    return b"\0".join((_INFO, cluster.encode(), user.encode()))


def seal_env(env: dict[str, str], node_key: X25519PublicKey, cluster: str, user: str) -> str:
    """The sealed blob (base64) of ``env`` for the nodes of ``cluster``, bound to ``user``."""
    ephemeral = X25519PrivateKey.generate()
    eph_raw, node_raw = _raw(ephemeral.public_key()), _raw(node_key)
    key = _key(ephemeral.exchange(node_key), eph_raw, node_raw)
    nonce = os.urandom(12)
    body = json.dumps(env, sort_keys=True, separators=(",", ":")).encode()
    sealed = ChaCha20Poly1305(key).encrypt(nonce, body, _aad(cluster, user))
    return base64.b64encode(_MAGIC + eph_raw + nonce + sealed).decode()


def open_env(text: str, node_key: X25519PrivateKey, cluster: str, user: str,
             ) -> dict[str, str]:
    """The variables sealed in ``text`` ({} for an empty one), or SealedEnvError."""
    if not text:
        return {}
    try:
        blob = base64.b64decode(text, validate=True)
    except (ValueError, binascii.Error) as exc:
        raise SealedEnvError("the sealed environment is not base64") from exc
    if len(blob) < 4 + 32 + 12 + 16 or not blob.startswith(_MAGIC):
        raise SealedEnvError("not a sealed environment (SLX1)")
    eph_raw, nonce, sealed = blob[4:36], blob[36:48], blob[48:]
    node_raw = _raw(node_key.public_key())
    key = _key(node_key.exchange(X25519PublicKey.from_public_bytes(eph_raw)), eph_raw, node_raw)
    try:
        body = ChaCha20Poly1305(key).decrypt(nonce, sealed, _aad(cluster, user))
    except InvalidTag as exc:
        raise SealedEnvError(f"the sealed environment does not open for user {user!r} with "
                             "this node's key") from exc
    data = json.loads(body)
    if not isinstance(data, dict):
        raise SealedEnvError("the sealed environment is not a map")
    return {str(k): str(v) for k, v in data.items()}
