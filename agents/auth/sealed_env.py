"""Sealed ``--export`` values: readable by the node daemons only (issue 13, item 4).

The client seals the job's environment to the nodes' X25519 public key (``EnvPublicKey``).
Two forms, both opened by every node:

- **SLX2** (written whenever libsodium is installed): libsodium's sealed box
  (``crypto_box_seal``: a fresh X25519 key pair per submission, XSalsa20-Poly1305, the nonce
  derived from both public keys) over the JSON ``{"cluster", "user", "env"}``. The node opens
  it and refuses it unless ``cluster`` and ``user`` are the job's own, so a sealed environment
  copied into another user's job (or another cluster's) does not open. Blob:
  ``b"SLX2" ‖ sealed box``.
- **SLX1** (written by a client without libsodium, and by releases before it): an ECIES /
  HPKE-base-mode construction of ``cryptography``: ``shared = X25519(ephemeral, node public
  key)``; ``key = HKDF-SHA256(shared, salt=ephemeral public ‖ node public,
  info="sluice-env/v1")``; ``ChaCha20Poly1305(key)`` over the JSON of the variables, a random
  12-byte nonce, and as associated data ``"sluice-env/v1\\0" cluster "\\0" user``. Blob:
  ``b"SLX1" ‖ ephemeral public (32) ‖ nonce (12) ‖ ciphertext``.

Either blob travels in base64 in ``JobSpec.sealed_env`` (so in ``SubmitJob``, ``JobQueued``
and ``LaunchRun``); only a holder of the nodes' private key (``SLUICE_ENV_KEY``) opens it.
Why two: loading ``cryptography`` costs a ``sluice submit`` 13 to 15 ms and a node daemon 10 MiB;
libsodium (:mod:`agents.auth.sodium`) loads in 0.2 ms. Both are whole library constructions,
nothing home-made.
"""

from __future__ import annotations

import base64
import binascii
import json
import os

from agents.auth import sodium

__all__ = ["SealedEnvError", "open_env", "seal_env"]

_MAGIC_V1 = b"SLX1"
_MAGIC_V2 = b"SLX2"
_INFO = b"sluice-env/v1"


class SealedEnvError(ValueError):
    """A sealed environment that does not open (wrong key, user, cluster, or altered)."""


def seal_env(env: dict[str, str], node_key: bytes, cluster: str, user: str) -> str:
    """The sealed blob (base64) of ``env`` for the nodes of ``cluster`` whose X25519 public
    key is ``node_key`` (32 raw bytes), bound to ``user``: SLX2 with libsodium, else SLX1."""
    if not sodium.available():
        return _seal_v1(env, node_key, cluster, user)
    body = json.dumps({"cluster": cluster, "env": env, "user": user}, sort_keys=True,
                      separators=(",", ":")).encode()
    try:
        sealed = sodium.box_seal(body, node_key)
    except sodium.SodiumError as exc:  # a key no X25519 exchange works with (a low-order point)
        raise SealedEnvError(f"the nodes' environment key cannot seal: {exc}") from exc
    return base64.b64encode(_MAGIC_V2 + sealed).decode()


def open_env(text: str, node_key: bytes, cluster: str, user: str) -> dict[str, str]:
    """The variables sealed in ``text`` ({} for an empty one) with the nodes' X25519 private
    key ``node_key`` (32 raw bytes), or SealedEnvError."""
    if not text:
        return {}
    try:
        blob = base64.b64decode(text, validate=True)
    except (ValueError, binascii.Error) as exc:
        raise SealedEnvError("the sealed environment is not base64") from exc
    if blob.startswith(_MAGIC_V2):
        return _open_v2(blob[4:], node_key, cluster, user)
    if len(blob) < 4 + 32 + 12 + 16 or not blob.startswith(_MAGIC_V1):
        raise SealedEnvError("not a sealed environment (SLX1 or SLX2)")
    return _open_v1(blob, node_key, cluster, user)


def _refused(user: str) -> SealedEnvError:
    return SealedEnvError(f"the sealed environment does not open for user {user!r} with "
                          "this node's key")


def _variables(data: object) -> dict[str, str]:
    if not isinstance(data, dict):
        raise SealedEnvError("the sealed environment is not a map")
    return {str(k): str(v) for k, v in data.items()}


def _open_v2(sealed: bytes, node_key: bytes, cluster: str, user: str) -> dict[str, str]:
    try:
        body = sodium.box_seal_open(sealed, sodium.public_of(node_key), node_key)
    except sodium.SodiumError as exc:
        raise SealedEnvError(f"cannot open an SLX2 sealed environment: {exc}") from exc
    if body is None:
        raise _refused(user)
    try:
        data = json.loads(body)
    except ValueError as exc:  # sealed by someone holding the public key, not by a client
        raise SealedEnvError("the sealed environment is not JSON") from exc
    if not isinstance(data, dict) or data.get("cluster") != cluster or data.get("user") != user:
        raise _refused(user)
    return _variables(data.get("env"))


def _aad(cluster: str, user: str) -> bytes:
    return b"\0".join((_INFO, cluster.encode(), user.encode()))


def _hkdf(shared: bytes, ephemeral: bytes, node: bytes) -> bytes:
    from cryptography.hazmat.primitives import hashes  # noqa: PLC0415 - SLX1 only
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF  # noqa: PLC0415

    return HKDF(algorithm=hashes.SHA256(), length=32, salt=ephemeral + node,
                info=_INFO).derive(shared)


def _seal_v1(env: dict[str, str], node_key: bytes, cluster: str, user: str) -> str:
    from cryptography.hazmat.primitives.asymmetric.x25519 import (  # noqa: PLC0415 - SLX1 only
        X25519PrivateKey,
        X25519PublicKey,
    )
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305  # noqa: PLC0415

    ephemeral = X25519PrivateKey.generate()
    eph_raw = ephemeral.public_key().public_bytes_raw()
    key = _hkdf(ephemeral.exchange(X25519PublicKey.from_public_bytes(node_key)), eph_raw,
                node_key)
    nonce = os.urandom(12)
    body = json.dumps(env, sort_keys=True, separators=(",", ":")).encode()
    sealed = ChaCha20Poly1305(key).encrypt(nonce, body, _aad(cluster, user))
    return base64.b64encode(_MAGIC_V1 + eph_raw + nonce + sealed).decode()


def _open_v1(blob: bytes, node_key: bytes, cluster: str, user: str) -> dict[str, str]:
    from cryptography.exceptions import InvalidTag  # noqa: PLC0415 - SLX1 only
    from cryptography.hazmat.primitives.asymmetric.x25519 import (  # noqa: PLC0415
        X25519PrivateKey,
        X25519PublicKey,
    )
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305  # noqa: PLC0415

    eph_raw, nonce, sealed = blob[4:36], blob[36:48], blob[48:]
    private = X25519PrivateKey.from_private_bytes(node_key)
    node_raw = private.public_key().public_bytes_raw()
    key = _hkdf(private.exchange(X25519PublicKey.from_public_bytes(eph_raw)), eph_raw, node_raw)
    try:
        body = ChaCha20Poly1305(key).decrypt(nonce, sealed, _aad(cluster, user))
    except InvalidTag as exc:
        raise _refused(user) from exc
    return _variables(json.loads(body))
